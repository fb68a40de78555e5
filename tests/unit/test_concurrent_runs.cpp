// Concurrent runs of one compiled model (issue 22): 8 threads running one
// model at once give outputs bit-identical to a serial run — ResNet-18 at a
// small input, a GPT-2-style decoder (attention), a plan with reference
// steps between compiled ones, and a model with a dynamic dimension run at
// several shapes at once; a plan for a new shape is compiled once however
// many threads ask for it together; arenas are reused, not allocated per
// run; and the accessors answer while runs proceed. Built also with
// ThreadSanitizer (see README, "Concurrency").
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstring>
#include <set>
#include <thread>

#include "driver/driver.h"
#include "runtime/executor.h"
#include "tessera/runtime.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::random_f32;

constexpr int kThreads = 8;

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Runs `run(inputs[k])` for every input set serially, then on kThreads
// threads at once, `rounds` runs each (thread t starts at set t, so sets
// interleave), and expects every concurrent result to equal the serial one
// bit for bit. `during` runs on one more thread while the runs go on.
template <class Run>
void expect_concurrent_equals_serial(Run run, const std::vector<std::vector<Tensor>>& inputs, int rounds,
                                     const std::function<void()>& during = {}) {
  std::vector<std::vector<Tensor>> serial;
  for (const auto& in : inputs) serial.push_back(run(in));
  std::atomic<int> mismatches{0}, errors{0}, finished{0};
  std::barrier start(kThreads + (during ? 1 : 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < rounds; ++r) {
        size_t k = static_cast<size_t>(t + r) % inputs.size();
        try {
          std::vector<Tensor> got = run(inputs[k]);
          bool same = got.size() == serial[k].size();
          for (size_t i = 0; same && i < got.size(); ++i) same = bit_identical(got[i], serial[k][i]);
          if (!same) ++mismatches;
        } catch (const std::exception& e) {
          ++errors;
          ADD_FAILURE() << "thread " << t << ": " << e.what();
        }
      }
      ++finished;
    });
  if (during) {
    start.arrive_and_wait();
    do during();  // at least once, however soon the runs end
    while (finished.load() < kThreads);
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

TEST(ConcurrentRuns, ResNet18MatchesSerial) {
  CompileOptions o;
  o.input_shapes["input"] = {1, 3, 64, 64};
  CompiledModel m = CompiledModel::compile("zoo:resnet18", o);
  std::vector<std::vector<Tensor>> inputs = {m.random_inputs(1), m.random_inputs(2), m.random_inputs(3)};
  // The accessors while runs proceed: each must answer for a complete plan.
  std::atomic<int> calls{0};
  auto accessors = [&] {
    std::string r = m.report();
    EXPECT_NE(r.find("plan 0"), std::string::npos);
    EXPECT_GT(m.peak_activation_bytes(), 0);
    EXPECT_GT(m.compiled_steps(), 0);
    EXPECT_EQ(m.reference_steps(), 0);
    EXPECT_GE(m.last_compile_seconds(), 0);
    ++calls;
  };
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 4, accessors);
  EXPECT_GT(calls.load(), 0);
}

TEST(ConcurrentRuns, AttentionModelMatchesSerial) {
  runtime::Executor m(load_model("zoo:gpt2_tiny"), {});
  std::vector<std::vector<Tensor>> inputs = {random_inputs(m.graph(), 1), random_inputs(m.graph(), 2)};
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 4);
  EXPECT_EQ(m.plans_compiled(), 1);
}

