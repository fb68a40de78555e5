// The elementwise family at opsets 1-6 (legacy broadcasting, equal-shape
// variadic ops, per-channel PRelu, consumed_inputs, string Cast targets), on
// hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Tensor b(Dims d, std::vector<bool> v) { return Tensor::from<bool>(std::move(d), v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute as(std::string v) { return Attribute::of_string(std::move(v)); }
Attribute af(float v) { return Attribute::of_float(v); }
Attribute ais(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

std::vector<float> iota(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  return v;
}

// Output type of one node at `opset` with inputs of the given static types.
TensorType infer_at(int64_t opset, const std::string& op, const std::vector<TensorType>& ins, AttrMap attrs) {
  return infer_types(op, ins, std::move(attrs), 1, opset)[0];
}
}  // namespace

// ---------------------------------------------------------------- legacy broadcasting

TEST(ElementwiseLegacy, AddBroadcastsAtAxis) {
  // [2,3,4] + [3] at axis 1: element (n, c, k) gets B[c].
  auto out = run_op({.op = "Add", .inputs = {f32({2, 3, 4}, iota(24)), f32({3}, {100, 200, 300})},
                     .attrs = {{"broadcast", ai(1)}, {"axis", ai(1)}}, .opset = 6});
  expect_near(out[0], f32({2, 3, 4}, {100, 101, 102, 103, 204, 205, 206, 207, 308, 309, 310, 311,
                                      112, 113, 114, 115, 216, 217, 218, 219, 320, 321, 322, 323}));
}

TEST(ElementwiseLegacy, SuffixMatchingWithoutAxis) {
  auto mul = run_op({.op = "Mul", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})},
                     .attrs = {{"broadcast", ai(1)}}, .opset = 6});
  expect_near(mul[0], f32({2, 3}, {10, 40, 90, 40, 100, 180}));
  // A scalar B, with opset 1's consumed_inputs hint.
  auto sub = run_op({.op = "Sub", .inputs = {f32({2}, {5, 7}), f32({}, {2})},
                     .attrs = {{"broadcast", ai(1)}, {"consumed_inputs", ais({0, 0})}}, .opset = 1});
  expect_near(sub[0], f32({2}, {3, 5}));
}

