// Channel-scale folding (opt/fold_channel_scale.cpp): a squeeze-excitation
// scale x * s feeding a blocked convolution becomes weights scaled by s,
// checked against the interpreter on the original graph; maps smaller than
// the weights, and scaled maps read by something else, are left alone.
#include <gtest/gtest.h>

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
using tessera::testing::random_f32;

Value* conv1x1(Graph& g, Value* x, int64_t M, int64_t C, uint32_t seed, const std::string& name) {
  Value* w = g.add_constant(name + ".w", random_f32({M, C, 1, 1}, seed, -0.5f, 0.5f));
  Value* b = g.add_constant(name + ".b", random_f32({M}, seed + 1));
  return g.add_node("Conv", {x, w, b}, {name}, {}, name)->outputs[0];
}

// x [1, C, H, W] -> expand -> squeeze-excitation (global pool, two 1x1
// convolutions, sigmoid, x * s) -> project to M channels. `reuse`: the
// scaled map is also a graph output.
std::unique_ptr<Graph> se_block(int64_t C, int64_t H, int64_t M, bool reuse) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, C, H, H}, true});
  Value* e = g->add_node("Relu", {conv1x1(*g, x, C, C, 1, "expand")}, {"e"}, {}, "relu")->outputs[0];
  Value* p = g->add_node("GlobalAveragePool", {e}, {"p"}, {}, "squeeze")->outputs[0];
  Value* f = g->add_node("Relu", {conv1x1(*g, p, 8, C, 3, "fc1")}, {"f"}, {}, "fc1_relu")->outputs[0];
  Value* s = g->add_node("Sigmoid", {conv1x1(*g, f, C, 8, 5, "fc2")}, {"s"}, {}, "gate")->outputs[0];
  Value* scaled = g->add_node("Mul", {e, s}, {"scaled"}, {}, "excite")->outputs[0];
  g->add_output(conv1x1(*g, scaled, M, C, 7, "project"));
  if (reuse) g->add_output(scaled);
  infer_graph(*g);
  return g;
}

TEST(FoldChannelScale, ScaledWeightsGiveTheScaledMapsConvolution) {
  std::vector<Tensor> ins{random_f32({1, 40, 14, 14}, 11)};
  std::vector<Tensor> want = interpret(*se_block(40, 14, 24, false), ins);
  auto g = se_block(40, 14, 24, false);
  ASSERT_GT(to_blocked_layout(*g, 16), 0);
  ASSERT_EQ(count_ops(*g, "Mul"), 1);
  EXPECT_EQ(fold_channel_scales(*g), 1);
  // The map's multiply is gone; the weights' one ([2, 3, 1, 1, 16, 16] by [1, 3, 1, 1, 16, 1]) took its place.
  ASSERT_EQ(count_ops(*g, "Mul"), 1);
  for (const auto& n : g->nodes()) {
    if (n->op_type != "Mul") continue;
    EXPECT_EQ(n->outputs[0]->type.dims, (Dims{2, 3, 1, 1, 16, 16}));
  }
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
  runtime::Executor m(se_block(40, 14, 24, false), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), want, 1e-5);
}

TEST(FoldChannelScale, LeavesSmallMapsAndSharedMapsAlone) {
  // 64 channels on 7x7: the map (4 x 49 x 16 values) is smaller than twice the weights (4 x 4 x 256).
  auto small = se_block(64, 7, 64, false);
  to_blocked_layout(*small, 16);
  EXPECT_EQ(fold_channel_scales(*small), 0);
  // The scaled map is an output too: it must still be computed.
  auto shared = se_block(40, 14, 24, true);
  to_blocked_layout(*shared, 16);
  EXPECT_EQ(fold_channel_scales(*shared), 0);
  std::vector<Tensor> ins{random_f32({1, 40, 14, 14}, 12)};
  runtime::Executor m(se_block(40, 14, 24, true), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), interpret(*se_block(40, 14, 24, true), ins), 1e-5);
}

}  // namespace
}  // namespace tessera
