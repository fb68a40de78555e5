// NumPy .npy reader and writer (little-endian, C order, no object arrays).
#include <cstring>
#include <regex>

#include "frontend/onnx_tensor.h"
#include "support/checked_int.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera {

namespace {
struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"|i1", DType::I8},  {"<i2", DType::I16},
    {"<i4", DType::I32}, {"<i8", DType::I64}, {"|u1", DType::U8},  {"<u2", DType::U16}, {"<u4", DType::U32},
    {"<u8", DType::U64}, {"|b1", DType::Bool},
};
// The dims of a .npy header's shape tuple ("1, 3, 224, 224", "5,", ""): every
// entry a non-negative integer, or an error naming the file.
Dims npy_shape(const std::string& tuple, const std::string& path) {
  Dims dims;
  std::string_view rest = tuple;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty() && rest.find_first_not_of(' ') == std::string_view::npos && !dims.empty()) break;  // "5,"
    std::optional<int64_t> d = parse_int64(item);
    TESSERA_CHECK(d && *d >= 0, path, ": .npy shape (", tuple, ") has dimension '", item,
                  "', which is not a non-negative integer");
    dims.push_back(*d);
  }
  return dims;
}

}  // namespace

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

Tensor parse_npy(const std::string& b, const std::string& path) {
  TESSERA_CHECK(b.size() >= 10 && b.compare(0, 6, "\x93NUMPY") == 0, path, ": not a .npy file");
  int major = static_cast<unsigned char>(b[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(b[8]) | (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    hstart = 10;
  } else {
    TESSERA_CHECK(b.size() >= 12, path, ": truncated .npy header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    hstart = 12;
  }
  TESSERA_CHECK(hstart + hlen <= b.size(), path, ": truncated .npy header");
  std::string header = b.substr(hstart, hlen);
  std::smatch m;
  TESSERA_CHECK(std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'")), path, ": .npy header has no descr");
  std::string descr = m[1];
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  DType dt = DType::Undefined;
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) dt = t.dtype;
  TESSERA_CHECK(dt != DType::Undefined, path, ": unsupported .npy dtype '", descr, "'");
  TESSERA_CHECK(header.find("'fortran_order': False") != std::string::npos, path,
                ": Fortran-ordered .npy files are not supported");
  TESSERA_CHECK(std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")), path, ": .npy header has no shape");
  Dims dims = npy_shape(m[1], path);
  size_t off = hstart + hlen;
  // The data's size is checked before allocating: a header cannot ask for
  // more memory than the file holds.
  int64_t need = 0;
  try {
    need = numel_of(dims) * static_cast<int64_t>(dtype_size(dt));  // numel_of bounds it to 2^40
  } catch (const Error& e) {
    TESSERA_FAIL(path, ": ", e.what());
  }
  TESSERA_CHECK(b.size() - off >= static_cast<uint64_t>(need), path, ": .npy data is truncated (", b.size() - off,
                " of ", need, " bytes for shape ", dims_to_string(dims), ")");
  Tensor t(dt, dims);
  if (t.nbytes()) std::memcpy(t.raw(), b.data() + off, t.nbytes());
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  for (const auto& k : kNpyTypes)
    if (k.dtype == t.dtype()) descr = k.descr;
  TESSERA_CHECK(descr, "cannot write element type ", dtype_name(t.dtype()), " to .npy");
  std::string shape;
  for (int64_t d : t.dims()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 1);
  if (t.rank() > 1) shape.pop_back();
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  write_file(path, out);
}

}  // namespace tessera
