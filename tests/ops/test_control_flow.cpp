// If, Loop and Scan with small hand-built bodies.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {

using GraphPtr = std::shared_ptr<Graph>;

// A body graph value reading the enclosing scope's `name`.
Value* capture(Graph& g, const std::string& name) {
  Value* v = g.add_value(name);
  v->type.rank_known = false;
  g.captures.push_back(v);
  return v;
}

Tensor bool_scalar(bool b) { return Tensor::from<bool>({}, {b}); }

// then: x + x; else: x + [10, 10] — both read the enclosing graph's "x".
AttrMap if_branches() {
  auto tb = std::make_shared<Graph>();
  Value* x = capture(*tb, "x");
  tb->add_output(tb->add_node("Add", {x, x}, {"t"})->outputs[0]);
  auto eb = std::make_shared<Graph>();
  Value* y = capture(*eb, "x");
  Value* ten = eb->add_constant("ten", f32({2}, {10, 10}));
  eb->add_output(eb->add_node("Add", {y, ten}, {"e"})->outputs[0]);
  return {{"then_branch", Attribute::of_graph(tb)}, {"else_branch", Attribute::of_graph(eb)}};
}

// Loop body: (i, cond, y) -> (cond', y + 1, y + 1) where cond' = i < limit
// (or cond passed through when limit < 0).
GraphPtr counting_body(int64_t limit) {
  auto b = std::make_shared<Graph>();
  Value* i = b->add_input("i", {DType::I64, {}, true});
  Value* cond = b->add_input("cond", {DType::Bool, {}, true});
  Value* y = b->add_input("y", {DType::F32, {1}, true});
  Value* one = b->add_constant("one", f32({1}, {1}));
  Value* cond_out = cond;
  if (limit >= 0) cond_out = b->add_node("Less", {i, b->add_constant("lim", i64({}, {limit}))}, {"c"})->outputs[0];
  Value* y1 = b->add_node("Add", {y, one}, {"y1"})->outputs[0];
  y1->type = {DType::F32, {1}, true};  // declared, as the importer records body outputs
  b->add_output(cond_out);
  b->add_output(y1);
  b->add_output(y1);
  return b;
}

// Scan body: (sum, x) -> (sum + x, sum + x).
GraphPtr sum_body(Dims slice) {
  auto b = std::make_shared<Graph>();
  Value* s = b->add_input("s", {DType::F32, slice, true});
  Value* x = b->add_input("x", {DType::F32, slice, true});
  Value* o = b->add_node("Add", {s, x}, {"o"})->outputs[0];
  b->add_output(o);
  b->add_output(o);
  return b;
}

// A graph (cond, x) -> If(cond) whose branches read x, run on the given values.
std::vector<Tensor> run_if(bool cond, const Tensor& x, int num_outputs = 1) {
  Graph g;
  g.opset = 17;
  Value* c = g.add_input("cond", {DType::Bool, {}, true});
  g.add_input("x", {x.dtype(), x.dims(), true});
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  Node* n = g.add_node("If", {c}, outs, if_branches(), "if");
  for (Value* o : n->outputs) g.add_output(o);
  infer_graph(g);
  return interpret(g, {bool_scalar(cond), x});
}

}  // namespace

TEST(If, RunsTheChosenBranchWithCaptures) {
  Tensor x = f32({2}, {1, 2});
  expect_near(run_if(true, x)[0], f32({2}, {2, 4}));
  expect_near(run_if(false, x)[0], f32({2}, {11, 12}));
}

TEST(If, OutputTypeMergesBranches) {
  auto tb = std::make_shared<Graph>();
  tb->add_output(tb->add_constant("a", f32({2}, {1, 2})));
  auto eb = std::make_shared<Graph>();
  eb->add_output(eb->add_constant("b", f32({3}, {1, 2, 3})));
  AttrMap attrs = {{"then_branch", Attribute::of_graph(tb)}, {"else_branch", Attribute::of_graph(eb)}};
  auto types = infer_op({.op = "If", .inputs = {bool_scalar(true)}, .attrs = attrs});
  EXPECT_EQ(types[0].dims, (Dims{-1}));
  auto out = run_op({.op = "If", .inputs = {bool_scalar(false)}, .attrs = attrs});
  expect_near(out[0], f32({3}, {1, 2, 3}));
  // A constant condition picks the branch statically.
  auto known = infer_op({.op = "If", .inputs = {bool_scalar(false)}, .attrs = attrs, .constant_inputs = {0}});
  EXPECT_EQ(known[0].dims, (Dims{3}));
}

TEST(If, BranchOutputCountMismatchThrows) {
  EXPECT_THROW(run_if(true, f32({2}, {1, 2}), 2), tessera::Error);
}

TEST(Loop, TripCountWithScanOutput) {
  auto out = run_op({.op = "Loop", .inputs = {i64({}, {3}), bool_scalar(true), f32({1}, {0})},
                     .attrs = {{"body", Attribute::of_graph(counting_body(-1))}}, .num_outputs = 2});
  expect_near(out[0], f32({1}, {3}));
  expect_near(out[1], f32({3, 1}, {1, 2, 3}));
}

