// A session: a compiled model opened the way the C API and the Python module
// open one (an ONNX file, "zoo:NAME", a .tsr artifact, or the bytes of an
// ONNX model or an artifact), with its signature as those APIs show it —
// dynamic dimensions by name, ONNX Runtime's type names — and runs that take
// inputs by name. The C API (c_api.cpp) and the Python module
// (python/module.cpp) are thin layers over this class, so both behave alike.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/runtime.h"

namespace tessera::capi {

// What a session is opened with (the subset of CompileOptions these APIs offer).
struct SessionOptions {
  int threads = 0;          // 0: all cores (an artifact: what it was compiled with)
  std::string isa;          // "" (host / the artifact's), "avx2", "avx512", "generic"
  bool fusion = true;
  bool pet = false;
  std::string records;      // a tuning records file, "" for none
  std::map<std::string, Dims> shapes;  // fixes dynamic input shapes (not for artifacts)
  CompileOptions compile_options() const;
};

// A model input or output as the public APIs show it.
using ValueInfo = TensorInfo;

// ONNX Runtime's element-type name: "float", "int64", "float16", "bool" ...
std::string ort_type_name(DType t);
// ONNX Runtime's type of a value: "tensor(float)".
std::string ort_value_type(const ValueInfo& v);

class Session {
 public:
  // An ONNX file, "zoo:NAME" or a .tsr artifact (recognised by its first bytes).
  static std::unique_ptr<Session> open(const std::string& path, const SessionOptions& options);
  // The bytes of an ONNX model or of a .tsr artifact (written to a private
  // temporary file, read, and removed; an ONNX model with external data needs a path).
  static std::unique_ptr<Session> open_bytes(const void* data, size_t size, const SessionOptions& options);

  CompiledModel& model() { return model_; }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  // Index of the named input / output; throws naming the model's ones when unknown.
  size_t input_index(const std::string& name) const;
  size_t output_index(const std::string& name) const;

  // Orders named inputs as the model's inputs; throws on an unknown, repeated
  // or missing name.
  std::vector<Tensor> order_inputs(const std::vector<std::pair<std::string, Tensor>>& named) const;
  // Runs on named inputs (any order). Outputs whose buffer is one of the
  // inputs' (a model passing an input through) are copied, so no output
  // refers to the caller's memory. Safe from several threads at once.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& named);

 private:
  explicit Session(CompiledModel model);
  CompiledModel model_;
  std::vector<ValueInfo> inputs_, outputs_;
};

// Compiles a model (path, "zoo:NAME"), and for a static signature (after
// options.shapes) its kernels on seeded inputs, and writes the artifact.
void compile_to_file(const std::string& model, const std::string& out_path, const SessionOptions& options);
// The same for the bytes of an ONNX model.
void compile_bytes_to_file(const void* data, size_t size, const std::string& out_path, const SessionOptions& options);

}  // namespace tessera::capi
