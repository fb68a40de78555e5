// Reduce* kernels and inference on hand-computed cases.
#include <cmath>
#include <limits>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
const float kInf = std::numeric_limits<float>::infinity();
Tensor x22() { return f32({2, 2}, {1, 2, 3, 4}); }
}  // namespace

TEST(Reduce, SumAxesAttributeKeepdims) {
  auto out = run_op({.op = "ReduceSum", .inputs = {x22()}, .attrs = {{"axes", Attribute::of_ints({1})}}, .opset = 11});
  expect_near(out[0], f32({2, 1}, {3, 7}));
}

TEST(Reduce, SumAxesInputNoKeepdims) {
  auto out = run_op({.op = "ReduceSum", .inputs = {x22(), i64({1}, {0})},
                     .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 13, .constant_inputs = {1}});
  expect_near(out[0], f32({2}, {4, 6}));
}

TEST(Reduce, SumDefaultReducesAllAxes) {
  auto out = run_op({.op = "ReduceSum", .inputs = {x22()}, .opset = 13});
  expect_near(out[0], f32({1, 1}, {10}));
}

TEST(Reduce, SumNoopWithEmptyAxes) {
  auto out = run_op({.op = "ReduceSum", .inputs = {x22(), i64({0}, {})},
                     .attrs = {{"noop_with_empty_axes", Attribute::of_int(1)}}, .opset = 13});
  expect_near(out[0], x22());
}

TEST(Reduce, NegativeAxesAndNonConstantAxes) {
  auto out = run_op({.op = "ReduceMean", .inputs = {x22(), i64({1}, {-2})}, .opset = 18});
  expect_near(out[0], f32({1, 2}, {2, 3}));
}

