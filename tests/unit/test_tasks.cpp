// Tasks, kernels and plans: blocks computing the same program share a key
// (node and value names aside) and one kernel; anything that changes the
// program changes the key; compiling runs no kernel unless a shape depends
// on a value; schedule providers come before the default rule; compiling
// on several threads gives the same plan as on one.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>

#include "compile/task.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "support/artifact.h"
#include "runtime/executor.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "random_tensor.h"

namespace tessera::runtime {
namespace {

using tessera::testing::random_f32;

// x -> [Conv(w_i) -> Relu] x layers, every layer 16 -> 16 channels on 8x8.
std::unique_ptr<Graph> conv_stack(int layers, const std::string& prefix = "l", int64_t last_kernel = 3,
                                  int64_t stride = 1, int64_t batch = 1) {
  auto g = std::make_unique<Graph>();
  Value* v = g->add_input("x", {DType::F32, {batch, 16, 8, 8}, true});
  for (int i = 0; i < layers; ++i) {
    int64_t k = i + 1 == layers ? last_kernel : 3;
    AttrMap a;
    a["pads"] = Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
    if (stride != 1) a["strides"] = Attribute::of_ints({stride, stride});
    std::string n = prefix + std::to_string(i);
    Value* w = g->add_constant(n + ".w", random_f32({16, 16, k, k}, static_cast<uint32_t>(10 + i)));
    v = g->add_node("Conv", {v, w}, {n + ".c"}, a, n + ".conv")->outputs[0];
    v = g->add_node("Relu", {v}, {n + ".r"}, {}, n + ".relu")->outputs[0];
  }
  g->add_output(v);
  infer_graph(*g);
  return g;
}

compile::TaskInputs graph_types() {
  compile::TaskInputs in;
  in.type = [](const Value* v) { return v->type; };
  in.value = [](const Value* v) -> const Tensor* { return v->constant ? &*v->constant : nullptr; };
  return in;
}

compile::Task task_of(const Graph& g, std::vector<size_t> idx) {
  std::vector<const Node*> nodes;
  for (size_t i : idx) nodes.push_back(g.nodes()[i].get());
  return compile::build_task(g.opset, nodes, graph_types(), {nodes.back()->outputs[0]});
}

TEST(TaskKey, SameProgramSameKeyWhateverTheNames) {
  auto a = conv_stack(3, "a"), b = conv_stack(3, "other");
  // Layer 1 and layer 2 of one graph, and layer 1 of a graph named otherwise.
  compile::Task a1 = task_of(*a, {2, 3}), a2 = task_of(*a, {4, 5}), b1 = task_of(*b, {2, 3});
  EXPECT_EQ(a1.key, a2.key);
  EXPECT_EQ(a1.key, b1.key);
  EXPECT_NE(a1.name, b1.name);  // the kernel is still named after its node
  EXPECT_EQ(a1.params.size(), 2u);
  EXPECT_TRUE(a1.constant[1]);
  EXPECT_FALSE(a1.constant[0]);
}

TEST(TaskKey, AnythingThatChangesTheProgramChangesTheKey) {
  auto g = conv_stack(2, "l", 1);  // the last conv is 1x1
  compile::Task conv3 = task_of(*g, {0, 1}), conv1 = task_of(*g, {2, 3});
  EXPECT_NE(conv3.key, conv1.key);  // weight shape and pads
  compile::Task alone = task_of(*g, {0});
  EXPECT_NE(conv3.key, alone.key);  // without its Relu
  // An attribute: strides.
  EXPECT_NE(task_of(*conv_stack(1, "l", 3, 2), {0, 1}).key, task_of(*conv_stack(1), {0, 1}).key);
  // The input's type.
  EXPECT_NE(task_of(*conv_stack(1, "l", 3, 1, 2), {0, 1}).key, task_of(*conv_stack(1), {0, 1}).key);
  // A weight that is a graph input rather than a constant (not packable).
  auto w = std::make_unique<Graph>();
  Value* x = w->add_input("x", {DType::F32, {1, 16, 8, 8}, true});
  Value* wi = w->add_input("w", {DType::F32, {16, 16, 3, 3}, true});
  AttrMap a;
  a["pads"] = Attribute::of_ints({1, 1, 1, 1});
  w->add_output(w->add_node("Relu", {w->add_node("Conv", {x, wi}, {"c"}, a, "conv")->outputs[0]}, {"r"}, {}, "relu")->outputs[0]);
  infer_graph(*w);
  EXPECT_NE(task_of(*w, {0, 1}).key, task_of(*conv_stack(1), {0, 1}).key);
}

// NCHW convolutions (no blocked layout), profile cells of the fusion table not fused.
ExecutorOptions unfused_plain() {
  ExecutorOptions o;
  o.passes.disable("blocked-layout");
  o.fusion_profile = false;
  return o;
}

void expect_matches_reference(Executor& m, const std::vector<Tensor>& ins) {
  std::vector<Tensor> got = m.run(ins), want = interpret(m.graph(), ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      double a = got[i].get_double(k), b = want[i].get_double(k);
      ASSERT_NEAR(a, b, 1e-4 * (1 + std::abs(b))) << "output " << i << " element " << k;
    }
}

// Repeated layers: one kernel for all of them, each step with its own
// packed weights; the plan runs nothing while compiling.
TEST(PlanCompile, RepeatedLayersShareOneKernelAndNothingRuns) {
  Executor m(conv_stack(4), unfused_plain());
  expect_matches_reference(m, {random_f32({1, 16, 8, 8}, 1)});
  const Plan& p = *m.last_plan();
  EXPECT_EQ(p.nodes_run_when_compiling, 0);
  ASSERT_EQ(p.steps.size(), 4u) << m.report();  // Conv + Relu fused per layer
  for (const Step& st : p.steps) {
    EXPECT_EQ(st.task_key, p.steps[0].task_key);
    EXPECT_EQ(st.kernel, p.steps[0].kernel);  // the same compiled kernel
    ASSERT_EQ(st.packed.size(), 1u);
  }
  // Each layer packs its own weights.
  EXPECT_NE(std::memcmp(p.slots[static_cast<size_t>(p.steps[0].packed[0])].data.raw(),
                        p.slots[static_cast<size_t>(p.steps[1].packed[0])].data.raw(), 64),
            0);
}

// A Reshape whose shape is computed from a graph input's value: the nodes
// computing the shape run while compiling (and only they), and the plan is
// keyed by that input's value.
TEST(PlanCompile, OnlyValuesThatDecideShapesAreComputed) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {4, 6}, true});
  Value* s = g->add_input("s", {DType::I64, {2}, true});
  Value* e = g->add_node("Exp", {x}, {"e"}, {}, "exp")->outputs[0];
  Value* s2 = g->add_node("Mul", {s, g->add_constant("one", Tensor::scalar<int64_t>(1))}, {"s2"}, {}, "mul")->outputs[0];
  Value* r = g->add_node("Reshape", {e, s2}, {"r"}, {}, "reshape")->outputs[0];
  g->add_output(g->add_node("Relu", {r}, {"y"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  Executor m(std::move(g), unfused_plain());
  Tensor shape(DType::I64, {2});
  shape.data<int64_t>()[0] = 3;
  shape.data<int64_t>()[1] = 8;
  expect_matches_reference(m, {random_f32({4, 6}, 2), shape});
  const Plan& p = *m.last_plan();
  EXPECT_EQ(p.nodes_run_when_compiling, 1);  // the Mul, not the Exp
  EXPECT_EQ(p.value_inputs, std::vector<int>{1});
  EXPECT_EQ(p.slots[static_cast<size_t>(p.output_slots[0])].dims, (Dims{3, 8}));
}

// A provider's schedule is taken before the default rule.
class PlainFor final : public ScheduleProvider {
 public:
  explicit PlainFor(std::string op) : op_(std::move(op)) {}
  std::optional<schedule::Schedule> schedule_for(const compile::Task& t) const override {
    ++asked;
    if (t.nodes[0]->op_type != op_) return std::nullopt;
    return schedule::Schedule{};  // every stage at its plain loop nest
  }
  mutable std::atomic<int> asked{0};

 private:
  std::string op_;
};

TEST(PlanCompile, ScheduleProvidersComeBeforeTheDefault) {
  ExecutorOptions o = unfused_plain();
  o.fusion = false;
  auto provider = std::make_shared<PlainFor>("Conv");
  o.schedule_providers.push_back(provider);
  Executor m(conv_stack(2), o);
  expect_matches_reference(m, {random_f32({1, 16, 8, 8}, 3)});
  const Plan& p = *m.last_plan();
  EXPECT_EQ(provider->asked.load(), 2);  // one Conv task (two steps), one Relu task
  for (const Step& st : p.steps) {
    if (st.node->op_type == "Conv") EXPECT_TRUE(st.schedule.directives.empty()) << schedule::to_text(st.schedule);
    else EXPECT_FALSE(st.schedule.directives.empty());
  }
}

// Compiled on one thread or on four, the plan is the same step by step.
TEST(PlanCompile, ParallelCompilationGivesTheSamePlan) {
  auto compile_with = [](int threads) {
    ExecutorOptions o = unfused_plain();
    o.passes.disabled.clear();  // the blocked layout and Winograd too
    o.compile_threads = threads;
    auto m = std::make_unique<Executor>(conv_stack(3, "l", 1), o);
    m->prepare({random_f32({1, 16, 8, 8}, 4)});
    return m;
  };
  auto one = compile_with(1), four = compile_with(4);
  const Plan &a = *one->last_plan(), &b = *four->last_plan();
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].task_key, b.steps[i].task_key);
    EXPECT_EQ(schedule::to_text(a.steps[i].schedule), schedule::to_text(b.steps[i].schedule));
    EXPECT_EQ(a.steps[i].kernel->loop_ir(), b.steps[i].kernel->loop_ir());
  }
  std::vector<Tensor> in{random_f32({1, 16, 8, 8}, 5)};
  Tensor x = one->run(in)[0], y = four->run(in)[0];
  EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0);
}

