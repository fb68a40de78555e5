// libFuzzer target: the ONNX importer must turn any byte string into either a
// verified graph or a tessera::Error — never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "opt/passes.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto g = tessera::import_onnx_bytes(bytes, "/nonexistent-fuzz-dir");
    tessera::verify_graph(*g);
    // The load pipeline folds what import leaves: fuzz the folder too.
    tessera::fold_constants(*g);
    // A graph that imported must also export and re-import.
    auto again = tessera::import_onnx_bytes(tessera::export_onnx_bytes(*g), "/nonexistent-fuzz-dir");
    (void)again;
  } catch (const tessera::Error&) {
    // Expected for malformed input.
  }
  return 0;
}
