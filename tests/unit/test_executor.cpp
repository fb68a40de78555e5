// The compiled runtime against the reference interpreter on small graphs:
// elementwise chains, value inputs that change the plan, compiled and
// reference steps mixed, multi-output nodes, outputs that are also consumed,
// inputs and constants as outputs; the memory plan; signature errors; packed
// weights and artifacts that keep schedules and packed weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "interp/interpreter.h"
#include "opexpr/expr_registry.h"
#include "support/artifact.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "random_tensor.h"

namespace tessera::runtime {
namespace {

using tessera::testing::random_f32;

bool has_expr(const std::string& op) {
  const ExprDef* d = expr_registry().find(op);
  return d && d->expr;
}

// Compares every output with the interpreter's (relative 1e-5: JIT math
// functions may differ from the reference kernels by an ulp or so).
void expect_matches_reference(Executor& m, const std::vector<Tensor>& ins) {
  std::vector<Tensor> got = m.run(ins);
  std::vector<Tensor> want = interpret(m.graph(), ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(got[i].dtype(), want[i].dtype());
    ASSERT_EQ(got[i].dims(), want[i].dims());
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      double a = got[i].get_double(k), b = want[i].get_double(k);
      ASSERT_NEAR(a, b, 1e-5 * (1 + std::abs(b))) << "element " << k;
    }
  }
}

// Fusion off: these tests look at one step per node (fusion has test_fusion.cpp).
// Without the blocked layout, convolutions stay NCHW nodes whose schedules
// pack their weights (the blocked layout has test_blocked_layout.cpp).
std::unique_ptr<Executor> make(std::unique_ptr<Graph> g, bool blocked_layout = true) {
  infer_graph(*g);
  ExecutorOptions o;
  o.fusion = false;
  if (!blocked_layout) o.passes.disable("blocked-layout");
  return std::make_unique<Executor>(std::move(g), o);
}

TEST(Executor, ElementwiseChain) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {4, 8}, true});
  Value* y = g->add_input("y", {DType::F32, {4, 8}, true});
  Value* w = g->add_constant("w", random_f32({8}, 1));
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];
  Value* b = g->add_node("Exp", {a}, {"b"}, {}, "exp")->outputs[0];
  Value* c = g->add_node("Add", {b, w}, {"c"}, {}, "add")->outputs[0];
  Value* d = g->add_node("Mul", {c, y}, {"d"}, {}, "mul")->outputs[0];
  Value* e = g->add_node("Sigmoid", {d}, {"e"}, {}, "sigmoid")->outputs[0];
  Value* f = g->add_node("Sub", {e, x}, {"f"}, {}, "sub")->outputs[0];
  g->add_output(f);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({4, 8}, 2), random_f32({4, 8}, 3)});
  std::shared_ptr<const Plan> p = m->last_plan();
  ASSERT_TRUE(p);
  int want_compiled = 0;
  for (const char* op : {"Relu", "Exp", "Add", "Mul", "Sigmoid", "Sub"}) want_compiled += has_expr(op);
  EXPECT_EQ(p->compiled_steps, want_compiled);
  EXPECT_EQ(p->compiled_steps + p->reference_steps, 6);
  // Same shapes again: the plan is reused, the results are still right.
  expect_matches_reference(*m, {random_f32({4, 8}, 4), random_f32({4, 8}, 5)});
  EXPECT_EQ(m->plans_compiled(), 1);
  EXPECT_EQ(m->last_compile_seconds(), 0);
}

// Constant conv weights are packed once when the plan is traced: the packed
// copy is a Packed slot the kernel reads, and a run after the trace (packed
// weights reused, not re-packed) still matches the interpreter.
TEST(Executor, ConvWeightsArePackedOnce) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {1, 5, 9, 9}, true});
  Value* w = g->add_constant("w", random_f32({32, 5, 3, 3}, 7));
  AttrMap attrs;
  attrs["pads"] = Attribute::of_ints({1, 1, 1, 1});
  attrs["strides"] = Attribute::of_ints({2, 2});
  Value* y = g->add_node("Conv", {x, w}, {"y"}, attrs, "conv")->outputs[0];
  g->add_output(y);
  auto m = make(std::move(g), false);
  expect_matches_reference(*m, {random_f32({1, 5, 9, 9}, 8)});
  std::shared_ptr<const Plan> p = m->last_plan();
  ASSERT_TRUE(p);
  int packed = 0;
  for (const Slot& s : p->slots) packed += s.kind == SlotKind::Packed;
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(p->packed_bytes, 32 * 5 * 3 * 3 * 4);
  EXPECT_TRUE(p->steps[0].prepack);
  expect_matches_reference(*m, {random_f32({1, 5, 9, 9}, 9)});
  EXPECT_EQ(m->plans_compiled(), 1);
  EXPECT_NE(m->report().find("packed weights"), std::string::npos) << m->report();
}

