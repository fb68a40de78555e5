// Peak memory while loading (issue 22, "Memory"): passes that replace a
// layer's weights free the old ones before the next layer's are made (each
// weight's buffer records, as it is freed, how far the pass had got), a
// value nobody reads can be dropped alone, the heap is trimmed after
// kernels are compiled, and $TESSERA_MEMORY_TRACE's phase lines.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ops/blocked_conv.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "support/memory_trace.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::random_f32;

// For each tracked buffer, in the order they are freed: how many nodes of
// `op` the graph had at that moment.
struct FreeLog {
  const Graph* graph = nullptr;
  std::string op;
  std::vector<int> seen;
};

// A copy of `t` whose buffer, when its last user lets go, appends to `log`.
Tensor tracked(const Tensor& t, FreeLog& log) {
  auto copy = std::make_shared<Tensor>(t.clone());
  void* data = copy->raw();
  std::shared_ptr<void> owner(nullptr, [copy, &log](void*) { log.seen.push_back(count_ops(*log.graph, log.op)); });
  return Tensor::view(t.dtype(), t.dims(), data, std::move(owner));
}

// x -> Conv(3x3, pad 1) -> Relu, `layers` times, 32 channels on 12x12.
std::unique_ptr<Graph> conv_chain(int layers, FreeLog* log, bool batchnorm = false) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 32, 12, 12}, true});
  uint32_t seed = 1;
  for (int i = 0; i < layers; ++i) {
    const std::string name = "c" + std::to_string(i);
    Tensor w = random_f32({32, 32, 3, 3}, seed++, -0.2f, 0.2f);
    Value* wv = g->add_constant(name + ".w", log ? tracked(w, *log) : w);
    Value* b = g->add_constant(name + ".b", random_f32({32}, seed++));
    AttrMap a;
    a["pads"] = Attribute::of_ints({1, 1, 1, 1});
    x = g->add_node("Conv", {x, wv, b}, {name}, a, name)->outputs[0];
    if (batchnorm) {
      std::vector<Value*> in{x};
      for (const char* p : {"gamma", "beta", "mean", "var"})
        in.push_back(g->add_constant(name + "." + p, random_f32({32}, seed++, 0.5f, 1.5f)));
      x = g->add_node("BatchNormalization", in, {name + ".bn"}, {}, name + "/bn")->outputs[0];
    }
    x = g->add_node("Relu", {x}, {name + ".relu"}, {}, name + "/relu")->outputs[0];
  }
  g->add_output(x);
  infer_graph(*g);
  if (log) log->graph = g.get();
  return g;
}

TEST(LoadMemory, UnusedValuesAreErasedAloneAndUsedOnesKept) {
  auto g = conv_chain(1, nullptr);
  Value* extra = g->add_constant("unused", random_f32({4}, 3));
  Value* w = g->find_value("c0.w");
  Value* out = g->outputs()[0];
  Value* in = g->inputs()[0];
  EXPECT_FALSE(g->erase_value_if_unused(w));    // the Conv reads it
  EXPECT_FALSE(g->erase_value_if_unused(out));  // a graph output, and produced
  EXPECT_FALSE(g->erase_value_if_unused(in));   // a graph input
  const size_t before = g->values().size();
  EXPECT_TRUE(g->erase_value_if_unused(extra));
  EXPECT_EQ(g->values().size(), before - 1);
  EXPECT_EQ(g->find_value("unused"), nullptr);
  EXPECT_NE(g->find_value("c0.w"), nullptr);
  EXPECT_FALSE(g->erase_value_if_unused(nullptr));
}

