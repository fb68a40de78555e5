// BitCast on hand-computed IEEE bit patterns.
#include <limits>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute I(int64_t v) { return Attribute::of_int(v); }
Tensor bitcast(const Tensor& x, DType to) {
  return run_op({.op = "BitCast", .inputs = {x}, .attrs = {{"to", I(static_cast<int64_t>(to))}}, .opset = 26})[0];
}
}  // namespace

TEST(BitCast, Float32ToInt32KeepsBitsAndShape) {
  // 1.0f = 0x3F800000, -2.0f = 0xC0000000, 0.0f = 0.
  Tensor y = bitcast(f32({2, 3}, {1.0f, -2.0f, 0.0f, 1.0f, 1.0f, 1.0f}), DType::I32);
  ASSERT_EQ(y.dtype(), DType::I32);
  ASSERT_EQ(y.dims(), Dims({2, 3}));
  EXPECT_EQ(y.data<int32_t>()[0], 0x3F800000);
  EXPECT_EQ(y.data<int32_t>()[1], static_cast<int32_t>(0xC0000000u));
  EXPECT_EQ(y.data<int32_t>()[2], 0);
}

TEST(BitCast, Int32ToFloat32AndScalar) {
  Tensor y = bitcast(Tensor::scalar<int32_t>(0x40400000), DType::F32);  // 3.0f
  ASSERT_EQ(y.rank(), 0);
  EXPECT_EQ(y.data<float>()[0], 3.0f);
}

TEST(BitCast, SixtyFourBitTypes) {
  // 1.0 = 0x3FF0000000000000.
  Tensor y = bitcast(Tensor::from<double>({1}, {1.0}), DType::I64);
  EXPECT_EQ(y.data<int64_t>()[0], int64_t{0x3FF0000000000000});
  Tensor z = bitcast(Tensor::from<int64_t>({1}, {int64_t{0x4000000000000000}}), DType::F64);
  EXPECT_EQ(z.data<double>()[0], 2.0);
  Tensor u = bitcast(Tensor::from<uint64_t>({1}, {~uint64_t{0}}), DType::I64);
  EXPECT_EQ(u.data<int64_t>()[0], -1);
}

TEST(BitCast, NarrowIntegerAndHalfTypes) {
  EXPECT_EQ(bitcast(Tensor::from<int8_t>({2}, {-1, 5}), DType::U8).data<uint8_t>()[0], 255);
  EXPECT_EQ(bitcast(Tensor::from<uint16_t>({1}, {0xFFFF}), DType::I16).data<int16_t>()[0], -1);
  EXPECT_EQ(bitcast(Tensor::from<uint32_t>({1}, {0x80000000u}), DType::I32).data<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  // Half 1.0 = 0x3C00; bfloat16 1.0 = 0x3F80.
  EXPECT_EQ(bitcast(Tensor::from<Half>({1}, {Half(1.0f)}), DType::U16).data<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(bitcast(Tensor::from<BFloat16>({1}, {BFloat16(1.0f)}), DType::I16).data<int16_t>()[0], 0x3F80);
  Tensor h = bitcast(Tensor::from<uint16_t>({1}, {0x4000}), DType::F16);
  EXPECT_EQ(static_cast<float>(h.data<Half>()[0]), 2.0f);
}

TEST(BitCast, BoolAndBytes) {
  Tensor y = bitcast(Tensor::from<bool>({3}, {true, false, true}), DType::U8);
  EXPECT_EQ(y.data<uint8_t>()[0], 1);
  EXPECT_EQ(y.data<uint8_t>()[1], 0);
  Tensor b = bitcast(Tensor::from<uint8_t>({2}, {0, 1}), DType::Bool);
  EXPECT_FALSE(b.data<bool>()[0]);
  EXPECT_TRUE(b.data<bool>()[1]);
  // Byte 2 is no valid bool.
  EXPECT_THROW(bitcast(Tensor::from<uint8_t>({1}, {2}), DType::Bool), tessera::Error);
}

TEST(BitCast, Errors) {
  // Widths differ: f32 (32 bits) -> i64 (64 bits).
  EXPECT_THROW(bitcast(f32({1}, {1}), DType::I64), tessera::Error);
  // float8e4m3fn (17) is not represented.
  EXPECT_THROW(run_op({.op = "BitCast", .inputs = {Tensor::from<uint8_t>({1}, {0})}, .attrs = {{"to", I(17)}},
                       .opset = 26}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "BitCast", .inputs = {f32({1}, {1})}, .opset = 26}), tessera::Error);  // no 'to'
}

}  // namespace tessera::testing
