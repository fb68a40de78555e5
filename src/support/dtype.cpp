// DType facts and half/bfloat16 conversions.
#include "tessera/dtype.h"

#include <array>
#include <cmath>

namespace tessera {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 15> kDTypes{{
    {DType::Undefined, "undefined", 0}, {DType::F32, "f32", 4},  {DType::U8, "u8", 1},
    {DType::I8, "i8", 1},               {DType::U16, "u16", 2},  {DType::I16, "i16", 2},
    {DType::I32, "i32", 4},             {DType::I64, "i64", 8},  {DType::String, "string", 0},
    {DType::Bool, "bool", 1},           {DType::F16, "f16", 2},  {DType::F64, "f64", 8},
    {DType::U32, "u32", 4},             {DType::U64, "u64", 8},  {DType::BF16, "bf16", 2},
}};
const DTypeInfo* find(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return &d;
  return nullptr;
}
}  // namespace

size_t dtype_size(DType t) {
  const DTypeInfo* d = find(t);
  return d ? d->size : 0;
}

std::string_view dtype_name(DType t) {
  const DTypeInfo* d = find(t);
  return d ? d->name : "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  if (name == "float" || name == "float32") return DType::F32;
  if (name == "double" || name == "float64") return DType::F64;
  if (name == "int64") return DType::I64;
  if (name == "int32") return DType::I32;
  return DType::Undefined;
}

bool dtype_supported(int32_t code) {
  const DTypeInfo* d = find(static_cast<DType>(code));
  return d != nullptr && code != 0;
}

std::string onnx_type_name(int32_t code) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (code >= 0 && code < static_cast<int32_t>(std::size(names))) return names[code];
  return "type code " + std::to_string(code);
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}
bool is_integer(DType t) {
  switch (t) {
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::U8: case DType::U16: case DType::U32: case DType::U64:
      return true;
    default:
      return false;
  }
}
bool is_signed(DType t) {
  return is_float(t) || t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}

// IEEE 754 binary16 <-> binary32, round to nearest even.
Half::Half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {  // inf / nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    return;
  }
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31) {
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (e <= 0) {  // subnormal or zero
    if (e < -10) {
      bits = static_cast<uint16_t>(sign);
      return;
    }
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    bits = static_cast<uint16_t>(sign | h);
    return;
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: fine
  bits = static_cast<uint16_t>(sign | h);
}

Half::operator float() const {
  uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

BFloat16::BFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  bits = static_cast<uint16_t>(x >> 16);
}

BFloat16::operator float() const {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace tessera
