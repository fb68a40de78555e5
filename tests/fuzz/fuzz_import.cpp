// libFuzzer target: every untrusted file format Tessera reads must turn any
// byte string into either a result or a tessera::Error — never a crash, hang,
// huge allocation or sanitizer report. The input's first bytes pick the
// format, so one corpus seeds them all:
//   "\x93NUMPY"  a .npy tensor file;
//   "TSRA"       a compiled-model artifact (.tsr): the container, then its
//                model (ONNX import, its weights given from their sections
//                as the loader gives them), saved input values and packed
//                weights (TensorProtos), and every kernel's machine code —
//                checked (codegen/llvm/object_check.h), never linked or run:
//                the fuzzer executes no code from its inputs;
//   "\x7fELF"    a kernel's object file alone (regressions/kernel_object.o,
//                entry tessera_Conv_0), checked: an artifact's checksums
//                keep most mutations from reaching its objects;
//   otherwise    an ONNX model, imported next to a folder holding
//                weights.bin, so external-data fields are read for real.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>

#include <onnx/onnx_pb.h>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "codegen/llvm/object_check.h"
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

void fuzz_onnx(const std::string& bytes, const tessera::ImportOptions& opts = {}) {
  auto g = tessera::import_onnx_bytes(bytes, model_dir(), opts);
  tessera::verify_graph(*g);
  // The load pipeline folds what import leaves: fuzz the folder too.
  tessera::fold_constants(*g);
  // A graph that imported must also export and re-import.
  auto again = tessera::import_onnx_bytes(tessera::export_onnx_bytes(*g), model_dir());
  (void)again;
}

// The value of `key` in a kernel description's lines ("symbol tessera_x").
std::string field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

// A task's saved machine code ("task.<key>.kernel" describes it, ".kernel.o"
// and ".prepack.o" hold it), checked as the loader checks it before linking,
// which the fuzzer never does.
void fuzz_kernel(const tessera::Artifact& a, const std::string& name, const std::string& text) {
  const std::string base = name.substr(0, name.size() - std::string(".kernel").size());
  for (const auto& [object, key] : {std::pair<std::string, std::string>{".kernel.o", "symbol"},
                                    {".prepack.o", "prepack_symbol"}}) {
    auto it = a.sections.find(base + object);
    if (it != a.sections.end()) (void)tessera::codegen::check_object(it->second, field(text, key));
  }
}

// The parts of an artifact the loader reads before compiling anything.
void fuzz_artifact(const std::string& bytes) {
  tessera::Artifact a = tessera::parse_artifact(bytes, "fuzz.tsr");
  tessera::ImportOptions weights;  // the graph's weights: views of their sections, as loading gives them
  for (const auto& [name, data] : a.sections)
    if (name.rfind("weight.", 0) == 0) weights.initializer_data.emplace(name.substr(7), data);
  for (const auto& [name, data] : a.sections) {
    if (name == "model.onnx") {
      try {
        fuzz_onnx(data, weights);
      } catch (const tessera::Error&) {
      }
    } else if (name.rfind("task.", 0) == 0 && name.size() > 7 && name.compare(name.size() - 7, 7, ".kernel") == 0) {
      fuzz_kernel(a, name, data);
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
    else if (bytes.rfind("\x7f" "ELF", 0) == 0) (void)tessera::codegen::check_object(bytes, "tessera_Conv_0");
    else fuzz_onnx(bytes);
  } catch (const tessera::Error&) {
    // Expected for malformed input.
  }
  return 0;
}
