// CumSum, CumProd and Det on hand-computed cases.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
AttrMap flags(int exclusive, int reverse) {
  return {{"exclusive", Attribute::of_int(exclusive)}, {"reverse", Attribute::of_int(reverse)}};
}
}  // namespace

TEST(CumSum, ExclusiveAndReverse) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor ax = Tensor::from<int32_t>({}, {0});
  expect_near(run_op({.op = "CumSum", .inputs = {x, ax}, .opset = 14})[0], f32({4}, {1, 3, 6, 10}));
  expect_near(run_op({.op = "CumSum", .inputs = {x, ax}, .attrs = flags(1, 0), .opset = 14})[0], f32({4}, {0, 1, 3, 6}));
  expect_near(run_op({.op = "CumSum", .inputs = {x, ax}, .attrs = flags(0, 1), .opset = 14})[0], f32({4}, {10, 9, 7, 4}));
  expect_near(run_op({.op = "CumSum", .inputs = {x, ax}, .attrs = flags(1, 1), .opset = 14})[0], f32({4}, {9, 7, 4, 0}));
}

TEST(CumSum, Axis1AndIntegers) {
  Tensor x = Tensor::from<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = run_op({.op = "CumSum", .inputs = {x, i64({1}, {-1})}, .opset = 14});
  expect_near(out[0], i64({2, 3}, {1, 3, 6, 4, 9, 15}));
  auto a0 = run_op({.op = "CumSum", .inputs = {x, i64({}, {0})}, .opset = 14});
  expect_near(a0[0], i64({2, 3}, {1, 2, 3, 5, 7, 9}));
}

TEST(CumProd, ExclusiveAndReverse) {
  Tensor x = f32({3}, {2, 3, 4});
  Tensor ax = i64({}, {0});
  expect_near(run_op({.op = "CumProd", .inputs = {x, ax}, .opset = 23})[0], f32({3}, {2, 6, 24}));
  expect_near(run_op({.op = "CumProd", .inputs = {x, ax}, .attrs = flags(1, 0), .opset = 23})[0], f32({3}, {1, 2, 6}));
  expect_near(run_op({.op = "CumProd", .inputs = {x, ax}, .attrs = flags(0, 1), .opset = 23})[0], f32({3}, {24, 12, 4}));
}

TEST(CumSum, Errors) {
  EXPECT_THROW(run_op({.op = "CumSum", .inputs = {f32({2}, {1, 2}), i64({2}, {0, 0})}, .opset = 14}), tessera::Error);
  EXPECT_THROW(run_op({.op = "CumSum", .inputs = {f32({2}, {1, 2}), i64({}, {1})}, .opset = 14}), tessera::Error);
  EXPECT_THROW(run_op({.op = "CumSum", .inputs = {f32({2}, {1, 2}), f32({}, {0})}, .opset = 14}), tessera::Error);
}

TEST(Det, TwoByTwoBatchedAndPivoting) {
  auto d = run_op({.op = "Det", .inputs = {f32({2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0})}});
  expect_near(d[0], f32({2}, {-2, -1}));
  auto d3 = run_op({.op = "Det", .inputs = {f32({3, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4})}});
  expect_near(d3[0], f32({}, {24}));
  // [[1,2,3],[4,5,6],[7,8,10]]: 1*(50-48) - 2*(40-42) + 3*(32-35) = -3
  auto dd = run_op({.op = "Det", .inputs = {Tensor::from<double>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 10})}});
  expect_near(dd[0], Tensor::from<double>({}, {-3}), 1e-12, 1e-12);
}

TEST(Det, Errors) {
  EXPECT_THROW(run_op({.op = "Det", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6})}}), tessera::Error);
  EXPECT_THROW(run_op({.op = "Det", .inputs = {i64({2, 2}, {1, 2, 3, 4})}}), tessera::Error);
}

}  // namespace tessera::testing
