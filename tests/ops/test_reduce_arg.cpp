// ArgMax, ArgMin and TopK on hand-computed cases.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

TEST(ArgMax, AxisAndKeepdims) {
  Tensor x = f32({2, 2}, {2, 1, 3, 10});
  auto a0 = run_op({.op = "ArgMax", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(0)}}, .opset = 13});
  expect_near(a0[0], i64({1, 2}, {1, 1}));
  auto a1 = run_op({.op = "ArgMax", .inputs = {x},
                    .attrs = {{"axis", Attribute::of_int(-1)}, {"keepdims", Attribute::of_int(0)}}, .opset = 13});
  expect_near(a1[0], i64({2}, {0, 1}));
}

TEST(ArgMax, TiesAndSelectLastIndex) {
  Tensor x = f32({1, 4}, {5, 1, 5, 1});
  auto first = run_op({.op = "ArgMax", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(1)}}, .opset = 13});
  expect_near(first[0], i64({1, 1}, {0}));
  auto last = run_op({.op = "ArgMax", .inputs = {x},
                      .attrs = {{"axis", Attribute::of_int(1)}, {"select_last_index", Attribute::of_int(1)}},
                      .opset = 13});
  expect_near(last[0], i64({1, 1}, {2}));
  auto mn = run_op({.op = "ArgMin", .inputs = {x},
                    .attrs = {{"axis", Attribute::of_int(1)}, {"select_last_index", Attribute::of_int(1)}},
                    .opset = 13});
  expect_near(mn[0], i64({1, 1}, {3}));
}

TEST(ArgMin, IntegersAndErrors) {
  auto out = run_op({.op = "ArgMin", .inputs = {Tensor::from<int32_t>({3}, {4, -2, 7})},
                     .attrs = {{"keepdims", Attribute::of_int(0)}}, .opset = 13});
  expect_near(out[0], Tensor::from<int64_t>({}, {1}));
  EXPECT_THROW(run_op({.op = "ArgMin", .inputs = {Tensor(DType::F32, {0, 2})}, .opset = 13}), tessera::Error);
  EXPECT_THROW(run_op({.op = "ArgMax", .inputs = {f32({2}, {1, 2})}, .attrs = {{"axis", Attribute::of_int(1)}}}),
               tessera::Error);
}

TEST(TopK, LargestWithTiesByLowerIndex) {
  auto out = run_op({.op = "TopK", .inputs = {f32({5}, {1, 3, 2, 3, 0}), i64({1}, {3})}, .num_outputs = 2,
                     .opset = 11, .constant_inputs = {1}});
  expect_near(out[0], f32({3}, {3, 3, 2}));
  expect_near(out[1], i64({3}, {1, 3, 2}));
}

TEST(TopK, SmallestAlongAxis0) {
  Tensor x = f32({3, 2}, {4, 1, 2, 5, 3, 0});
  auto out = run_op({.op = "TopK", .inputs = {x, i64({1}, {2})}, .attrs = {{"axis", Attribute::of_int(0)},
                     {"largest", Attribute::of_int(0)}}, .num_outputs = 2, .opset = 11});
  expect_near(out[0], f32({2, 2}, {2, 0, 3, 1}));
  expect_near(out[1], i64({2, 2}, {1, 2, 2, 0}));
}

TEST(TopK, KAttributeBeforeOpset10AndInference) {
  auto out = run_op({.op = "TopK", .inputs = {Tensor::from<int32_t>({1, 3}, {7, 9, 8})},
                     .attrs = {{"k", Attribute::of_int(1)}}, .num_outputs = 2, .opset = 9});
  EXPECT_EQ(out[0].data<int32_t>()[0], 9);
  expect_near(out[1], i64({1, 1}, {1}));
  // K not constant: the axis length is unknown statically.
  auto t = infer_op({.op = "TopK", .inputs = {f32({2, 4}, std::vector<float>(8, 0)), i64({1}, {2})},
                     .num_outputs = 2, .opset = 11});
  EXPECT_EQ(t[0].dims, (Dims{2, -1}));
  EXPECT_EQ(t[1].dtype, DType::I64);
}

TEST(TopK, Errors) {
  EXPECT_THROW(run_op({.op = "TopK", .inputs = {f32({2}, {1, 2}), i64({1}, {3})}, .num_outputs = 2, .opset = 11}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TopK", .inputs = {f32({2}, {1, 2}), i64({1}, {-1})}, .num_outputs = 2, .opset = 11}),
               tessera::Error);
}

}  // namespace tessera::testing