TEST(ElementwiseLegacy, SizeOneDimsOfBExpand) {
  // B [2,1] at axis 0 of A [2,3]: one value per row.
  auto out = run_op({.op = "Add", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 1}, {10, 20})},
                     .attrs = {{"broadcast", ai(1)}, {"axis", ai(0)}}, .opset = 6});
  expect_near(out[0], f32({2, 3}, {11, 12, 13, 24, 25, 26}));
  // B [1,3] at axis 0: one value per column.
  auto col = run_op({.op = "Add", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({1, 3}, {10, 20, 30})},
                     .attrs = {{"broadcast", ai(1)}, {"axis", ai(0)}}, .opset = 6});
  expect_near(col[0], f32({2, 3}, {11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseLegacy, WithoutBroadcastShapesMustBeEqual) {
  auto div = run_op({.op = "Div", .inputs = {t<int32_t>({2}, {7, -9}), t<int32_t>({2}, {2, 2})}, .opset = 6});
  expect_near(div[0], t<int32_t>({2}, {3, -4}));
  EXPECT_THROW(run_op({.op = "Add", .inputs = {f32({2, 3}, iota(6)), f32({3}, {1, 2, 3})}, .opset = 6}), Error);
  EXPECT_THROW(run_op({.op = "Add", .inputs = {f32({2, 3}, iota(6)), f32({3}, {1, 2, 3})},
                       .attrs = {{"broadcast", ai(0)}}, .opset = 6}),
               Error);
}

TEST(ElementwiseLegacy, BadBroadcastsThrow) {
  auto add = [](Tensor a, Tensor bb, AttrMap attrs) {
    return run_op({.op = "Add", .inputs = {std::move(a), std::move(bb)}, .attrs = std::move(attrs), .opset = 6});
  };
  // B [3] does not fit at axis 1 of A [2,3] (would need 2 dims after it).
  EXPECT_THROW(add(f32({2, 3}, iota(6)), f32({3}, {1, 2, 3}), {{"broadcast", ai(1)}, {"axis", ai(2)}}), Error);
  // Suffix matching of [2] against [2,3] compares 2 with 3.
  EXPECT_THROW(add(f32({2, 3}, iota(6)), f32({2}, {1, 2}), {{"broadcast", ai(1)}}), Error);
  // B of higher rank than A.
  EXPECT_THROW(add(f32({3}, {1, 2, 3}), f32({1, 3}, {1, 2, 3}), {{"broadcast", ai(1)}}), Error);
  // A is never expanded: the output has A's shape.
  EXPECT_THROW(add(f32({1, 3}, {1, 2, 3}), f32({2, 3}, iota(6)), {{"broadcast", ai(1)}}), Error);
  EXPECT_THROW(add(f32({2}, {1, 2}), f32({2}, {1, 2}), {{"broadcast", ai(2)}}), Error);
}

TEST(ElementwiseLegacy, LegacyAttributesRejectedAtNewerOpsets) {
  EXPECT_THROW(run_op({.op = "Add", .inputs = {f32({2}, {1, 2}), f32({2}, {1, 2})},
                       .attrs = {{"broadcast", ai(1)}}, .opset = 7}),
               Error);
  EXPECT_THROW(run_op({.op = "Mul", .inputs = {f32({2}, {1, 2}), f32({2}, {1, 2})},
                       .attrs = {{"consumed_inputs", ais({0, 0})}}, .opset = 6}),
               Error);
  // Opset 7 keeps numpy broadcasting: [3] aligns with the last axis.
  auto out = run_op({.op = "Add", .inputs = {f32({3, 1}, {1, 2, 3}), f32({3}, {10, 20, 30})}, .opset = 7});
  expect_near(out[0], f32({3, 3}, {11, 21, 31, 12, 22, 32, 13, 23, 33}));
}

TEST(ElementwiseLegacy, PowAndComparisons) {
  auto pw = run_op({.op = "Pow", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {2, 3})},
                    .attrs = {{"broadcast", ai(1)}, {"axis", ai(0)}}, .opset = 6});
  expect_near(pw[0], f32({2, 2}, {1, 4, 27, 64}));
  auto gt = run_op({.op = "Greater", .inputs = {f32({2, 2}, {1, 5, 3, 2}), f32({2}, {2, 4})},
                    .attrs = {{"broadcast", ai(1)}, {"axis", ai(0)}}, .opset = 1});
  expect_near(gt[0], b({2, 2}, {false, true, false, false}));
  auto land = run_op({.op = "And", .inputs = {b({2, 2}, {true, false, true, true}), b({2}, {true, false})},
                      .attrs = {{"broadcast", ai(1)}}, .opset = 1});
  expect_near(land[0], b({2, 2}, {true, false, true, false}));
  auto eq = run_op({.op = "Equal", .inputs = {t<int32_t>({3}, {1, 2, 3}), t<int32_t>({3}, {1, 0, 3})}, .opset = 1});
  expect_near(eq[0], b({3}, {true, false, true}));
  auto lt = run_op({.op = "Less", .inputs = {i64({2, 2}, {1, 5, 3, 2}), i64({}, {3})},
                    .attrs = {{"broadcast", ai(1)}}, .opset = 6});
  expect_near(lt[0], b({2, 2}, {true, false, false, true}));
}

TEST(ElementwiseLegacy, InferenceKeepsAsShape) {
  TensorType a{DType::F32, {-1, 3, -1}, true}, bb{DType::F32, {3}, true};
  TensorType y = infer_at(6, "Add", {a, bb}, {{"broadcast", ai(1)}, {"axis", ai(1)}});
  EXPECT_EQ(dims_to_string(y.dims), dims_to_string(Dims{-1, 3, -1}));
  // A size-1 dim of A stays 1 even where B's dim is unknown.
  TensorType y2 = infer_at(6, "Mul", {TensorType{DType::F32, {2, 1}, true}, TensorType{DType::F32, {-1}, true}},
                           {{"broadcast", ai(1)}});
  EXPECT_EQ(dims_to_string(y2.dims), dims_to_string(Dims{2, 1}));
  EXPECT_THROW(infer_at(6, "Add", {a, TensorType{DType::F32, {4}, true}}, {{"broadcast", ai(1)}, {"axis", ai(1)}}),
               Error);
}

// ---------------------------------------------------------------- variadic ops

TEST(ElementwiseLegacy, VariadicOpsNeedEqualShapesBeforeOpset8) {
  auto mx = run_op({.op = "Max", .inputs = {f32({2}, {1, 5}), f32({2}, {3, 2}), f32({2}, {2, 2})}, .opset = 6});
  expect_near(mx[0], f32({2}, {3, 5}));
  auto sum = run_op({.op = "Sum", .inputs = {i64({2}, {1, 5}), i64({2}, {3, -2})},
                     .attrs = {{"consumed_inputs", ais({0, 0})}}, .opset = 1});
  expect_near(sum[0], i64({2}, {4, 3}));
  auto mean = run_op({.op = "Mean", .inputs = {f32({2}, {1, 2}), f32({2}, {3, 6})}, .opset = 6});
  expect_near(mean[0], f32({2}, {2, 4}));
  EXPECT_THROW(run_op({.op = "Min", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {0, 9})}, .opset = 6}), Error);
  auto mn = run_op({.op = "Min", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {0, 9})}, .opset = 8});
  expect_near(mn[0], f32({2, 2}, {0, 2, 0, 4}));
  EXPECT_THROW(run_op({.op = "Max", .inputs = {f32({1}, {1}), f32({1}, {2})},
                       .attrs = {{"consumed_inputs", ais({0, 0})}}, .opset = 6}),
               Error);
}

