// Concat, Split and Slice.
#include <limits>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor iota_f32(Dims d, float from = 0) {
  Tensor t(DType::F32, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from + static_cast<float>(i);
  return t;
}
AttrMap axis(int64_t a) { return {{"axis", Attribute::of_int(a)}}; }
}  // namespace

TEST(TensorConcat, ConcatAlongAxes) {
  auto out = run_op({.op = "Concat", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({2, 1}, {5, 6})}, .attrs = axis(-1)});
  expect_near(out[0], f32({2, 3}, {1, 2, 5, 3, 4, 6}));
  auto rows = run_op({.op = "Concat", .inputs = {f32({1, 2}, {1, 2}), f32({0, 2}, {}), f32({1, 2}, {3, 4})},
                      .attrs = axis(0)});
  expect_near(rows[0], f32({2, 2}, {1, 2, 3, 4}));
  auto ints = run_op({.op = "Concat", .inputs = {i64({1}, {2}), i64({2}, {3, 4})}, .attrs = axis(0)});
  expect_near(ints[0], i64({3}, {2, 3, 4}));
}

TEST(TensorConcat, ConcatInferencePropagatesUnknownDims) {
  Graph g;
  Value* a = g.add_input("a", {DType::F32, {-1, 2}, true});
  Value* b = g.add_input("b", {DType::F32, {-1, 3}, true});
  Node* n = g.add_node("Concat", {a, b}, {"y"}, axis(1), "node");
  infer_node(*n, 17);
  EXPECT_EQ(n->outputs[0]->type.to_string(), "f32[?x5]");
  Node* m = g.add_node("Concat", {a, a}, {"z"}, axis(0), "node2");
  infer_node(*m, 17);
  EXPECT_EQ(m->outputs[0]->type.to_string(), "f32[?x2]");
}

TEST(TensorConcat, ConcatRejectsMismatches) {
  EXPECT_THROW(run_op({.op = "Concat", .inputs = {f32({2, 2}, {1, 2, 3, 4}), f32({3, 1}, {5, 6, 7})}, .attrs = axis(1)}),
               Error);
  EXPECT_THROW(run_op({.op = "Concat", .inputs = {f32({2}, {1, 2}), f32({1, 1}, {5})}, .attrs = axis(0)}), Error);
  EXPECT_THROW(run_op({.op = "Concat", .inputs = {f32({2}, {1, 2}), i64({1}, {5})}, .attrs = axis(0)}), Error);
}

TEST(TensorConcat, SplitEqualAndExplicit) {
  auto eq = run_op({.op = "Split", .inputs = {iota_f32({6}, 1)}, .num_outputs = 3});
  expect_near(eq[0], f32({2}, {1, 2}));
  expect_near(eq[1], f32({2}, {3, 4}));
  expect_near(eq[2], f32({2}, {5, 6}));
  auto ex = run_op({.op = "Split", .inputs = {iota_f32({6}, 1), i64({2}, {2, 4})}, .num_outputs = 2, .opset = 13,
                    .constant_inputs = {1}});
  expect_near(ex[0], f32({2}, {1, 2}));
  expect_near(ex[1], f32({4}, {3, 4, 5, 6}));
  auto attr = run_op({.op = "Split", .inputs = {iota_f32({6}, 1)}, .attrs = {{"split", Attribute::of_ints({1, 5})}},
                      .num_outputs = 2, .opset = 11});
  expect_near(attr[0], f32({1}, {1}));
  expect_near(attr[1], f32({5}, {2, 3, 4, 5, 6}));
}