// An artifact keeps every compiled step's schedule and packed weights:
// loading takes the packed weights as saved (no packing kernel runs) and
// lowers with the saved schedule, also one edited in the file.
TEST(Executor, ArtifactKeepsSchedulesAndPackedWeights) {
  auto build = [] {
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 5, 9, 9}, true});
    Value* w = g->add_constant("w", random_f32({32, 5, 3, 3}, 7));
    AttrMap attrs;
    attrs["pads"] = Attribute::of_ints({1, 1, 1, 1});
    g->add_output(g->add_node("Conv", {x, w}, {"y"}, attrs, "conv")->outputs[0]);
    return g;
  };
  auto m = make(build(), false);
  std::vector<Tensor> ins{random_f32({1, 5, 9, 9}, 8)};
  std::vector<Tensor> first = m->run(ins);
  std::string path = ::testing::TempDir() + "/packed.tsr";
  m->save(path);

  auto l = Executor::load(path, ExecutorOptions{}, true);
  ASSERT_EQ(l->plans().size(), 1u);
  const Plan& p = *l->plans()[0];
  EXPECT_EQ(schedule::to_text(p.steps[0].schedule), schedule::to_text(m->last_plan()->steps[0].schedule));
  ASSERT_EQ(p.steps[0].packed.size(), 1u);
  EXPECT_FALSE(p.steps[0].prepack);  // packed weights read from the file, not packed again
  std::vector<Tensor> again = l->run(ins);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(std::memcmp(again[0].raw(), first[0].raw(), first[0].nbytes()), 0);

  // A schedule edited in the artifact (here: no steps, the plain loop nest) is the one lowered.
  Artifact a = load_artifact(path);
  ASSERT_TRUE(a.sections.count("plan.0.step.0.schedule"));
  a.sections["plan.0.step.0.schedule"] = "# plain\n";
  save_artifact(a, path);
  auto e = Executor::load(path, ExecutorOptions{}, true);
  ASSERT_EQ(e->plans().size(), 1u);
  EXPECT_TRUE(e->plans()[0]->steps[0].schedule.directives.empty());
  EXPECT_TRUE(e->plans()[0]->steps[0].packed.empty());
  expect_matches_reference(*e, ins);
}

