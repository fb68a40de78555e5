// ScatterND, ScatterElements and Scatter (spec examples where given).
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
AttrMap red(const char* r) { return {{"reduction", Attribute::of_string(r)}}; }
}  // namespace

TEST(TensorScatter, ScatterNdSpecExample) {
  auto out = run_op({.op = "ScatterND", .inputs = {f32({8}, {1, 2, 3, 4, 5, 6, 7, 8}), i64({4, 1}, {4, 3, 1, 7}),
                                                   f32({4}, {9, 10, 11, 12})}});
  expect_near(out[0], f32({8}, {1, 11, 3, 10, 9, 6, 7, 12}));
}

TEST(TensorScatter, ScatterNdSlices) {
  auto out = run_op({.op = "ScatterND", .inputs = {i64({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {-1}), i64({1, 2}, {9, 9})}});
  expect_near(out[0], i64({2, 2}, {1, 2, 9, 9}));
  EXPECT_THROW(run_op({.op = "ScatterND", .inputs = {i64({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {2}), i64({1, 2}, {9, 9})}}),
               Error);
  EXPECT_THROW(run_op({.op = "ScatterND", .inputs = {i64({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {0}), i64({1, 3}, {9, 9, 9})}}),
               Error);
}

TEST(TensorScatter, ScatterNdReductions) {
  Tensor data = f32({4}, {1, 2, 3, 4});
  auto add = run_op({.op = "ScatterND", .inputs = {data, i64({2, 1}, {0, 0}), f32({2}, {5, 6})}, .attrs = red("add"),
                     .opset = 16});
  expect_near(add[0], f32({4}, {12, 2, 3, 4}));
  auto mul = run_op({.op = "ScatterND", .inputs = {data, i64({2, 1}, {1, 1}), f32({2}, {3, 2})}, .attrs = red("mul"),
                     .opset = 16});
  expect_near(mul[0], f32({4}, {1, 12, 3, 4}));
  auto mx = run_op({.op = "ScatterND", .inputs = {data, i64({2, 1}, {2, 3}), f32({2}, {5, 0})}, .attrs = red("max"),
                    .opset = 18});
  expect_near(mx[0], f32({4}, {1, 2, 5, 4}));
  auto mn = run_op({.op = "ScatterND", .inputs = {data, i64({2, 1}, {2, 3}), f32({2}, {5, 0})}, .attrs = red("min"),
                    .opset = 18});
  expect_near(mn[0], f32({4}, {1, 2, 3, 0}));
  EXPECT_THROW(run_op({.op = "ScatterND", .inputs = {data, i64({1, 1}, {0}), f32({1}, {1})}, .attrs = red("sub"),
                       .opset = 18}),
               Error);
}

TEST(TensorScatter, ScatterElementsSpecExamples) {
  auto a = run_op({.op = "ScatterElements",
                   .inputs = {f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                              f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})}});
  expect_near(a[0], f32({3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
  auto b = run_op({.op = "ScatterElements",
                   .inputs = {f32({1, 5}, {1, 2, 3, 4, 5}), i64({1, 2}, {1, 3}), f32({1, 2}, {1.1f, 2.1f})},
                   .attrs = {{"axis", Attribute::of_int(1)}}});
  expect_near(b[0], f32({1, 5}, {1, 1.1f, 3, 2.1f, 5}));
}

TEST(TensorScatter, ScatterElementsDuplicatesWithAdd) {
  AttrMap attrs{{"axis", Attribute::of_int(1)}, {"reduction", Attribute::of_string("add")}};
  auto out = run_op({.op = "ScatterElements",
                     .inputs = {f32({1, 5}, {1, 2, 3, 4, 5}), i64({1, 2}, {1, -4}), f32({1, 2}, {1.1f, 2.1f})},
                     .attrs = attrs, .opset = 16});
  expect_near(out[0], f32({1, 5}, {1, 5.2f, 3, 4, 5}));
  EXPECT_THROW(run_op({.op = "ScatterElements",
                       .inputs = {f32({1, 5}, {1, 2, 3, 4, 5}), i64({1, 1}, {5}), f32({1, 1}, {1})},
                       .attrs = {{"axis", Attribute::of_int(1)}}}),
               Error);
}

TEST(TensorScatter, ScatterIsScatterElements) {
  auto out = run_op({.op = "Scatter",
                     .inputs = {i64({1, 5}, {1, 2, 3, 4, 5}), i64({1, 2}, {1, 3}), i64({1, 2}, {-1, -2})},
                     .attrs = {{"axis", Attribute::of_int(1)}}, .opset = 9});
  expect_near(out[0], i64({1, 5}, {1, -1, 3, -2, 5}));
}

TEST(TensorScatter, ScatterOfBoolsAndStrings) {
  auto b = run_op({.op = "ScatterND", .inputs = {Tensor::from<bool>({3}, {false, false, true}), i64({1, 1}, {1}),
                                                 Tensor::from<bool>({1}, {true})}});
  expect_near(b[0], Tensor::from<bool>({3}, {false, true, true}));
  Tensor s(DType::String, {3});
  s.strings() = {"a", "b", "c"};
  Tensor u(DType::String, {1});
  u.strings() = {"z"};
  auto out = run_op({.op = "ScatterND", .inputs = {s, i64({1, 1}, {0}), u}});
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"z", "b", "c"}));
}

}  // namespace tessera::testing
