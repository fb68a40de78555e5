// Unary elementwise math on hand-computed cases (constants from tables:
// e = 2.718281828, erf(1) = 0.842700793, tanh(1) = 0.761594156 ...).
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Tensor un(const std::string& op, Tensor x, AttrMap attrs = {}, int64_t opset = 18) {
  return run_op({.op = op, .inputs = {std::move(x)}, .attrs = std::move(attrs), .opset = opset})[0];
}
}  // namespace

TEST(ElementwiseUnary, AbsNegSignOnIntegers) {
  expect_near(un("Abs", t<int32_t>({3}, {-3, 0, 4})), t<int32_t>({3}, {3, 0, 4}));
  expect_near(un("Abs", t<uint8_t>({2}, {0, 200})), t<uint8_t>({2}, {0, 200}));
  expect_near(un("Abs", f32({2}, {-1.5f, 2})), f32({2}, {1.5f, 2}));
  expect_near(un("Neg", t<int8_t>({2}, {-128, 5})), t<int8_t>({2}, {-128, -5}));
  expect_near(un("Neg", f32({2}, {-1.5f, 2})), f32({2}, {1.5f, -2}));
  expect_near(un("Sign", f32({3}, {-2, 0, 3.5f})), f32({3}, {-1, 0, 1}));
  expect_near(un("Sign", i64({3}, {-7, 0, 9})), i64({3}, {-1, 0, 1}));
  EXPECT_THROW(un("Neg", t<uint8_t>({1}, {1})), Error);
}

TEST(ElementwiseUnary, Rounding) {
  expect_near(un("Ceil", f32({2}, {-1.5f, 1.2f})), f32({2}, {-1, 2}));
  expect_near(un("Floor", f32({2}, {-1.5f, 1.2f})), f32({2}, {-2, 1}));
  // Round: halves go to the even neighbour.
  expect_near(un("Round", f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f})),
              f32({7}, {0, 2, 2, 0, -2, 2, 3}));
  EXPECT_THROW(un("Floor", t<int32_t>({1}, {1})), Error);
}

TEST(ElementwiseUnary, ExpLogSqrtReciprocal) {
  expect_near(un("Reciprocal", f32({2}, {2, -4})), f32({2}, {0.5f, -0.25f}));
  expect_near(un("Sqrt", f32({2}, {4, 9})), f32({2}, {2, 3}));
  expect_near(un("Sqrt", f32({1}, {-1})), f32({1}, {NAN}));
  expect_near(un("Exp", f32({2}, {0, 1})), f32({2}, {1, 2.718281828f}));
  expect_near(un("Log", f32({3}, {1, 8, 0})), f32({3}, {0, 2.079441542f, -INFINITY}));
  expect_near(un("Exp", Tensor::from<double>({1}, {2})), Tensor::from<double>({1}, {7.38905609893065}), 1e-12);
}

TEST(ElementwiseUnary, HalfTypesRoundOnce) {
  auto h = un("Sqrt", Tensor::from<Half>({2}, {Half(4.0f), Half(2.0f)}));
  // sqrt(2) = 1.41421356 rounds to the half 1.4140625.
  expect_near(h, Tensor::from<Half>({2}, {Half(2.0f), Half(1.4140625f)}), 0, 0);
  auto b = un("Neg", Tensor::from<BFloat16>({1}, {BFloat16(3.0f)}));
  expect_near(b, Tensor::from<BFloat16>({1}, {BFloat16(-3.0f)}), 0, 0);
}

TEST(ElementwiseUnary, ErfAndTrigonometry) {
  expect_near(un("Erf", f32({3}, {0, 1, -1})), f32({3}, {0, 0.842700793f, -0.842700793f}));
  expect_near(un("Erf", t<int32_t>({2}, {0, 3})), t<int32_t>({2}, {0, 0}));  // erf(3) < 1 truncates
  expect_near(un("Sin", f32({2}, {0, 1.5707963f})), f32({2}, {0, 1}));
  expect_near(un("Cos", f32({2}, {0, 3.1415927f})), f32({2}, {1, -1}));
  expect_near(un("Tan", f32({1}, {0.78539816f})), f32({1}, {1}));
  expect_near(un("Asin", f32({2}, {0, 1})), f32({2}, {0, 1.5707963f}));
  expect_near(un("Acos", f32({2}, {1, 0})), f32({2}, {0, 1.5707963f}));
  expect_near(un("Atan", f32({2}, {0, 1})), f32({2}, {0, 0.78539816f}));
  expect_near(un("Sinh", f32({1}, {1})), f32({1}, {1.175201194f}));
  expect_near(un("Cosh", f32({1}, {1})), f32({1}, {1.543080635f}));
  expect_near(un("Tanh", f32({1}, {1})), f32({1}, {0.761594156f}));
  expect_near(un("Asinh", f32({1}, {1})), f32({1}, {0.881373587f}));
  expect_near(un("Acosh", f32({1}, {2})), f32({1}, {1.316957897f}));
  expect_near(un("Atanh", f32({1}, {0.5f})), f32({1}, {0.549306144f}));
  expect_near(un("Sigmoid", f32({3}, {0, 2, -2})), f32({3}, {0.5f, 0.880797078f, 0.119202922f}));
  expect_near(un("Sigmoid", f32({2}, {-1000, 1000})), f32({2}, {0, 1}));
}

TEST(ElementwiseUnary, IsNaNIsInf) {
  Tensor x = f32({4}, {1, NAN, INFINITY, -INFINITY});
  expect_near(un("IsNaN", x), Tensor::from<bool>({4}, {false, true, false, false}));
  expect_near(un("IsInf", x), Tensor::from<bool>({4}, {false, false, true, true}));
  expect_near(un("IsInf", x, {{"detect_negative", Attribute::of_int(0)}}),
              Tensor::from<bool>({4}, {false, false, true, false}));
  expect_near(un("IsInf", x, {{"detect_positive", Attribute::of_int(0)}}),
              Tensor::from<bool>({4}, {false, false, false, true}));
  EXPECT_EQ(infer_op({.op = "IsNaN", .inputs = {x}})[0].dtype, DType::Bool);
}

TEST(ElementwiseUnary, NotAndBitwiseNot) {
  expect_near(un("Not", Tensor::from<bool>({2}, {true, false})), Tensor::from<bool>({2}, {false, true}));
  expect_near(un("BitwiseNot", t<uint8_t>({3}, {0, 255, 15})), t<uint8_t>({3}, {255, 0, 240}));
  expect_near(un("BitwiseNot", t<int32_t>({3}, {0, -1, 5})), t<int32_t>({3}, {-1, 0, -6}));
  EXPECT_THROW(un("Not", f32({1}, {1})), Error);
  EXPECT_THROW(un("BitwiseNot", f32({1}, {1})), Error);
  EXPECT_THROW(un("BitwiseNot", t<int32_t>({1}, {1}), {}, 17), Error);  // added in opset 18
}

}  // namespace tessera::testing
