// TensorProto conversion (all storage fields, external data) and .pb files.
#include "frontend/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/dtype_dispatch.h"
#include "support/checked_int.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera {

namespace {

// The value of an external-data field ("offset", "length"): a non-negative
// decimal integer, or an error naming the tensor and the field.
int64_t external_field(const std::string& value, const std::string& key, const std::string& what) {
  std::optional<int64_t> v = parse_int64(value);
  TESSERA_CHECK(v && *v >= 0, "tensor '", what, "': external data ", key, " '", value,
                "' is not a non-negative integer");
  return *v;
}

// Where a tensor's external data is: a file next to the model, and a byte
// range inside it (checked against the file's size).
struct ExternalData {
  std::filesystem::path file;
  int64_t offset = 0, length = 0;
};

ExternalData locate_external(const onnx::TensorProto& p, const std::string& base_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;  // absent: to the end of the file
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = external_field(kv.value(), "offset", what);
    if (kv.key() == "length") length = external_field(kv.value(), "length", what);
  }
  TESSERA_CHECK(!location.empty(), "tensor '", what, "': external data has no location");
  std::filesystem::path rel(location);
  TESSERA_CHECK(rel.is_relative() && location.find("..") == std::string::npos, "tensor '", what,
                "': external data location '", location, "' must be a relative path inside the model's folder");
  std::filesystem::path full = std::filesystem::path(base_dir) / rel;
  std::error_code ec;
  TESSERA_CHECK(!std::filesystem::is_directory(full, ec), "tensor '", what, "': external data location ",
                full.string(), " is a directory");
  std::ifstream f(full, std::ios::binary);
  TESSERA_CHECK(f, "tensor '", what, "': cannot open external data file ", full.string());
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  // Compared without forming offset + length, which can overflow.
  TESSERA_CHECK(offset <= size && length.value_or(0) <= size - offset, "tensor '", what,
                "': external data at offset ", offset, length ? " of length " + std::to_string(*length) : "",
                " exceeds file ", full.string(), " of ", size, " bytes");
  return {full, offset, length.value_or(size - offset)};
}

// Reads the external data straight into `into` (e.length bytes).
void read_external(const ExternalData& e, void* into, const std::string& what) {
  std::ifstream f(e.file, std::ios::binary);
  TESSERA_CHECK(f, "tensor '", what, "': cannot open external data file ", e.file.string());
  f.seekg(e.offset);
  f.read(static_cast<char*>(into), e.length);
  TESSERA_CHECK(f.gcount() == e.length, "tensor '", what, "': cannot read external data file ", e.file.string());
}

template <class T, class Field>
void copy_field(Tensor& t, const Field& field, const std::string& what) {
  TESSERA_CHECK(static_cast<int64_t>(field.size()) == t.numel(), "tensor '", what, "' has ", field.size(),
                " values for shape ", dims_to_string(t.dims()));
  T* out = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      out[i].bits = static_cast<uint16_t>(field.Get(static_cast<int>(i)));
    } else {
      out[i] = static_cast<T>(field.Get(static_cast<int>(i)));
    }
  }
}

// The proto's dims, each checked in [0, 2^40).
Dims checked_dims(const onnx::TensorProto& p, const std::string& what) {
  Dims dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    TESSERA_CHECK(d >= 0 && d < (int64_t{1} << 40), "tensor '", what, "' has invalid dimension ", d);
  return dims;
}

// Elements of `dims`, bounded to 2^40, so n * element size cannot overflow.
int64_t checked_numel(const Dims& dims, const std::string& what) {
  try {
    return numel_of(dims);
  } catch (const Error& e) {
    TESSERA_FAIL("tensor '", what, "': ", e.what());
  }
}

}  // namespace

