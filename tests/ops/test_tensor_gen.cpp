// Constant, ConstantOfShape, Range, EyeLike and OneHot.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
AttrMap tensor_attr(const char* name, Tensor t) { return {{name, Attribute::of_tensor(std::move(t))}}; }
}  // namespace

TEST(TensorGen, ConstantForms) {
  auto v = run_op({.op = "Constant", .attrs = tensor_attr("value", f32({2}, {1.5f, -2}))});
  expect_near(v[0], f32({2}, {1.5f, -2}));
  auto f = run_op({.op = "Constant", .attrs = {{"value_float", Attribute::of_float(2.5f)}}});
  expect_near(f[0], f32({}, {2.5f}));
  auto is = run_op({.op = "Constant", .attrs = {{"value_ints", Attribute::of_ints({3, 4, 5})}}});
  expect_near(is[0], i64({3}, {3, 4, 5}));
  auto i = run_op({.op = "Constant", .attrs = {{"value_int", Attribute::of_int(-7)}}});
  expect_near(i[0], i64({}, {-7}));
  auto fs = run_op({.op = "Constant", .attrs = {{"value_floats", Attribute::of_floats({0.5f})}}});
  expect_near(fs[0], f32({1}, {0.5f}));
}

TEST(TensorGen, ConstantErrors) {
  EXPECT_THROW(run_op({.op = "Constant", .attrs = {{"value_string", Attribute::of_string("x")}}}), Error);
  EXPECT_THROW(run_op({.op = "Constant"}), Error);
  EXPECT_THROW(run_op({.op = "Constant", .attrs = {{"value_int", Attribute::of_int(1)},
                                                   {"value_float", Attribute::of_float(1)}}}),
               Error);
}

TEST(TensorGen, ConstantOfShape) {
  auto a = run_op({.op = "ConstantOfShape", .inputs = {i64({2}, {2, 3})},
                   .attrs = tensor_attr("value", Tensor::from<int32_t>({1}, {7}))});
  expect_near(a[0], Tensor::from<int32_t>({2, 3}, {7, 7, 7, 7, 7, 7}));
  auto z = run_op({.op = "ConstantOfShape", .inputs = {i64({1}, {3})}});
  expect_near(z[0], f32({3}, {0, 0, 0}));
  auto empty = run_op({.op = "ConstantOfShape", .inputs = {i64({2}, {0, 4})}});
  EXPECT_EQ(dims_to_string(empty[0].dims()), "0x4");
  auto t = infer_op({.op = "ConstantOfShape", .inputs = {i64({3}, {1, 2, 3})}, .constant_inputs = {0}});
  EXPECT_EQ(t[0].to_string(), "f32[1x2x3]");
  auto u = infer_op({.op = "ConstantOfShape", .inputs = {i64({3}, {1, 2, 3})}});
  EXPECT_EQ(u[0].to_string(), "f32[?x?x?]");
  EXPECT_THROW(run_op({.op = "ConstantOfShape", .inputs = {i64({1}, {-1})}}), Error);
}

TEST(TensorGen, RangeValuesAndCounts) {
  auto f = run_op({.op = "Range", .inputs = {f32({}, {1}), f32({}, {5}), f32({}, {2})}});
  expect_near(f[0], f32({2}, {1, 3}));
  auto i = run_op({.op = "Range", .inputs = {Tensor::from<int32_t>({}, {10}), Tensor::from<int32_t>({}, {4}),
                                             Tensor::from<int32_t>({}, {-3})}});
  expect_near(i[0], Tensor::from<int32_t>({2}, {10, 7}));
  auto d = run_op({.op = "Range", .inputs = {Tensor::from<double>({}, {0}), Tensor::from<double>({}, {1}),
                                             Tensor::from<double>({}, {0.3})}});
  expect_near(d[0], Tensor::from<double>({4}, {0, 0.3, 0.6, 0.9}), 1e-12, 1e-12);
  auto e = run_op({.op = "Range", .inputs = {i64({}, {0}), i64({}, {0}), i64({}, {1})}});
  EXPECT_EQ(dims_to_string(e[0].dims()), "0");
  auto t = infer_op({.op = "Range", .inputs = {i64({}, {0}), i64({}, {10}), i64({}, {3})}, .constant_inputs = {0, 1, 2}});
  EXPECT_EQ(t[0].to_string(), "i64[4]");
  EXPECT_THROW(run_op({.op = "Range", .inputs = {i64({}, {0}), i64({}, {3}), i64({}, {0})}}), Error);
  EXPECT_THROW(run_op({.op = "Range", .inputs = {i64({}, {0}), f32({}, {3}), i64({}, {1})}}), Error);
}

TEST(TensorGen, EyeLike) {
  auto a = run_op({.op = "EyeLike", .inputs = {f32({3, 4}, std::vector<float>(12, 5))},
                   .attrs = {{"k", Attribute::of_int(1)}}});
  expect_near(a[0], f32({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  auto b = run_op({.op = "EyeLike", .inputs = {f32({3, 3}, std::vector<float>(9, 0))},
                   .attrs = {{"k", Attribute::of_int(-1)}, {"dtype", Attribute::of_int(6)}}});
  expect_near(b[0], Tensor::from<int32_t>({3, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_THROW(run_op({.op = "EyeLike", .inputs = {f32({3}, {1, 2, 3})}}), Error);
}

TEST(TensorGen, OneHotAxes) {
  Tensor ind = i64({3}, {0, 2, -1});
  Tensor vals = f32({2}, {0, 1});
  auto last = run_op({.op = "OneHot", .inputs = {ind, f32({}, {3}), vals}, .constant_inputs = {1}});
  expect_near(last[0], f32({3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1}));
  auto first = run_op({.op = "OneHot", .inputs = {ind, f32({}, {3}), vals}, .attrs = {{"axis", Attribute::of_int(0)}}});
  expect_near(first[0], f32({3, 3}, {1, 0, 0, 0, 0, 0, 0, 1, 1}));
  auto oor = run_op({.op = "OneHot", .inputs = {i64({2}, {5, 1}), i64({1}, {2}), i64({2}, {-1, 9})}});
  expect_near(oor[0], i64({2, 2}, {-1, -1, -1, 9}));
  auto t = infer_op({.op = "OneHot", .inputs = {i64({2, 2}, {0, 1, 1, 0}), i64({}, {4}), vals},
                     .attrs = {{"axis", Attribute::of_int(1)}}, .constant_inputs = {1}});
  EXPECT_EQ(t[0].to_string(), "f32[2x4x2]");
  EXPECT_THROW(run_op({.op = "OneHot", .inputs = {ind, f32({}, {3}), f32({3}, {0, 1, 2})}}), Error);
}

}  // namespace tessera::testing