// NonZero (no expression: a reference step inside the compiled plan) between
// compiled steps; the plan keys on x's values, so different inputs make
// different plans, compiled while other threads run theirs.
TEST(ConcurrentRuns, ReferenceStepsInsideThePlanMatchSerial) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {16, 32}, true});
  Value* r = g->add_node("Relu", {x}, {"r"}, {}, "relu")->outputs[0];
  Value* nz = g->add_node("NonZero", {r}, {"nz"}, {}, "nonzero")->outputs[0];
  Value* e = g->add_node("Exp", {r}, {"e"}, {}, "exp")->outputs[0];
  Value* s = g->add_node("Softmax", {e}, {"s"}, {}, "softmax")->outputs[0];
  g->add_output(nz);
  g->add_output(s);
  infer_graph(*g);
  runtime::Executor m(std::move(g), {});
  std::vector<std::vector<Tensor>> inputs;
  for (uint32_t k = 0; k < 4; ++k) inputs.push_back({random_f32({16, 32}, 40 + k)});
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 6);
  ASSERT_GE(m.last_plan()->reference_steps, 1);
}

// A dynamic dimension: threads run four shapes at once (a plan each), an
// attention-like MatMul + Softmax + MatMul over the rows.
std::unique_ptr<Graph> dynamic_attention() {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {-1, 32}, true});
  Value* wq = g->add_constant("wq", random_f32({32, 32}, 5, -0.2f, 0.2f));
  Value* q = g->add_node("MatMul", {x, wq}, {"q"}, {}, "q")->outputs[0];
  AttrMap tr;
  tr["perm"] = Attribute::of_ints({1, 0});
  Value* xt = g->add_node("Transpose", {x}, {"xt"}, tr, "xt")->outputs[0];
  Value* scores = g->add_node("MatMul", {q, xt}, {"scores"}, {}, "scores")->outputs[0];
  Value* p = g->add_node("Softmax", {scores}, {"p"}, {}, "softmax")->outputs[0];
  g->add_output(g->add_node("MatMul", {p, x}, {"y"}, {}, "y")->outputs[0]);
  infer_graph(*g);
  return g;
}

TEST(ConcurrentRuns, DynamicShapesConcurrentlyMatchSerial) {
  runtime::Executor m(dynamic_attention(), {});
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t rows : {3, 8, 17, 64}) inputs.push_back({random_f32({rows, 32}, static_cast<uint32_t>(rows))});
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 6);
  EXPECT_EQ(m.plans_compiled(), 4);  // the serial pass compiled them; the concurrent runs found them
}

// Eight threads asking at the same moment for a shape no plan has: one
// compiles, the others wait for it and run it.
TEST(ConcurrentRuns, NewShapeIsCompiledOnce) {
  runtime::Executor m(dynamic_attention(), {});
  for (int64_t rows : {5, 9}) {
    const int64_t before = m.plans_compiled();
    Tensor x = random_f32({rows, 32}, 77);
    std::vector<Tensor> want;
    std::barrier start(kThreads);
    std::mutex mu;
    std::vector<std::vector<Tensor>> got;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        std::vector<Tensor> out = m.run({x});
        std::lock_guard<std::mutex> lock(mu);
        got.push_back(std::move(out));
      });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(m.plans_compiled(), before + 1) << rows << " rows";
    ASSERT_EQ(got.size(), static_cast<size_t>(kThreads));
    for (const auto& o : got) EXPECT_TRUE(bit_identical(o[0], got[0][0]));
  }
}

// The pool leases idle arenas before allocating, and keeps at most
// max_idle of them.
TEST(ArenaPool, ReusesIdleArenasUpToTheBound) {
  runtime::ArenaPool pool(3);
  auto hold = [&](int n) {
    std::vector<runtime::ArenaPool::Lease> leases;
    for (int i = 0; i < n; ++i) leases.push_back(pool.acquire(4096));
    std::set<uint8_t*> distinct;
    for (auto& l : leases) distinct.insert(l.data());
    EXPECT_EQ(distinct.size(), static_cast<size_t>(n));  // every holder its own arena
  };
  hold(3);
  EXPECT_EQ(pool.allocations(), 3);
  EXPECT_EQ(pool.idle(), 3u);
  hold(3);
  EXPECT_EQ(pool.allocations(), 3);  // reused
  hold(5);
  EXPECT_EQ(pool.allocations(), 5);  // two more while five are held
  EXPECT_EQ(pool.idle(), 3u);        // two freed past the bound
  EXPECT_EQ(pool.acquire(0).data(), nullptr);  // a plan without intermediates
  EXPECT_EQ(pool.allocations(), 5);
}

