// Sessions for the C API and the Python module (session.h).
#include "capi/session.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "support/error.h"

namespace tessera::capi {

namespace {

// A private temporary file holding bytes, removed when this goes.
class TempFile {
 public:
  TempFile(const void* data, size_t size) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/tessera-model-XXXXXX";
    int fd = ::mkstemp(path_.data());
    TESSERA_CHECK(fd >= 0, "cannot create a temporary file for the model bytes in ", path_, ": ", std::strerror(errno));
    const char* p = static_cast<const char*>(data);
    size_t left = size;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::close(fd);
        ::unlink(path_.c_str());
        TESSERA_FAIL("cannot write the model bytes to ", path_, ": ", std::strerror(err));
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string names_of(const std::vector<ValueInfo>& values) {
  std::string s;
  for (const ValueInfo& v : values) s += (s.empty() ? "'" : ", '") + v.name + "'";
  return s.empty() ? "none" : s;
}

bool static_signature(const CompiledModel& m) {
  for (const TensorInfo& i : m.inputs()) {
    if (!i.rank_known) return false;
    for (int64_t d : i.dims)
      if (d < 0) return false;
  }
  return true;
}

}  // namespace

CompileOptions SessionOptions::compile_options() const {
  CompileOptions o;
  TESSERA_CHECK(threads >= 0, "threads must be at least 0 (0: all cores), got ", threads);
  o.threads = threads;
  o.isa = isa;
  o.fusion = fusion;
  o.pet = pet;
  o.records = records;
  o.input_shapes = shapes;
  return o;
}

std::string ort_type_name(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::U16: return "uint16";
    case DType::U32: return "uint32";
    case DType::U64: return "uint64";
    case DType::Bool: return "bool";
    case DType::String: return "string";
    case DType::Undefined: break;
  }
  return "undefined";
}

std::string ort_value_type(const ValueInfo& v) { return "tensor(" + ort_type_name(v.dtype) + ")"; }

Session::Session(CompiledModel model) : model_(std::move(model)) {
  inputs_ = model_.inputs();
  outputs_ = model_.outputs();
}

std::unique_ptr<Session> Session::open(const std::string& path, const SessionOptions& options) {
  CompileOptions o = options.compile_options();
  if (CompiledModel::is_artifact(path)) {
    TESSERA_CHECK(options.shapes.empty(), path, ": shapes cannot change a compiled artifact's shapes; give them to compile");
    return std::unique_ptr<Session>(new Session(CompiledModel::load(path, o)));
  }
  return std::unique_ptr<Session>(new Session(CompiledModel::compile(path, o)));
}

std::unique_ptr<Session> Session::open_bytes(const void* data, size_t size, const SessionOptions& options) {
  TESSERA_CHECK(data != nullptr || size == 0, "model bytes: null data");
  TESSERA_CHECK(size > 0, "model bytes: empty (0 bytes is no ONNX model or artifact)");
  TempFile file(data, size);
  return open(file.path(), options);
}

size_t Session::input_index(const std::string& name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name) return i;
  TESSERA_FAIL("model '", model_.name(), "' has no input '", name, "' (its inputs: ", names_of(inputs_), ")");
}

size_t Session::output_index(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name) return i;
  TESSERA_FAIL("model '", model_.name(), "' has no output '", name, "' (its outputs: ", names_of(outputs_), ")");
}

std::vector<Tensor> Session::order_inputs(const std::vector<std::pair<std::string, Tensor>>& named) const {
  std::vector<Tensor> ordered(inputs_.size());
  std::vector<bool> given(inputs_.size(), false);
  for (const auto& [name, t] : named) {
    size_t i = input_index(name);
    TESSERA_CHECK(!given[i], "input '", name, "' is given twice");
    given[i] = true;
    ordered[i] = t;
  }
  for (size_t i = 0; i < inputs_.size(); ++i)
    TESSERA_CHECK(given[i], "input '", inputs_[i].name, "' of model '", model_.name(), "' is missing (its inputs: ",
                  names_of(inputs_), ")");
  return ordered;
}

std::vector<Tensor> Session::run(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<Tensor> ins = order_inputs(named);
  std::vector<Tensor> outs = model_.run(ins);
  for (Tensor& o : outs) {
    if (!o.defined() || o.nbytes() == 0) continue;
    const char* p = static_cast<const char*>(o.raw());
    for (const Tensor& in : ins) {
      const char* b = static_cast<const char*>(in.raw());
      if (b && p >= b && p < b + in.nbytes()) {
        o = o.clone();
        break;
      }
    }
  }
  return outs;
}

void compile_to_file(const std::string& model, const std::string& out_path, const SessionOptions& options) {
  TESSERA_CHECK(!CompiledModel::is_artifact(model), model, " is already a compiled artifact");
  CompiledModel m = CompiledModel::compile(model, options.compile_options());
  // Kernels are compiled for concrete shapes: a static signature now (on
  // seeded inputs, as `tessera compile` does), a dynamic one on first run.
  if (static_signature(m)) m.prepare(m.random_inputs(0));
  m.save(out_path);
}

void compile_bytes_to_file(const void* data, size_t size, const std::string& out_path, const SessionOptions& options) {
  TESSERA_CHECK(data != nullptr && size > 0, "model bytes: empty (0 bytes is no ONNX model)");
  TempFile file(data, size);
  compile_to_file(file.path(), out_path, options);
}

}  // namespace tessera::capi