// Input values a compiled kernel cannot judge are checked before it runs,
// with the reference kernel's error: out-of-range indices (Gather,
// GatherElements, GatherND, ScatterElements, ScatterND) and integer division
// or modulo by zero. The same plan serves the good inputs again afterwards.
TEST(Executor, BadIndexAndDivisorValuesAreClearErrors) {
  struct Case {
    const char* op;
    Tensor data, good, bad;
    const char* error;
  };
  auto i64 = [](Dims d, std::vector<int64_t> v) { return Tensor::from<int64_t>(d, v); };
  std::vector<Case> cases = {
      {"Gather", random_f32({5, 3}, 1), i64({2}, {4, -5}), i64({2}, {1, 5}), "out of range"},
      {"GatherElements", random_f32({4, 3}, 2), i64({2, 3}, {0, 3, -4, 1, 2, 3}),
       i64({2, 3}, {0, 3, -5, 1, 2, 3}), "out of range"},
      {"GatherND", random_f32({4, 3}, 3), i64({2, 2}, {3, 2, 0, -3}), i64({2, 2}, {3, 3, 0, 0}),
       "out of range"},
      {"ScatterElements", random_f32({4, 3}, 4), i64({1, 3}, {0, 3, -4}), i64({1, 3}, {4, 0, 0}),
       "out of range"},
      {"ScatterND", random_f32({4, 3}, 5), i64({2, 1}, {3, -4}), i64({2, 1}, {0, -5}), "out of range"},
      {"Div", i64({4}, {7, -8, 9, 10}), i64({4}, {2, 3, -4, 5}), i64({4}, {2, 0, -4, 5}),
       "integer division by zero"},
      {"Mod", i64({4}, {7, -8, 9, 10}), i64({4}, {2, 3, -4, 5}), i64({4}, {2, 3, 0, 5}),
       "integer modulo by zero"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const OpDef* def = op_registry().find(c.op);
    ASSERT_TRUE(def && def->value_check) << c.op << " has no value check";
    auto g = std::make_unique<Graph>();
    Value* d = g->add_constant("data", c.data);
    Value* idx = g->add_input("idx", {c.good.dtype(), c.good.dims(), true});
    std::vector<Value*> ins{d, idx};
    if (std::string(c.op).rfind("Scatter", 0) == 0) {
      Dims ud = c.good.dims();
      if (std::string(c.op) == "ScatterND") ud = {c.good.dim(0), c.data.dim(1)};
      ins.push_back(g->add_constant("updates", random_f32(ud, 9)));
    }
    g->add_output(g->add_node(c.op, ins, {"y"}, {}, "checked")->outputs[0]);
    auto m = make(std::move(g));
    expect_matches_reference(*m, {c.good});
    ASSERT_TRUE(m->last_plan()->steps[0].compiled) << c.op << " ran its reference kernel";
    try {
      m->run({c.bad});
      FAIL() << c.op << ": bad values ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'checked'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
    EXPECT_THROW(interpret(m->graph(), {c.bad}), Error);  // the reference agrees
    expect_matches_reference(*m, {c.good});
    EXPECT_EQ(m->plans_compiled(), 1);
  }
}

TEST(Executor, OutputsAreFreshEveryRun) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {3}, true});
  g->add_output(g->add_node("Relu", {x}, {"r"}, {}, "relu")->outputs[0]);
  auto m = make(std::move(g));
  Tensor in = Tensor::from<float>({3}, {-1, 2, 3});
  std::vector<Tensor> a = m->run({in});
  a[0].data<float>()[1] = 100;
  std::vector<Tensor> b = m->run({in});
  EXPECT_EQ(b[0].data<float>()[1], 2);
  EXPECT_NE(a[0].raw(), b[0].raw());
}

TEST(Executor, ReshapeShapeFromGraphInputReplans) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 6}, true});
  Value* s = g->add_input("s", {DType::I64, {2}, true});
  Value* r = g->add_node("Reshape", {x, s}, {"r"}, {}, "reshape")->outputs[0];
  Value* y = g->add_node("Relu", {r}, {"y"}, {}, "relu")->outputs[0];
  g->add_output(g->add_node("Exp", {y}, {"z"}, {}, "exp")->outputs[0]);
  auto m = make(std::move(g));
  Tensor xin = random_f32({2, 6}, 7);
  expect_matches_reference(*m, {xin, Tensor::from<int64_t>({2}, {3, 4})});
  EXPECT_EQ(m->run({xin, Tensor::from<int64_t>({2}, {3, 4})})[0].dims(), (Dims{3, 4}));
  ASSERT_EQ(m->last_plan()->value_inputs, std::vector<int>{1});
  expect_matches_reference(*m, {xin, Tensor::from<int64_t>({2}, {4, 3})});
  EXPECT_EQ(m->run({xin, Tensor::from<int64_t>({2}, {4, 3})})[0].dims(), (Dims{4, 3}));
  EXPECT_EQ(m->plans_compiled(), 2);
  // Back to the first shape: its plan is still cached.
  expect_matches_reference(*m, {random_f32({2, 6}, 8), Tensor::from<int64_t>({2}, {3, 4})});
  EXPECT_EQ(m->plans_compiled(), 2);
  // A different value of x alone does not re-plan.
  expect_matches_reference(*m, {random_f32({2, 6}, 9), Tensor::from<int64_t>({2}, {4, 3})});
  EXPECT_EQ(m->plans_compiled(), 2);
}

TEST(Executor, DynamicInputShapesGetOnePlanEach) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {-1, 4}, true});
  Value* w = g->add_constant("w", random_f32({4}, 11));
  Value* a = g->add_node("Add", {x, w}, {"a"}, {}, "add")->outputs[0];
  g->add_output(g->add_node("Tanh", {a}, {"t"}, {}, "tanh")->outputs[0]);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({2, 4}, 1)});
  expect_matches_reference(*m, {random_f32({5, 4}, 2)});
  expect_matches_reference(*m, {random_f32({0, 4}, 3)});
  EXPECT_EQ(m->plans_compiled(), 3);
  EXPECT_EQ(m->plans().size(), 3u);
  EXPECT_TRUE(m->last_plan()->value_inputs.empty());
}

