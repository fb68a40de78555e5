// Shape-only ops: Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Identity.
#include "ops/op_test_util.h"
#include "opt/passes.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
// Infers one node whose input 0 has a partly unknown static type; inputs
// after 0 are constants.
TensorType infer_partial(const std::string& op, TensorType in0, std::vector<Tensor> consts, AttrMap attrs = {},
                         int64_t opset = 17) {
  Graph g;
  g.opset = opset;
  std::vector<Value*> ins{g.add_input("x", in0)};
  for (size_t i = 0; i < consts.size(); ++i)
    ins.push_back(consts[i].defined() ? g.add_constant("c" + std::to_string(i), consts[i]) : nullptr);
  Node* n = g.add_node(op, ins, {"y"}, attrs, "node");
  infer_node(*n, g.opset);
  return n->outputs[0]->type;
}
Tensor iota_f32(Dims d) {
  Tensor t(DType::F32, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(TensorShape, ReshapeZeroCopiesAndMinusOneInfers) {
  auto out = run_op({.op = "Reshape", .inputs = {iota_f32({2, 3, 4}), i64({3}, {0, -1, 2})}, .constant_inputs = {1}});
  expect_near(out[0], iota_f32({2, 6, 2}));
}

TEST(TensorShape, ReshapeAllowZeroKeepsZeroDim) {
  auto out = run_op({.op = "Reshape",
                     .inputs = {Tensor(DType::F32, {0, 3}), i64({3}, {3, 0, 1})},
                     .attrs = {{"allowzero", Attribute::of_int(1)}},
                     .opset = 14});
  EXPECT_EQ(dims_to_string(out[0].dims()), "3x0x1");
}

TEST(TensorShape, ReshapeInfersExactDimsFromConstantShape) {
  auto t = infer_op({.op = "Reshape", .inputs = {iota_f32({2, 3, 4}), i64({2}, {-1, 4})}, .constant_inputs = {1}});
  EXPECT_EQ(t[0].to_string(), "f32[6x4]");
  // Unknown batch dim: 0 copies it (unknown), -1 cannot be resolved.
  TensorType p = infer_partial("Reshape", {DType::F32, {-1, 3, 4}, true}, {i64({2}, {0, 12})});
  EXPECT_EQ(p.to_string(), "f32[?x12]");
  TensorType q = infer_partial("Reshape", {DType::F32, {-1, 3, 4}, true}, {i64({2}, {-1, 12})});
  EXPECT_EQ(q.to_string(), "f32[?x12]");
}

TEST(TensorShape, ReshapeRejectsBadShapes) {
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota_f32({2, 3}), i64({2}, {4, 2})}}), Error);
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota_f32({2, 3}), i64({2}, {-1, -1})}}), Error);
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota_f32({2, 3}), i64({2}, {-1, 4})}}), Error);
}

TEST(TensorShape, ReshapeMovesStringsAndBools) {
  Tensor s(DType::String, {2, 2});
  s.strings() = {"a", "b", "c", "d"};
  auto out = run_op({.op = "Reshape", .inputs = {s, i64({1}, {4})}});
  ASSERT_EQ(dims_to_string(out[0].dims()), "4");
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"a", "b", "c", "d"}));
  auto b = run_op({.op = "Reshape", .inputs = {Tensor::from<bool>({2}, {true, false}), i64({2}, {1, 2})}});
  EXPECT_EQ(dims_to_string(b[0].dims()), "1x2");
  EXPECT_TRUE(b[0].data<bool>()[0]);
  EXPECT_FALSE(b[0].data<bool>()[1]);
}

TEST(TensorShape, FlattenAxes) {
  auto out = run_op({.op = "Flatten", .inputs = {iota_f32({2, 3, 4})}, .attrs = {{"axis", Attribute::of_int(2)}}});
  expect_near(out[0], iota_f32({6, 4}));
  auto a0 = infer_op({.op = "Flatten", .inputs = {iota_f32({2, 3, 4})}, .attrs = {{"axis", Attribute::of_int(0)}}});
  EXPECT_EQ(a0[0].to_string(), "f32[1x24]");
  auto neg = infer_op({.op = "Flatten", .inputs = {iota_f32({2, 3, 4})}, .attrs = {{"axis", Attribute::of_int(-1)}}});
  EXPECT_EQ(neg[0].to_string(), "f32[6x4]");
  TensorType p = infer_partial("Flatten", {DType::F32, {-1, 3, 4}, true}, {});
  EXPECT_EQ(p.to_string(), "f32[?x12]");
  EXPECT_THROW(run_op({.op = "Flatten", .inputs = {iota_f32({2, 3})}, .attrs = {{"axis", Attribute::of_int(3)}}}),
               Error);
}

