// libFuzzer target: every untrusted file format Tessera reads must turn any
// byte string into either a result or a tessera::Error — never a crash, hang,
// huge allocation or sanitizer report. The input's first bytes pick the
// format, so one corpus seeds them all:
//   "\x93NUMPY"  a .npy tensor file;
//   "TSRA"       a compiled-model artifact (.tsr): the container, then its
//                model (ONNX import), saved input values and packed weights
//                (TensorProtos);
//   otherwise    an ONNX model, imported next to a folder holding
//                weights.bin, so external-data fields are read for real.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "opt/passes.h"
#include "support/artifact.h"
#include "support/error.h"
#include "support/file_util.h"

namespace {

// Sizes the fuzzer may ask for stay below libFuzzer's malloc limit (4 GiB):
// Tessera refuses larger tensors with an Error (support/memory.h).
[[maybe_unused]] const bool kLimited = setenv("TESSERA_MEMORY_LIMIT", "1073741824", 1) == 0;

// A folder with a 4 KiB weights.bin for external data, made once.
const std::string& model_dir() {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("tessera_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::string blob(4096, '\0');
    for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 37);
    tessera::write_file((d / "weights.bin").string(), blob);
    return d.string();
  }();
  return dir;
}

void fuzz_onnx(const std::string& bytes) {
  auto g = tessera::import_onnx_bytes(bytes, model_dir());
  tessera::verify_graph(*g);
  // The load pipeline folds what import leaves: fuzz the folder too.
  tessera::fold_constants(*g);
  // A graph that imported must also export and re-import.
  auto again = tessera::import_onnx_bytes(tessera::export_onnx_bytes(*g), model_dir());
  (void)again;
}

// The parts of an artifact the loader reads before compiling anything.
void fuzz_artifact(const std::string& bytes) {
  tessera::Artifact a = tessera::parse_artifact(bytes, "fuzz.tsr");
  for (const auto& [name, data] : a.sections) {
    if (name == "model.onnx") {
      try {
        fuzz_onnx(data);
      } catch (const tessera::Error&) {
      }
    } else if (name.find(".packed.") != std::string::npos || name.find(".value.") != std::string::npos) {
      onnx::TensorProto p;
      if (p.ParseFromString(data)) {
        try {
          tessera::tensor_from_proto(p, "", name);
        } catch (const tessera::Error&) {
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (bytes.rfind("\x93NUMPY", 0) == 0) tessera::parse_npy(bytes, "fuzz.npy");
    else if (bytes.rfind("TSRA", 0) == 0) fuzz_artifact(bytes);
    else fuzz_onnx(bytes);
  } catch (const tessera::Error&) {
    // Expected for malformed input.
  }
  return 0;
}