TEST(Reduce, EmptySetIdentities) {
  Tensor e(DType::F32, {2, 0, 3});
  auto attrs = AttrMap{{"axes", Attribute::of_ints({1})}};
  auto sum = run_op({.op = "ReduceSum", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(sum[0], f32({2, 1, 3}, {0, 0, 0, 0, 0, 0}));
  auto prod = run_op({.op = "ReduceProd", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(prod[0], f32({2, 1, 3}, {1, 1, 1, 1, 1, 1}));
  auto mx = run_op({.op = "ReduceMax", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(mx[0], f32({2, 1, 3}, std::vector<float>(6, -kInf)));
  auto mn = run_op({.op = "ReduceMin", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(mn[0], f32({2, 1, 3}, std::vector<float>(6, kInf)));
  auto ls = run_op({.op = "ReduceLogSum", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(ls[0], f32({2, 1, 3}, std::vector<float>(6, -kInf)));
  auto lse = run_op({.op = "ReduceLogSumExp", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(lse[0], f32({2, 1, 3}, std::vector<float>(6, -kInf)));
  auto l2 = run_op({.op = "ReduceL2", .inputs = {e}, .attrs = attrs, .opset = 11});
  expect_near(l2[0], f32({2, 1, 3}, std::vector<float>(6, 0)));
  Tensor ei(DType::I32, {0});
  auto imax = run_op({.op = "ReduceMax", .inputs = {ei}, .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 11});
  EXPECT_EQ(imax[0].data<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
}

TEST(Reduce, NormsAndLogs) {
  auto l1 = run_op({.op = "ReduceL1", .inputs = {f32({3}, {-1, 2, -3})}, .opset = 11});
  expect_near(l1[0], f32({1}, {6}));
  auto l2 = run_op({.op = "ReduceL2", .inputs = {f32({2}, {3, -4})}, .opset = 11});
  expect_near(l2[0], f32({1}, {5}));
  auto ss = run_op({.op = "ReduceSumSquare", .inputs = {f32({3}, {1, -2, 3})}, .opset = 11});
  expect_near(ss[0], f32({1}, {14}));
  auto ls = run_op({.op = "ReduceLogSum", .inputs = {f32({2}, {1.0f, static_cast<float>(M_E - 1)})}, .opset = 11});
  expect_near(ls[0], f32({1}, {1}));
  // log(e^1000 + e^1000) = 1000 + log 2, without overflowing.
  auto lse = run_op({.op = "ReduceLogSumExp", .inputs = {f32({2}, {1000, 1000})}, .opset = 11});
  expect_near(lse[0], f32({1}, {1000.6931472f}));
  auto prod = run_op({.op = "ReduceProd", .inputs = {f32({3}, {2, -3, 4})}, .opset = 11});
  expect_near(prod[0], f32({1}, {-24}));
}

TEST(Reduce, IntegersWrapAndTruncate) {
  auto s = run_op({.op = "ReduceSum", .inputs = {Tensor::from<int8_t>({2}, {100, 100})}, .opset = 11});
  EXPECT_EQ(s[0].data<int8_t>()[0], -56);  // 200 wraps in int8
  auto m = run_op({.op = "ReduceMean", .inputs = {Tensor::from<int32_t>({2}, {1, 2})}, .opset = 11});
  EXPECT_EQ(m[0].data<int32_t>()[0], 1);  // 1.5 truncated
  auto mx = run_op({.op = "ReduceMax", .inputs = {Tensor::from<int64_t>({3}, {-5, 7, 3})}, .opset = 11});
  EXPECT_EQ(mx[0].data<int64_t>()[0], 7);
  auto u = run_op({.op = "ReduceL1", .inputs = {Tensor::from<uint8_t>({2}, {200, 50})}, .opset = 11});
  EXPECT_EQ(u[0].data<uint8_t>()[0], 250);
}

TEST(Reduce, BoolMaxMinAndHalf) {
  Tensor b = Tensor::from<bool>({2, 2}, {true, false, false, false});
  auto mx = run_op({.op = "ReduceMax", .inputs = {b, i64({1}, {1})},
                    .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 20});
  EXPECT_TRUE(mx[0].data<bool>()[0]);
  EXPECT_FALSE(mx[0].data<bool>()[1]);
  auto mn = run_op({.op = "ReduceMin", .inputs = {b}, .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 20});
  EXPECT_FALSE(mn[0].data<bool>()[0]);
  Tensor h = Tensor::from<Half>({2}, {Half(1.5f), Half(2.5f)});
  auto hs = run_op({.op = "ReduceSum", .inputs = {h}, .opset = 11});
  EXPECT_EQ(hs[0].dtype(), DType::F16);
  EXPECT_EQ(hs[0].get_double(0), 4.0);
}

TEST(Reduce, MaxPropagatesNaN) {
  auto out = run_op({.op = "ReduceMax", .inputs = {f32({3}, {1, NAN, 2})}, .opset = 11});
  EXPECT_TRUE(std::isnan(out[0].get_double(0)));
}

TEST(Reduce, InferenceWithRuntimeAxes) {
  // Axes not constant: keepdims keeps the rank, otherwise the rank follows the axes length.
  auto keep = infer_op({.op = "ReduceSum", .inputs = {Tensor(DType::F32, {2, 1, 3}), i64({1}, {0})}, .opset = 13});
  EXPECT_EQ(keep[0].to_string(), TensorType({DType::F32, {-1, 1, -1}, true}).to_string());
  auto drop = infer_op({.op = "ReduceSum", .inputs = {Tensor(DType::F32, {2, 1, 3}), i64({1}, {0})},
                        .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 13});
  EXPECT_EQ(drop[0].rank(), 2);
}

TEST(Reduce, Errors) {
  EXPECT_THROW(run_op({.op = "ReduceSum", .inputs = {x22()}, .attrs = {{"axes", Attribute::of_ints({2})}}, .opset = 11}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "ReduceSum", .inputs = {x22()}, .attrs = {{"axes", Attribute::of_ints({1, -1})}}, .opset = 11}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "ReduceSum", .inputs = {Tensor::from<bool>({1}, {true})}, .opset = 13}), tessera::Error);
}

}  // namespace tessera::testing
