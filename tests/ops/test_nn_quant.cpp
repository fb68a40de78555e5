// Quantized products: ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor u8(Dims d, std::vector<uint8_t> v) { return Tensor::from<uint8_t>(std::move(d), v); }
Tensor i8(Dims d, std::vector<int8_t> v) { return Tensor::from<int8_t>(std::move(d), v); }
std::vector<int64_t> ints_of(const Tensor& t) { return t.to_int_vector(); }
}  // namespace

TEST(NnQuant, MatMulIntegerSpecExample) {
  Tensor a = u8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  Tensor b = u8({3, 2}, {1, 4, 2, 5, 3, 6});
  auto out = run_op({.op = "MatMulInteger", .inputs = {a, b, u8({}, {12}), u8({}, {0})}});
  EXPECT_EQ(out[0].dtype(), DType::I32);
  EXPECT_EQ(ints_of(out[0]), (std::vector<int64_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
}

TEST(NnQuant, QLinearMatMulRoundsHalfToEvenAndSaturates) {
  auto out = run_op({.op = "QLinearMatMul",
                     .inputs = {u8({2, 1}, {5, 7}), f32({}, {1}), u8({}, {0}), u8({1, 1}, {1}), f32({}, {1}),
                                u8({}, {0}), f32({}, {2}), u8({}, {0})}});
  EXPECT_EQ(ints_of(out[0]), (std::vector<int64_t>{2, 4}));  // 2.5 -> 2, 3.5 -> 4
  auto sat = run_op({.op = "QLinearMatMul",
                     .inputs = {i8({1, 1}, {127}), f32({}, {1}), i8({}, {0}), i8({1, 1}, {127}), f32({}, {1}),
                                i8({}, {0}), f32({}, {1}), i8({}, {0})}});
  EXPECT_EQ(sat[0].dtype(), DType::I8);
  EXPECT_EQ(ints_of(sat[0]), (std::vector<int64_t>{127}));
  auto zp = run_op({.op = "QLinearMatMul",
                    .inputs = {u8({1, 2}, {2, 4}), f32({}, {0.5f}), u8({}, {0}), u8({2, 1}, {1, 3}), f32({}, {1}),
                               u8({}, {1}), f32({}, {2}), u8({}, {10})}});
  EXPECT_EQ(ints_of(zp[0]), (std::vector<int64_t>{12}));  // (2*0 + 4*2) * 0.5 / 2 + 10
}

TEST(NnQuant, ConvIntegerSpecExample) {
  Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  auto out = run_op({.op = "ConvInteger", .inputs = {x, w, u8({}, {1})}});
  EXPECT_EQ(out[0].dtype(), DType::I32);
  EXPECT_EQ(ints_of(out[0]), (std::vector<int64_t>{12, 16, 24, 28}));
}

TEST(NnQuant, QLinearConvWithBias) {
  Tensor x = u8({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = run_op({.op = "QLinearConv",
                     .inputs = {x, f32({}, {1}), u8({}, {0}), u8({1, 1, 1, 1}, {2}), f32({1}, {0.5f}), u8({1}, {0}),
                                f32({}, {1}), u8({}, {3}), Tensor::from<int32_t>({1}, {1})}});
  // (2x + 1) * 0.5 = 1.5, 2.5, 3.5, 4.5 -> 2, 2, 4, 4 (half to even) + 3
  EXPECT_EQ(ints_of(out[0]), (std::vector<int64_t>{5, 5, 7, 7}));
}

TEST(NnQuant, RejectsFloatInputs) {
  EXPECT_THROW(run_op({.op = "ConvInteger", .inputs = {f32({1, 1, 2, 2}, {1, 2, 3, 4}), u8({1, 1, 1, 1}, {1})}}), Error);
  EXPECT_THROW(run_op({.op = "MatMulInteger", .inputs = {u8({1, 2}, {1, 2}), u8({3, 1}, {1, 2, 3})}}), Error);
}

}  // namespace tessera::testing