// Runs lease the plan's arenas: a run at a time uses one; many concurrent
// runs allocate at most one per thread, not one per run, and return them all.
TEST(ConcurrentRuns, ArenasAreLeasedNotAllocatedPerRun) {
  runtime::Executor m(dynamic_attention(), {});
  std::vector<std::vector<Tensor>> inputs = {{random_f32({16, 32}, 1)}};
  std::shared_ptr<const runtime::Plan> plan = m.prepare(inputs[0]);
  ASSERT_GT(plan->arena_layout.arena_bytes, 0);
  for (int serial = 0; serial < 5; ++serial) m.run(inputs[0]);
  EXPECT_EQ(plan->arenas.allocations(), 1);
  auto run = [&](const std::vector<Tensor>& in) { return m.run(in); };
  expect_concurrent_equals_serial(run, inputs, 20);
  expect_concurrent_equals_serial(run, inputs, 20);  // 2 x 8 x 20 runs
  EXPECT_LE(plan->arenas.allocations(), kThreads);
  EXPECT_EQ(static_cast<int64_t>(plan->arenas.idle()), plan->arenas.allocations());  // all back
}

// A plan dropped from the cache while another thread runs it stays valid.
TEST(ConcurrentRuns, EvictedPlansOutliveTheirRuns) {
  runtime::ExecutorOptions o;
  o.max_plans = 1;  // every new shape drops the previous plan
  runtime::Executor m(dynamic_attention(), o);
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t rows : {2, 4, 6, 8}) inputs.push_back({random_f32({rows, 32}, static_cast<uint32_t>(rows))});
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 6);
  EXPECT_EQ(m.plans().size(), 1u);
}

// Weights released while runs go on (runtime/weight_store.h): the packed-only
// weights of a two-layer model are released again and again, new shapes are
// compiled (sharing or re-reading the weights) and the model saved, while 8
// threads run it: every output stays bit-identical to the serial runs'.
TEST(ConcurrentRuns, ReleasingWeightsDuringRunsKeepsOutputsBitIdentical) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {-1, 256}, true});
  Value* w1 = g->add_constant("w1", random_f32({256, 512}, 1, -0.1f, 0.1f));  // 512 KiB each: released
  Value* w2 = g->add_constant("w2", random_f32({512, 256}, 2, -0.1f, 0.1f));
  Value* h = g->add_node("MatMul", {x, w1}, {"h"}, {}, "mm1")->outputs[0];
  Value* r = g->add_node("Relu", {h}, {"r"}, {}, "relu")->outputs[0];
  g->add_output(g->add_node("MatMul", {r, w2}, {"y"}, {}, "mm2")->outputs[0]);
  infer_graph(*g);
  runtime::Executor m(std::move(g), {});
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t rows : {4, 9}) inputs.push_back({random_f32({rows, 256}, static_cast<uint32_t>(rows))});
  int k = 0;
  std::string path = ::testing::TempDir() + "/released_during_runs.tsr";
  auto during = [&] {
    m.release_packed_weights();
    if (k % 4 == 0) m.run({random_f32({20 + k % 32, 256}, 100)});  // a new shape now and then
    if (k % 16 == 0) m.save(path);
    ++k;
  };
  expect_concurrent_equals_serial([&](const std::vector<Tensor>& in) { return m.run(in); }, inputs, 20, during);
  EXPECT_GT(k, 0);
  ASSERT_TRUE(m.weight_store());
  EXPECT_TRUE(m.weight_store()->holds(m.graph().find_value("w1")->constant->raw()));
}

}  // namespace
}  // namespace tessera