// NonZero has no expression (its output shape depends on values): a
// reference step between compiled ones, and the plan keys on x's values.
TEST(Executor, CompiledAndReferenceStepsMix) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {3, 4}, true});
  Value* r = g->add_node("Relu", {x}, {"r"}, {}, "relu")->outputs[0];
  Value* nz = g->add_node("NonZero", {r}, {"nz"}, {}, "nonzero")->outputs[0];
  Value* e = g->add_node("Exp", {r}, {"e"}, {}, "exp")->outputs[0];
  g->add_output(nz);
  g->add_output(e);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({3, 4}, 21)});
  std::shared_ptr<const Plan> p = m->last_plan();
  EXPECT_GE(p->reference_steps, 1);
  bool nonzero_is_reference = false;
  for (const Step& st : p->steps)
    if (st.node->op_type == "NonZero") nonzero_is_reference = !st.compiled;
  if (!has_expr("NonZero")) {
    EXPECT_TRUE(nonzero_is_reference);
    EXPECT_EQ(p->value_inputs, std::vector<int>{0});
  }
  // Another x with a different number of positive elements.
  Tensor all_pos(DType::F32, {3, 4});
  for (float& v : all_pos.span<float>()) v = 1;
  expect_matches_reference(*m, {all_pos});
  EXPECT_EQ(m->run({all_pos})[0].dims(), (Dims{2, 12}));
}

TEST(Executor, MultiOutputNodes) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {4, 6}, true});
  Value* split = g->add_constant("split", Tensor::from<int64_t>({2}, {2, 4}));
  Node* sp = g->add_node("Split", {x, split}, {"p", "q"}, {{"axis", Attribute::of_int(1)}}, "split");
  Value* p = g->add_node("Relu", {sp->outputs[0]}, {"pr"}, {}, "relu")->outputs[0];
  Value* q = g->add_node("Exp", {sp->outputs[1]}, {"qe"}, {}, "exp")->outputs[0];
  Node* tk = g->add_node("TopK", {q, g->add_constant("k", Tensor::from<int64_t>({1}, {2}))}, {"tv", "ti"},
                         {{"axis", Attribute::of_int(1)}}, "topk");
  g->add_output(p);
  g->add_output(tk->outputs[0]);
  g->add_output(tk->outputs[1]);
  g->add_output(sp->outputs[1]);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({4, 6}, 31)});
}

TEST(Executor, OutputAlsoConsumedInputAndConstantAsOutputs) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 5}, true});
  Value* c = g->add_constant("c", random_f32({2, 5}, 41));
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];
  Value* b = g->add_node("Add", {a, c}, {"b"}, {}, "add")->outputs[0];
  Value* d = g->add_node("Mul", {b, a}, {"d"}, {}, "mul")->outputs[0];
  g->add_output(a);  // also read by Add and Mul
  g->add_output(d);
  g->add_output(x);  // a graph input
  g->add_output(c);  // a constant
  g->add_output(a);  // twice
  auto m = make(std::move(g));
  Tensor in = random_f32({2, 5}, 42);
  expect_matches_reference(*m, {in});
  std::vector<Tensor> out = m->run({in});
  // Outputs are the caller's own: not the input's or the constant's buffer.
  EXPECT_NE(out[2].raw(), in.raw());
  EXPECT_NE(out[3].raw(), m->graph().find_value("c")->constant->raw());
  out[2].data<float>()[0] = 1234;
  out[3].data<float>()[0] = 1234;
  expect_matches_reference(*m, {in});
}