// An artifact saves each task's schedule once, under its key, and every
// step's task key; one of an earlier format is refused with what to do.
TEST(PlanCompile, ArtifactsKeySchedulesByTask) {
  ExecutorOptions o = unfused_plain();
  auto m = std::make_unique<Executor>(conv_stack(3), o);
  std::vector<Tensor> in{random_f32({1, 16, 8, 8}, 6)};
  Tensor first = m->run(in)[0];
  std::string path = ::testing::TempDir() + "/tasks.tsr";
  m->save(path);
  Artifact a = load_artifact(path);
  int schedules = 0;
  for (size_t k = 0; k < 3; ++k) {
    std::string step = "plan.0.step." + std::to_string(k) + ".";
    ASSERT_TRUE(a.sections.count(step + "task"));
    EXPECT_EQ(a.sections.at(step + "task"), compile::key_text(m->last_plan()->steps[k].task_key));
    schedules += static_cast<int>(a.sections.count(step + "schedule"));
  }
  EXPECT_EQ(schedules, 1);  // three steps, one task
  auto l = Executor::load(path, ExecutorOptions{}, true);
  Tensor again = l->run(in)[0];
  EXPECT_EQ(std::memcmp(again.raw(), first.raw(), first.nbytes()), 0);
  for (const Step& st : l->last_plan()->steps)
    EXPECT_EQ(schedule::to_text(st.schedule), schedule::to_text(m->last_plan()->steps[0].schedule));

  a.sections["kind"] = "tessera compiled model 1";
  save_artifact(a, path);
  try {
    Executor::load(path, ExecutorOptions{}, true);
    FAIL() << "an artifact of format 1 loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compile the model again"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::runtime
