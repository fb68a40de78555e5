// Average pools moved after the 1x1 convolutions they feed
// (opt/pool_after_conv.cpp). Checked against the interpreter on the original
// graph over pools with and without a zero Pad in front (Inception's
// spelling), with their own padding (count_include_pad 0 and 1), strides,
// ceil_mode, convolutions with and without bias; interpreted, and compiled
// for AVX-512 and AVX2 (blocked layout: the pool on the narrowed map). The
// cases it must leave alone are left alone.
#include <gtest/gtest.h>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::host_isas;
using tessera::testing::random_f32;
using Ints = std::vector<int64_t>;

struct Case {
  int64_t C, M, H, W;
  Ints pad;          // Pad's pads over [N, C, H, W] (begins, ends); empty: no Pad
  Ints kernel, strides, pool_pads;
  int64_t count_include_pad = 0, ceil_mode = 0;
  bool bias = true;
  float pad_value = 0;
  Ints conv_strides = {1, 1};
};

std::unique_ptr<Graph> pool_conv_graph(const Case& c) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, c.C, c.H, c.W}, true});
  Value* p = x;
  if (!c.pad.empty()) {
    Value* pads = g->add_constant("pads", Tensor::from<int64_t>({8}, c.pad));
    Value* cv = g->add_constant("cv", Tensor::from<float>({}, {c.pad_value}));
    p = g->add_node("Pad", {x, pads, cv}, {"padded"}, {{"mode", Attribute::of_string("constant")}}, "pad")->outputs[0];
  }
  AttrMap pa{{"kernel_shape", Attribute::of_ints(c.kernel)},
             {"strides", Attribute::of_ints(c.strides)},
             {"count_include_pad", Attribute::of_int(c.count_include_pad)},
             {"ceil_mode", Attribute::of_int(c.ceil_mode)}};
  if (!c.pool_pads.empty()) pa["pads"] = Attribute::of_ints(c.pool_pads);
  Value* avg = g->add_node("AveragePool", {p}, {"avg"}, pa, "avg")->outputs[0];
  std::vector<Value*> ins{avg, g->add_constant("w", random_f32({c.M, c.C, 1, 1}, 3, -0.5f, 0.5f))};
  if (c.bias) ins.push_back(g->add_constant("b", random_f32({c.M}, 4)));
  AttrMap ca{{"kernel_shape", Attribute::of_ints({1, 1})}, {"strides", Attribute::of_ints(c.conv_strides)}};
  Value* y = g->add_node("Conv", ins, {"y"}, ca, "conv")->outputs[0];
  g->add_output(g->add_node("Relu", {y}, {"out"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  return g;
}

const std::vector<Case> kMoved = {
    {48, 16, 9, 11, {0, 0, 1, 1, 0, 0, 1, 1}, {3, 3}, {1, 1}, {}},                 // Inception's pool branch
    {40, 8, 7, 7, {0, 0, 1, 0, 0, 0, 0, 1}, {3, 3}, {1, 1}, {}, 0, 0, false},      // uneven Pad, no bias
    {32, 24, 10, 8, {}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0},                          // own pads, border divisors
    {32, 24, 10, 8, {}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
    {24, 8, 13, 12, {}, {3, 2}, {2, 2}, {1, 0, 1, 1}, 0, 1},                       // strided, ceil_mode
    {17, 5, 6, 9, {}, {2, 2}, {1, 1}, {}},                                         // channels not a block
    {36, 12, 8, 8, {0, 0, 2, 2, 0, 0, 2, 2}, {5, 5}, {1, 1}, {}, 0},               // 5x5 over a Pad of 2
};

// Moved: the Conv reads the pool's input (the Pad's input when the Pad is
// folded), the pool reads the Conv, and the values match the original graph.
TEST(PoolAfterConv, MovedPoolsMatchTheOriginalGraph) {
  for (size_t i = 0; i < kMoved.size(); ++i) {
    const Case& c = kMoved[i];
    SCOPED_TRACE("case " + std::to_string(i));
    std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 10 + static_cast<uint32_t>(i))};
    std::vector<Tensor> want = interpret(*pool_conv_graph(c), ins);
    auto g = pool_conv_graph(c);
    ASSERT_EQ(move_pools_after_convs(*g), 1);
    EXPECT_EQ(count_ops(*g, "Pad"), 0);
    EXPECT_EQ(count_ops(*g, "Add"), c.bias ? 1 : 0);
    for (const auto& n : g->nodes()) {
      if (n->op_type == "Conv") {
        EXPECT_EQ(n->inputs[0]->name, "x");
        EXPECT_EQ(n->num_inputs(), 2);  // the bias is added after the pool
      }
      if (n->op_type == "AveragePool") {
        EXPECT_EQ(n->inputs[0]->producer->op_type, "Conv");
      }
    }
    EXPECT_EQ(g->find_value("y")->producer->op_type, c.bias ? "Add" : "AveragePool");
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// Compiled for AVX-512 and AVX2 with the default pipeline (which runs the
// pass), against the interpreter on the original graph.
TEST(PoolAfterConv, CompiledMatchesTheOriginalGraph) {
  for (codegen::Isa isa : host_isas()) {
    for (size_t i = 0; i < kMoved.size(); ++i) {
      const Case& c = kMoved[i];
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + " case " + std::to_string(i));
      std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 40 + static_cast<uint32_t>(i))};
      std::vector<Tensor> want = interpret(*pool_conv_graph(c), ins);
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(pool_conv_graph(c), o);
      EXPECT_EQ(count_ops(m.graph(), "Pad"), 0);
      EXPECT_EQ(count_ops(m.graph(), "AveragePool"), 1);
      expect_near_scaled(m.run(ins), want, 1e-5);
    }
  }
}