TEST(Loop, ConditionStopsEarly) {
  // cond' = i < 2 is false after iteration i = 2: three iterations of ten allowed.
  auto out = run_op({.op = "Loop", .inputs = {i64({}, {10}), bool_scalar(true), f32({1}, {0})},
                     .attrs = {{"body", Attribute::of_graph(counting_body(2))}}, .num_outputs = 2});
  expect_near(out[0], f32({1}, {3}));
  expect_near(out[1], f32({3, 1}, {1, 2, 3}));
  // Without M it is a while loop.
  auto w = run_op({.op = "Loop", .inputs = {Tensor(), bool_scalar(true), f32({1}, {5})},
                   .attrs = {{"body", Attribute::of_graph(counting_body(0))}}, .num_outputs = 2});
  expect_near(w[0], f32({1}, {6}));
}

TEST(Loop, ZeroIterationsAndInference) {
  auto out = run_op({.op = "Loop", .inputs = {i64({}, {4}), bool_scalar(false), f32({1}, {7})},
                     .attrs = {{"body", Attribute::of_graph(counting_body(-1))}}, .num_outputs = 2});
  expect_near(out[0], f32({1}, {7}));
  EXPECT_EQ(out[1].dims(), (Dims{0, 1}));
  // With a constant M and no condition, the scan length is known.
  auto t = infer_op({.op = "Loop", .inputs = {i64({}, {4}), Tensor(), f32({1}, {7})},
                     .attrs = {{"body", Attribute::of_graph(counting_body(-1))}}, .num_outputs = 2,
                     .constant_inputs = {0}});
  EXPECT_EQ(t[1].dims, (Dims{4, 1}));
}

TEST(Loop, NeitherTripCountNorConditionThrows) {
  EXPECT_THROW(run_op({.op = "Loop", .inputs = {Tensor(), Tensor(), f32({1}, {0})},
                       .attrs = {{"body", Attribute::of_graph(counting_body(-1))}}, .num_outputs = 2}),
               tessera::Error);
}

TEST(Scan, ForwardSum) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto out = run_op({.op = "Scan", .inputs = {f32({2}, {0, 0}), x},
                     .attrs = {{"body", Attribute::of_graph(sum_body({2}))}, {"num_scan_inputs", Attribute::of_int(1)}},
                     .num_outputs = 2, .opset = 11});
  expect_near(out[0], f32({2}, {9, 12}));
  expect_near(out[1], f32({3, 2}, {1, 2, 4, 6, 9, 12}));
}

TEST(Scan, DirectionsAndAxes) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  AttrMap base = {{"body", Attribute::of_graph(sum_body({2}))}, {"num_scan_inputs", Attribute::of_int(1)}};
  AttrMap rev_in = base;
  rev_in["scan_input_directions"] = Attribute::of_ints({1});
  auto a = run_op({.op = "Scan", .inputs = {f32({2}, {0, 0}), x}, .attrs = rev_in, .num_outputs = 2, .opset = 11});
  expect_near(a[1], f32({3, 2}, {5, 6, 8, 10, 9, 12}));
  AttrMap rev_out = base;
  rev_out["scan_output_directions"] = Attribute::of_ints({1});
  auto b = run_op({.op = "Scan", .inputs = {f32({2}, {0, 0}), x}, .attrs = rev_out, .num_outputs = 2, .opset = 11});
  expect_near(b[1], f32({3, 2}, {9, 12, 4, 6, 1, 2}));
  // Scan the columns of a 2x3 input and write the outputs as columns.
  AttrMap axes = {{"body", Attribute::of_graph(sum_body({2}))}, {"num_scan_inputs", Attribute::of_int(1)},
                  {"scan_input_axes", Attribute::of_ints({1})}, {"scan_output_axes", Attribute::of_ints({-1})}};
  auto c = run_op({.op = "Scan", .inputs = {f32({2}, {0, 0}), f32({2, 3}, {1, 3, 5, 2, 4, 6})}, .attrs = axes,
                   .num_outputs = 2, .opset = 11});
  expect_near(c[0], f32({2}, {9, 12}));
  expect_near(c[1], f32({2, 3}, {1, 4, 9, 2, 6, 12}));
}

TEST(Scan, Opset8BatchedWithSequenceLengths) {
  // Batch of 2, sequences of length 2; the second entry only runs one step.
  Tensor init = f32({2, 1}, {0, 100});
  Tensor x = f32({2, 2, 1}, {1, 2, 3, 4});
  AttrMap attrs = {{"body", Attribute::of_graph(sum_body({1}))}, {"num_scan_inputs", Attribute::of_int(1)}};
  auto out = run_op({.op = "Scan", .inputs = {Tensor::from<int32_t>({2}, {2, 1}), init, x}, .attrs = attrs,
                     .num_outputs = 2, .opset = 8});
  expect_near(out[0], f32({2, 1}, {3, 103}));
  expect_near(out[1], f32({2, 2, 1}, {1, 3, 103, 0}));
}

TEST(Scan, MismatchedLengthsThrow) {
  auto b = std::make_shared<Graph>();
  Value* s = b->add_input("s", {DType::F32, {}, true});
  Value* x = b->add_input("x", {DType::F32, {}, true});
  Value* y = b->add_input("y", {DType::F32, {}, true});
  b->add_output(b->add_node("Add", {s, x}, {"o"})->outputs[0]);
  (void)y;
  EXPECT_THROW(run_op({.op = "Scan", .inputs = {f32({}, {0}), f32({2}, {1, 2}), f32({3}, {1, 2, 3})},
                       .attrs = {{"body", Attribute::of_graph(b)}, {"num_scan_inputs", Attribute::of_int(2)}},
                       .opset = 11}),
               tessera::Error);
}

}  // namespace tessera::testing