// A one-to-one op that moves elements (a reversing Slice, a Pad that shifts
// by padding one end and cropping the other) must not overwrite its dying
// input in place: it reads elements the kernel has already written.
TEST(Executor, ElementMovingOpsAreNotInPlace) {
  auto ints = [](std::vector<int64_t> v) {
    Tensor t(DType::I64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return t;
  };
  for (const char* op : {"Slice", "Pad"}) {
    SCOPED_TRACE(op);
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {64}, true});
    Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];  // dies at the next step
    Value* y;
    if (std::string(op) == "Slice") {
      y = g->add_node("Slice", {a, g->add_constant("starts", ints({-1})), g->add_constant("ends", ints({-1000})),
                                g->add_constant("axes", ints({0})), g->add_constant("steps", ints({-1}))},
                      {"y"}, {}, "reverse")->outputs[0];
    } else {
      y = g->add_node("Pad", {a, g->add_constant("pads", ints({5, -5}))}, {"y"}, {}, "shift")->outputs[0];
    }
    g->add_output(g->add_node("Neg", {y}, {"z"}, {}, "neg")->outputs[0]);
    auto m = make(std::move(g));
    expect_matches_reference(*m, {random_f32({64}, 61)});
    EXPECT_EQ(m->last_plan()->arena_layout.inplace_honoured, 0);
  }
  // Elementwise steps still write over their dying input.
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {64}, true});
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];
  Value* b = g->add_node("Neg", {a}, {"b"}, {}, "neg")->outputs[0];
  g->add_output(g->add_node("Exp", {b}, {"c"}, {}, "exp")->outputs[0]);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({64}, 62)});
  EXPECT_EQ(m->last_plan()->arena_layout.inplace_honoured, 1);  // b over a (c is a graph output)
}

// The same inside a fused block: Concat(a, a) then a Slice rotating it has
// the size of its dying input a but reads a at other positions.
TEST(Executor, FusedBlocksThatMoveElementsAreNotInPlace) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {16}, true});
  Value* a = g->add_node("Relu", {x}, {"a"}, {}, "relu")->outputs[0];
  AttrMap ax;
  ax["axis"] = Attribute::of_int(0);
  Value* c = g->add_node("Concat", {a, a}, {"c"}, ax, "concat")->outputs[0];
  auto ints = [&](const std::string& name, int64_t v) {
    Tensor t(DType::I64, {1});
    t.data<int64_t>()[0] = v;
    return g->add_constant(name, t);
  };
  Value* y = g->add_node("Slice", {c, ints("s", 5), ints("e", 21)}, {"y"}, {}, "rotate")->outputs[0];
  g->add_output(g->add_node("Neg", {y}, {"z"}, {}, "neg")->outputs[0]);
  infer_graph(*g);
  std::vector<std::vector<int>> blocks{{0}, {1, 2}, {3}};
  std::vector<Tensor> ins{random_f32({16}, 63)};
  auto p = compile_plan(*g, ins, ExecutorOptions{}, nullptr, &blocks);
  ASSERT_EQ(p->fused_steps, 1);
  EXPECT_EQ(p->arena_layout.inplace_honoured, 0);
  std::vector<Tensor> got = run_plan(*g, *p, ins), want = interpret(*g, ins);
  for (int64_t k = 0; k < want[0].numel(); ++k) EXPECT_EQ(got[0].get_double(k), want[0].get_double(k)) << k;
}

// A timing run may stop after a step: the steps before it run (and are
// timed), none after it, no outputs are returned, and a whole run after it
// still computes the model.
TEST(Executor, RunStopsBeforeEndStep) {
  auto g = std::make_unique<Graph>();
  Value* v = g->add_input("x", {DType::F32, {64, 64}, true});
  const char* ops[] = {"Relu", "Exp", "Tanh", "Sigmoid"};
  for (int i = 0; i < 4; ++i) v = g->add_node(ops[i], {v}, {"v" + std::to_string(i)}, {}, ops[i])->outputs[0];
  g->add_output(v);
  infer_graph(*g);
  std::vector<std::vector<int>> blocks{{0}, {1}, {2}, {3}};
  std::vector<Tensor> ins{random_f32({64, 64}, 5)};
  auto p = compile_plan(*g, ins, ExecutorOptions{}, nullptr, &blocks);
  ASSERT_EQ(p->steps.size(), 4u);
  std::vector<double> seconds;
  EXPECT_TRUE(run_plan(*g, *p, ins, &seconds, 2).empty());
  ASSERT_EQ(seconds.size(), 4u);
  EXPECT_GT(seconds[0], 0.0);
  EXPECT_GT(seconds[1], 0.0);
  EXPECT_EQ(seconds[2], 0.0);
  EXPECT_EQ(seconds[3], 0.0);
  std::vector<Tensor> got = run_plan(*g, *p, ins), want = interpret(*g, ins);
  ASSERT_EQ(got.size(), 1u);
  for (int64_t k = 0; k < want[0].numel(); ++k) EXPECT_NEAR(got[0].get_double(k), want[0].get_double(k), 1e-5) << k;
}