// Left alone: a Conv as wide as its input, a strided Conv, a pool read twice.
// A Pad of another value, a Pad before a pool with pads of its own, or one
// not below the kernel, stays in front of the pool, which still moves: the
// Conv reads the padded map.
TEST(PoolAfterConv, LeavesWhatDoesNotCommuteOrPay) {
  Case wide{16, 16, 8, 8, {}, {3, 3}, {1, 1}, {}};
  auto g = pool_conv_graph(wide);
  EXPECT_EQ(move_pools_after_convs(*g), 0);
  Case strided{32, 8, 8, 8, {}, {3, 3}, {1, 1}, {}};
  strided.conv_strides = {2, 2};
  g = pool_conv_graph(strided);
  EXPECT_EQ(move_pools_after_convs(*g), 0);
  g = pool_conv_graph({32, 8, 8, 8, {}, {3, 3}, {1, 1}, {}});
  g->add_output(g->find_value("avg"));
  EXPECT_EQ(move_pools_after_convs(*g), 0);

  std::vector<Case> kept_pad = {
      {32, 8, 8, 8, {0, 0, 1, 1, 0, 0, 1, 1}, {3, 3}, {1, 1}, {}, 0, 0, true, 0.5f},
      {32, 8, 8, 8, {0, 0, 1, 1, 0, 0, 1, 1}, {3, 3}, {1, 1}, {1, 1, 1, 1}},
      {32, 8, 8, 8, {0, 0, 3, 3, 0, 0, 3, 3}, {3, 3}, {1, 1}, {}},  // pads not below the kernel
  };
  for (size_t i = 0; i < kept_pad.size(); ++i) {
    SCOPED_TRACE("kept pad " + std::to_string(i));
    const Case& c = kept_pad[i];
    std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 60 + static_cast<uint32_t>(i))};
    std::vector<Tensor> want = interpret(*pool_conv_graph(c), ins);
    g = pool_conv_graph(c);
    EXPECT_EQ(move_pools_after_convs(*g), 1);
    EXPECT_EQ(count_ops(*g, "Pad"), 1);
    EXPECT_EQ(g->find_value("padded")->uses[0].node->op_type, "Conv");
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

}  // namespace
}  // namespace tessera