TEST(TensorShape, SqueezeWithAndWithoutAxes) {
  auto all = run_op({.op = "Squeeze", .inputs = {iota_f32({1, 3, 1, 2})}});
  expect_near(all[0], iota_f32({3, 2}));
  auto one = run_op({.op = "Squeeze", .inputs = {iota_f32({1, 3, 1, 2}), i64({1}, {-2})}, .constant_inputs = {1}});
  expect_near(one[0], iota_f32({1, 3, 2}));
  // Opset 11: axes is an attribute.
  auto attr = run_op({.op = "Squeeze", .inputs = {iota_f32({1, 3})}, .attrs = {{"axes", Attribute::of_ints({0})}},
                      .opset = 11});
  expect_near(attr[0], iota_f32({3}));
  EXPECT_THROW(run_op({.op = "Squeeze", .inputs = {iota_f32({2, 3}), i64({1}, {0})}}), Error);
  // No axes and an unknown dim: the rank cannot be known.
  TensorType p = infer_partial("Squeeze", {DType::F32, {-1, 1}, true}, {});
  EXPECT_FALSE(p.rank_known);
}

TEST(TensorShape, UnsqueezeInsertsOnes) {
  auto out = run_op({.op = "Unsqueeze", .inputs = {iota_f32({3, 4}), i64({2}, {-1, 0})}, .constant_inputs = {1}});
  expect_near(out[0], iota_f32({1, 3, 4, 1}));
  auto mid = run_op({.op = "Unsqueeze", .inputs = {iota_f32({3, 4})}, .attrs = {{"axes", Attribute::of_ints({1})}},
                     .opset = 11});
  expect_near(mid[0], iota_f32({3, 1, 4}));
  auto scalar = run_op({.op = "Unsqueeze", .inputs = {f32({}, {7}), i64({1}, {0})}});
  expect_near(scalar[0], f32({1}, {7}));
  EXPECT_THROW(run_op({.op = "Unsqueeze", .inputs = {iota_f32({3}), i64({2}, {0, 0})}}), Error);
  EXPECT_THROW(run_op({.op = "Unsqueeze", .inputs = {iota_f32({3}), i64({1}, {2})}}), Error);
}

TEST(TensorShape, ShapeWithStartEnd) {
  Tensor x = iota_f32({2, 3, 4, 5});
  auto all = run_op({.op = "Shape", .inputs = {x}});
  expect_near(all[0], i64({4}, {2, 3, 4, 5}));
  auto part = run_op({.op = "Shape", .inputs = {x},
                      .attrs = {{"start", Attribute::of_int(1)}, {"end", Attribute::of_int(-1)}}, .opset = 15});
  expect_near(part[0], i64({2}, {3, 4}));
  auto clip = run_op({.op = "Shape", .inputs = {x},
                      .attrs = {{"start", Attribute::of_int(-10)}, {"end", Attribute::of_int(10)}}, .opset = 15});
  expect_near(clip[0], i64({4}, {2, 3, 4, 5}));
  auto empty = run_op({.op = "Shape", .inputs = {x},
                       .attrs = {{"start", Attribute::of_int(3)}, {"end", Attribute::of_int(1)}}, .opset = 15});
  EXPECT_EQ(dims_to_string(empty[0].dims()), "0");
}

TEST(TensorShape, SizeAndIdentity) {
  auto s = run_op({.op = "Size", .inputs = {iota_f32({2, 3, 4})}});
  expect_near(s[0], i64({}, {24}));
  auto id = run_op({.op = "Identity", .inputs = {Tensor::from<int32_t>({2}, {5, -6})}});
  expect_near(id[0], Tensor::from<int32_t>({2}, {5, -6}));
}

TEST(TensorShape, ShapeChainFoldsToExactReshape) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) on x: f32[2x3x4].
  Graph g;
  g.opset = 17;
  Value* x = g.add_input("x", {DType::F32, {2, 3, 4}, true});
  Node* shape = g.add_node("Shape", {x}, {"s"});
  Node* gather = g.add_node("Gather", {shape->outputs[0], g.add_constant("i", i64({}, {0}))}, {"b"});
  Node* unsq = g.add_node("Unsqueeze", {gather->outputs[0], g.add_constant("ax", i64({1}, {0}))}, {"b1"});
  Node* cat = g.add_node("Concat", {unsq->outputs[0], g.add_constant("m1", i64({1}, {-1}))}, {"dims"},
                         {{"axis", Attribute::of_int(0)}});
  Node* reshape = g.add_node("Reshape", {x, cat->outputs[0]}, {"y"});
  g.add_output(reshape->outputs[0]);
  fold_constants(g);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->op_type, "Reshape");
  ASSERT_TRUE(g.nodes()[0]->inputs[1]->is_constant());
  expect_near(*g.nodes()[0]->inputs[1]->constant, i64({2}, {2, -1}));
  EXPECT_EQ(g.outputs()[0]->type.to_string(), "f32[2x12]");
}

}  // namespace tessera::testing