// The blocked-layout pass frees each Conv's NCHW weights as soon as it has
// re-laid them out: when layer i's go, only i + 1 convolutions are blocked.
TEST(LoadMemory, BlockedLayoutFreesEachLayersWeightsBeforeTheNext) {
  FreeLog log{nullptr, "ConvBlocked", {}};
  auto g = conv_chain(3, &log);
  std::vector<Tensor> ins{random_f32({1, 32, 12, 12}, 9)};
  std::vector<Tensor> want = interpret(*g, ins);
  ASSERT_EQ(to_blocked_layout(*g, 16), 3);
  EXPECT_EQ(log.seen, (std::vector<int>{1, 2, 3}));
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// BatchNorm folding frees the unfolded weights pair by pair: when layer i's
// go, 3 - i BatchNormalizations are still in the graph.
TEST(LoadMemory, BatchNormFoldingFreesEachLayersWeightsBeforeTheNext) {
  FreeLog log{nullptr, "BatchNormalization", {}};
  auto g = conv_chain(3, &log, true);
  std::vector<Tensor> ins{random_f32({1, 32, 12, 12}, 9)};
  std::vector<Tensor> want = interpret(*g, ins);
  ASSERT_EQ(fold_batchnorm(*g), 3);
  EXPECT_EQ(log.seen, (std::vector<int>{3, 2, 1}));
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// The Winograd pass frees each layer's direct (blocked) weights as soon as
// it has transformed them: when layer i's go, i + 1 layers are rewritten.
TEST(LoadMemory, WinogradFreesEachLayersDirectWeightsBeforeTheNext) {
  auto g = conv_chain(3, nullptr);
  std::vector<Tensor> ins{random_f32({1, 32, 12, 12}, 9)};
  std::vector<Tensor> want = interpret(*g, ins);
  ASSERT_EQ(to_blocked_layout(*g, 16), 3);
  FreeLog log{g.get(), "WinogradGemm", {}};
  for (const auto& n : g->nodes())
    if (n->op_type == "ConvBlocked") n->inputs[1]->constant = tracked(*n->inputs[1]->constant, log);
  ASSERT_EQ(to_winograd(*g, 2), 3);
  EXPECT_EQ(log.seen, (std::vector<int>{1, 2, 3}));
  expect_near_scaled(interpret(*g, ins), want, 1e-4);
}

// Compiling a plan hands malloc's free memory back to the system, once the
// kernels are compiled and again once the plan is bound.
TEST(LoadMemory, CompilingTrimsTheHeap) {
  std::vector<Tensor> ins{random_f32({1, 32, 12, 12}, 9)};
  auto g = conv_chain(2, nullptr);
  std::vector<Tensor> want = interpret(*g, ins);
  runtime::Executor m(std::move(g), {});
  const int64_t before = trims_done();
  m.prepare(ins);
  EXPECT_GE(trims_done() - before, 2);
  expect_near_scaled(m.run(ins), want, 1e-4);
}

TEST(LoadMemory, PhaseLinesGiveResidencyAndHeap) {
  MemorySnapshot s = memory_snapshot();
  ASSERT_TRUE(s.rss && s.peak);  // Linux: /proc/self/status
  EXPECT_GT(*s.rss, 0);
  EXPECT_GE(*s.peak, *s.rss);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer replaces malloc: glibc's malloc_info describes arenas
  // nothing allocates from, so in-use bytes read 0 in that build.
  GTEST_LOG_(INFO) << "ASan build: malloc's in-use bytes not checked (glibc's allocator is replaced)";
#else
  EXPECT_GT(s.heap_used, 0);  // this test process has allocated
#endif
  MemorySnapshot t;
  t.rss = int64_t{3} << 20;
  t.peak = int64_t{5} << 20;
  t.heap_used = int64_t{1} << 20;
  t.heap_free = 512;
  EXPECT_EQ(format_memory_phase("kernels", t),
            "memory after kernels: RSS 3.0 MiB, peak 5.0 MiB, heap 1.0 MiB in use + 512 B free, mapped 0 B");
  t.rss.reset();
  EXPECT_NE(format_memory_phase("import", t).find("RSS n/a"), std::string::npos);
}

}  // namespace
}  // namespace tessera