Tensor tensor_over_bytes(const onnx::TensorProto& p, std::string_view data, std::shared_ptr<void> owner,
                         const std::string& what) {
  int32_t code = p.data_type();
  TESSERA_CHECK(dtype_supported(code) && static_cast<DType>(code) != DType::String, "tensor '", what,
                "' has element type ", onnx_type_name(code), " which cannot be held as raw bytes");
  TESSERA_CHECK(!p.has_raw_data() && p.data_location() != onnx::TensorProto_DataLocation_EXTERNAL &&
                    p.float_data_size() == 0 && p.double_data_size() == 0 && p.int32_data_size() == 0 &&
                    p.int64_data_size() == 0 && p.uint64_data_size() == 0,
                "tensor '", what, "' has data of its own besides the bytes given for it");
  DType dt = static_cast<DType>(code);
  Dims dims = checked_dims(p, what);
  const int64_t n = checked_numel(dims, what);
  uint64_t need = static_cast<uint64_t>(n) * dtype_size(dt);
  TESSERA_CHECK(data.size() == need, "tensor '", what, "' has ", data.size(), " bytes of data but shape ",
                dims_to_string(dims), " of ", dtype_name(dt), " needs ", need);
  if (reinterpret_cast<uintptr_t>(data.data()) % dtype_size(dt) == 0)
    return Tensor::view(dt, std::move(dims), const_cast<char*>(data.data()), std::move(owner));
  Tensor t(dt, std::move(dims));
  if (t.nbytes()) std::memcpy(t.raw(), data.data(), data.size());
  return t;
}

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir, const std::string& what) {
  int32_t code = p.data_type();
  TESSERA_CHECK(dtype_supported(code), "tensor '", what, "' has element type ",
                onnx_type_name(code),
                " which Tessera does not support");
  DType dt = static_cast<DType>(code);
  Dims dims = checked_dims(p, what);
  const int64_t n = checked_numel(dims, what);
  // Validate the data's size before allocating, so a corrupt header cannot
  // ask for terabytes.
  if (dt == DType::String) {
    TESSERA_CHECK(static_cast<int64_t>(p.string_data_size()) == n, "tensor '", what, "' has ",
                  p.string_data_size(), " strings for shape ", dims_to_string(dims));
    Tensor t(dt, dims);
    for (int i = 0; i < p.string_data_size(); ++i) t.strings()[static_cast<size_t>(i)] = p.string_data(i);
    return t;
  }
  bool external = p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
  if (external || p.has_raw_data()) {
    // Straight into the tensor: no copy of the bytes on the way.
    ExternalData e = external ? locate_external(p, base_dir, what) : ExternalData{};
    uint64_t have = external ? static_cast<uint64_t>(e.length) : p.raw_data().size();
    uint64_t need = static_cast<uint64_t>(n) * dtype_size(dt);
    TESSERA_CHECK(have == need, "tensor '", what, "' has ", have, " bytes of data but shape ",
                  dims_to_string(dims), " of ", dtype_name(dt), " needs ", need);
    Tensor t(dt, dims);
    if (t.nbytes() == 0) return t;
    if (external) read_external(e, t.raw(), what);
    else std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  int64_t have = 0;
  switch (dt) {
    case DType::F32: have = p.float_data_size(); break;
    case DType::F64: have = p.double_data_size(); break;
    case DType::I64: have = p.int64_data_size(); break;
    case DType::U32: case DType::U64: have = p.uint64_data_size(); break;
    default: have = p.int32_data_size(); break;
  }
  TESSERA_CHECK(have == n, "tensor '", what, "' has ", have, " values for shape ", dims_to_string(dims));
  Tensor t(dt, dims);
  if (t.numel() == 0) return t;
  switch (dt) {
    case DType::F32: copy_field<float>(t, p.float_data(), what); break;
    case DType::F64: copy_field<double>(t, p.double_data(), what); break;
    case DType::I64: copy_field<int64_t>(t, p.int64_data(), what); break;
    case DType::U32: copy_field<uint32_t>(t, p.uint64_data(), what); break;
    case DType::U64: copy_field<uint64_t>(t, p.uint64_data(), what); break;
    case DType::I32: copy_field<int32_t>(t, p.int32_data(), what); break;
    case DType::I16: copy_field<int16_t>(t, p.int32_data(), what); break;
    case DType::I8: copy_field<int8_t>(t, p.int32_data(), what); break;
    case DType::U16: copy_field<uint16_t>(t, p.int32_data(), what); break;
    case DType::U8: copy_field<uint8_t>(t, p.int32_data(), what); break;
    case DType::Bool: copy_field<bool>(t, p.int32_data(), what); break;
    case DType::F16: copy_field<Half>(t, p.int32_data(), what); break;
    case DType::BF16: copy_field<BFloat16>(t, p.int32_data(), what); break;
    default: TESSERA_FAIL("tensor '", what, "': unsupported element type");
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p) {
  p.Clear();
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p.add_dims(d);
  if (t.dtype() == DType::String) {
    for (const auto& s : t.strings()) p.add_string_data(s);
    return;
  }
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

Tensor read_tensor_pb(const std::string& path) {
  std::string bytes = read_file(path);
  onnx::TensorProto p;
  TESSERA_CHECK(p.ParseFromString(bytes), path, ": not a valid TensorProto file (malformed or truncated)");
  return tensor_from_proto(p, std::filesystem::path(path).parent_path().string(), path);
}

void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, p);
  std::string bytes;
  TESSERA_CHECK(p.SerializeToString(&bytes), "cannot serialize tensor '", name, "'");
  write_file(path, bytes);
}

Tensor read_tensor_file(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".npy") return read_npy(path);
  return read_tensor_pb(path);
}

}  // namespace tessera