// ---------------------------------------------------------------- PRelu

TEST(ElementwiseLegacy, PReluSlopeIsPerChannelBeforeOpset7) {
  // X [1,2,2]: channel 0 = {-1, 2}, channel 1 = {-3, 4}; slope [2] per channel.
  auto out = run_op({.op = "PRelu", .inputs = {f32({1, 2, 2}, {-1, 2, -3, 4}), f32({2}, {0.1f, 0.5f})}, .opset = 6});
  expect_near(out[0], f32({1, 2, 2}, {-0.1f, 2, -1.5f, 4}));
  // From opset 7 the same slope broadcasts numpy-style along the last axis.
  auto v7 = run_op({.op = "PRelu", .inputs = {f32({1, 2, 2}, {-1, 2, -3, 4}), f32({2}, {0.1f, 0.5f})}, .opset = 7});
  expect_near(v7[0], f32({1, 2, 2}, {-0.1f, 2, -0.3f, 4}));
  // One shared value, with opset 1's consumed_inputs.
  auto shared = run_op({.op = "PRelu", .inputs = {f32({2, 2}, {-2, 1, -4, 3}), f32({1}, {0.25f})},
                        .attrs = {{"consumed_inputs", ais({0})}}, .opset = 1});
  expect_near(shared[0], f32({2, 2}, {-0.5f, 1, -1, 3}));
  EXPECT_THROW(run_op({.op = "PRelu", .inputs = {f32({1, 2, 2}, {-1, 2, -3, 4}), f32({3}, {1, 2, 3})}, .opset = 6}),
               Error);
}

// ---------------------------------------------------------------- unary ops

TEST(ElementwiseLegacy, ConsumedInputsOnlyBeforeOpset6) {
  auto relu = run_op({.op = "Relu", .inputs = {f32({3}, {-1, 0, 2})}, .attrs = {{"consumed_inputs", ais({0})}},
                      .opset = 1});
  expect_near(relu[0], f32({3}, {0, 0, 2}));
  auto ex = run_op({.op = "Exp", .inputs = {f32({2}, {0, 1})}, .opset = 1});
  expect_near(ex[0], f32({2}, {1, 2.718281828f}));
  auto leaky = run_op({.op = "LeakyRelu", .inputs = {f32({2}, {-2, 3})},
                       .attrs = {{"alpha", af(0.1f)}, {"consumed_inputs", ais({0})}}, .opset = 1});
  expect_near(leaky[0], f32({2}, {-0.2f, 3}));
  auto clip = run_op({.op = "Clip", .inputs = {f32({3}, {-1, 0.5f, 2})},
                      .attrs = {{"min", af(0)}, {"max", af(1)}, {"consumed_inputs", ais({0})}}, .opset = 1});
  expect_near(clip[0], f32({3}, {0, 0.5f, 1}));
  auto thr = run_op({.op = "ThresholdedRelu", .inputs = {f32({2}, {0.5f, 2})}, .opset = 1});
  expect_near(thr[0], f32({2}, {0, 2}));
  EXPECT_THROW(run_op({.op = "Relu", .inputs = {f32({1}, {1})}, .attrs = {{"consumed_inputs", ais({0})}}, .opset = 6}),
               Error);
  // Sin has no opset below 7.
  EXPECT_THROW(run_op({.op = "Sin", .inputs = {f32({1}, {0})}, .opset = 6}), Error);
}

// ---------------------------------------------------------------- Cast

TEST(ElementwiseLegacy, CastTargetByNameBeforeOpset6) {
  auto i32 = run_op({.op = "Cast", .inputs = {f32({2}, {1.7f, -2.2f})}, .attrs = {{"to", as("INT32")}}, .opset = 1});
  expect_near(i32[0], t<int32_t>({2}, {1, -2}));
  auto f64 = run_op({.op = "Cast", .inputs = {i64({1}, {3})}, .attrs = {{"to", as("DOUBLE")}}, .opset = 5});
  expect_near(f64[0], t<double>({1}, {3}));
  EXPECT_THROW(run_op({.op = "Cast", .inputs = {f32({1}, {1})}, .attrs = {{"to", as("FLOAT")}}, .opset = 6}), Error);
  EXPECT_THROW(run_op({.op = "Cast", .inputs = {f32({1}, {1})}, .attrs = {{"to", as("REAL")}}, .opset = 1}), Error);
  EXPECT_THROW(run_op({.op = "Cast", .inputs = {f32({1}, {1})}, .attrs = {{"to", as("STRING")}}, .opset = 1}), Error);
}

}  // namespace tessera::testing