TEST(Executor, MemoryPlanReusesTheArena) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {32, 32}, true});
  Value* v = x;
  const char* ops[] = {"Relu", "Exp", "Tanh", "Sigmoid", "Relu", "Exp", "Tanh", "Sigmoid", "Relu", "Tanh"};
  int i = 0;
  for (const char* op : ops) {
    v = g->add_node(op, {v}, {"v" + std::to_string(i)}, {}, "n" + std::to_string(i))->outputs[0];
    ++i;
  }
  // A branch that keeps an early value alive across the chain.
  Value* early = g->find_value("v1");
  g->add_output(g->add_node("Add", {v, early}, {"out"}, {}, "join")->outputs[0]);
  auto m = make(std::move(g));
  expect_matches_reference(*m, {random_f32({32, 32}, 51)});
  std::shared_ptr<const Plan> p = m->last_plan();
  int64_t sum = 0, largest = 0;
  for (const Slot& s : p->slots)
    if (s.kind == SlotKind::Arena) {
      sum += s.bytes;
      largest = std::max(largest, s.bytes);
    }
  EXPECT_EQ(sum, 10 * 32 * 32 * 4);  // v0..v9 (the output is not in the arena)
  EXPECT_EQ(p->arena_layout.total_bytes, sum);
  EXPECT_LE(p->arena_layout.arena_bytes, sum);
  EXPECT_GE(p->arena_layout.arena_bytes, p->arena_layout.lower_bound_bytes);
  EXPECT_GE(p->arena_layout.arena_bytes, 2 * largest);  // v1 and the current value are live together
  EXPECT_LE(p->arena_layout.arena_bytes, 3 * largest + 128);  // a chain needs only a few buffers
  EXPECT_NE(m->report().find("activation memory peak"), std::string::npos) << m->report();
  // Arena slots live at the same step never overlap.
  for (size_t a = 0; a < p->slots.size(); ++a)
    for (size_t b = a + 1; b < p->slots.size(); ++b) {
      const Slot &s = p->slots[a], &t = p->slots[b];
      if (s.kind != SlotKind::Arena || t.kind != SlotKind::Arena) continue;
      bool live_together = s.first_step <= t.last_step && t.first_step <= s.last_step;
      bool overlap = s.offset < t.offset + t.bytes && t.offset < s.offset + s.bytes;
      bool inplace = s.last_step == t.first_step || t.last_step == s.first_step;
      if (live_together && overlap) {
        EXPECT_TRUE(inplace) << "slots " << a << " and " << b;
      }
    }
}

TEST(Executor, SignatureErrorsNameTheInput) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("image", {DType::F32, {-1, 3}, true});
  g->add_output(g->add_node("Relu", {x}, {"r"}, {}, "relu")->outputs[0]);
  auto m = make(std::move(g));
  auto error_of = [&](const std::vector<Tensor>& ins) {
    try {
      m->run(ins);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string e = error_of({Tensor(DType::I64, {2, 3})});
  EXPECT_NE(e.find("input 'image' must have element type f32 but has i64"), std::string::npos) << e;
  e = error_of({Tensor(DType::F32, {2, 3, 1})});
  EXPECT_NE(e.find("input 'image' must have shape f32[?x3] but has 2x3x1"), std::string::npos) << e;
  e = error_of({Tensor(DType::F32, {2, 4})});
  EXPECT_NE(e.find("input 'image' must have shape f32[?x3] but has 2x4"), std::string::npos) << e;
  e = error_of({});
  EXPECT_NE(e.find("model expects 1 input(s) but 0 were given"), std::string::npos) << e;
  e = error_of({Tensor(DType::F32, {2, 3}), Tensor(DType::F32, {2, 3})});
  EXPECT_NE(e.find("model expects 1 input(s) but 2 were given"), std::string::npos) << e;
  expect_matches_reference(*m, {random_f32({7, 3}, 61)});
}

TEST(Executor, PlanCacheDropsLeastRecentlyUsed) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {-1}, true});
  g->add_output(g->add_node("Relu", {x}, {"r"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  ExecutorOptions o;
  o.max_plans = 2;
  Executor m(std::move(g), o);
  for (int64_t n : {1, 2, 3, 1}) m.run({random_f32({n}, 1)});
  EXPECT_EQ(m.plans().size(), 2u);
  EXPECT_EQ(m.plans_compiled(), 4);  // 1 was dropped when 3 came
  m.run({random_f32({3}, 1)});
  EXPECT_EQ(m.plans_compiled(), 4);
}

}  // namespace
}  // namespace tessera::runtime