TEST(TensorConcat, SplitAxisOneAndUnevenOpset18) {
  auto cols = run_op({.op = "Split", .inputs = {iota_f32({2, 4})}, .attrs = axis(1), .num_outputs = 2});
  expect_near(cols[0], f32({2, 2}, {0, 1, 4, 5}));
  expect_near(cols[1], f32({2, 2}, {2, 3, 6, 7}));
  auto uneven = run_op({.op = "Split", .inputs = {iota_f32({7})}, .attrs = {{"num_outputs", Attribute::of_int(4)}},
                        .num_outputs = 4, .opset = 18});
  expect_near(uneven[0], f32({2}, {0, 1}));
  expect_near(uneven[2], f32({2}, {4, 5}));
  expect_near(uneven[3], f32({1}, {6}));
  EXPECT_THROW(run_op({.op = "Split", .inputs = {iota_f32({5})}, .num_outputs = 2, .opset = 13}), Error);
  EXPECT_THROW(run_op({.op = "Split", .inputs = {iota_f32({6}), i64({2}, {2, 3})}, .num_outputs = 2}), Error);
}

TEST(TensorConcat, SliceSpecExamples) {
  Tensor data = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto a = run_op({.op = "Slice",
                   .inputs = {data, i64({2}, {1, 0}), i64({2}, {2, 3}), i64({2}, {0, 1}), i64({2}, {1, 2})}});
  expect_near(a[0], f32({1, 2}, {5, 7}));
  auto b = run_op({.op = "Slice", .inputs = {data, i64({2}, {0, 1}), i64({2}, {-1, 1000})}});
  expect_near(b[0], f32({1, 3}, {2, 3, 4}));
}

TEST(TensorConcat, SliceNegativeStepsAndClamping) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  auto rev = run_op({.op = "Slice", .inputs = {iota_f32({10}), i64({1}, {-1}), i64({1}, {kMin}), i64({1}, {0}),
                                               i64({1}, {-2})}});
  expect_near(rev[0], f32({5}, {9, 7, 5, 3, 1}));
  auto rev2 = run_op({.op = "Slice", .inputs = {iota_f32({5}), i64({1}, {100}), i64({1}, {1}), i64({1}, {0}),
                                                i64({1}, {-1})}});
  expect_near(rev2[0], f32({3}, {4, 3, 2}));
  auto empty = run_op({.op = "Slice", .inputs = {iota_f32({5}), i64({1}, {20}), i64({1}, {30})}});
  EXPECT_EQ(dims_to_string(empty[0].dims()), "0");
  EXPECT_THROW(run_op({.op = "Slice", .inputs = {iota_f32({5}), i64({1}, {0}), i64({1}, {3}), i64({1}, {0}),
                                                 i64({1}, {0})}}),
               Error);
}

TEST(TensorConcat, SliceAttributesBeforeOpset10) {
  AttrMap attrs{{"starts", Attribute::of_ints({1})}, {"ends", Attribute::of_ints({1000})},
                {"axes", Attribute::of_ints({1})}};
  auto out = run_op({.op = "Slice", .inputs = {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}, .attrs = attrs, .opset = 9});
  expect_near(out[0], f32({2, 3}, {2, 3, 4, 6, 7, 8}));
}

TEST(TensorConcat, SliceInference) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {-1, 10}, true});
  Value* s = g.add_constant("s", i64({1}, {2}));
  Value* e = g.add_constant("e", i64({1}, {-1}));
  Value* ax = g.add_constant("a", i64({1}, {1}));
  Node* n = g.add_node("Slice", {x, s, e, ax}, {"y"}, {}, "node");
  infer_node(*n, 17);
  EXPECT_EQ(n->outputs[0]->type.to_string(), "f32[?x7]");
  // Non-constant ends: only the sliced axis becomes unknown.
  Value* e2 = g.add_input("e2", {DType::I64, {1}, true});
  Value* c = g.add_input("c", {DType::F32, {4, 10}, true});
  Node* m = g.add_node("Slice", {c, s, e2, ax}, {"z"}, {}, "node2");
  infer_node(*m, 17);
  EXPECT_EQ(m->outputs[0]->type.to_string(), "f32[4x?]");
}

}  // namespace tessera::testing
