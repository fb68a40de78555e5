// Element types. The numeric values follow ONNX's TensorProto.DataType so the
// importer and exporter convert by a plain cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tessera {

enum class DType : int32_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
};

// Bytes per element (0 for Undefined and String, which has no fixed width).
size_t dtype_size(DType t);
// Short lower-case name: "f32", "i64", "bool" ...
std::string_view dtype_name(DType t);
// Parses a name produced by dtype_name; returns Undefined when unknown.
DType dtype_from_name(std::string_view name);
// True when the ONNX data-type code is one Tessera represents.
bool dtype_supported(int32_t onnx_code);
// ONNX's name for any TensorProto data-type code, including the ones Tessera
// does not represent (FLOAT8E4M3FN, INT4, COMPLEX64 ...).
std::string onnx_type_name(int32_t onnx_code);
bool is_float(DType t);    // f16, bf16, f32, f64
bool is_integer(DType t);  // signed or unsigned integers (not bool)
bool is_signed(DType t);   // signed integers and floats

// IEEE half and bfloat16 stored as raw bits; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f);
  operator float() const;
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;
};

// Maps a C++ element type to its DType.
template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::F32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::F64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::F16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BF16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::I8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::I16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::I32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::I64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::U8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::U16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::U32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::U64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };

}  // namespace tessera
