// CausalConvWithState on hand-computed depthwise causal convolutions.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
// Batch 1, channels 2, length 3; kernel 2 (tap 0 reads the previous position,
// tap 1 the current one).
Tensor input() { return f32({1, 2, 3}, {1, 2, 3, 1, -1, 2}); }
Tensor weight() { return f32({2, 1, 2}, {1, 10, 2, -1}); }
}  // namespace

TEST(CausalConvWithState, ZeroStateWithoutPast) {
  auto y = run_op({.op = "CausalConvWithState", .inputs = {input(), weight()}, .num_outputs = 2, .opset = 27});
  // Channel 0: seq 0 1 2 3 -> 10, 21, 32. Channel 1: seq 0 1 -1 2 -> -1, 3, -4.
  expect_near(y[0], f32({1, 2, 3}, {10, 21, 32, -1, 3, -4}));
  expect_near(y[1], f32({1, 2, 1}, {3, 2}));
}

TEST(CausalConvWithState, PastStateAndBias) {
  auto y = run_op({.op = "CausalConvWithState",
                   .inputs = {input(), weight(), f32({2}, {1, -1}), f32({1, 2, 1}, {5, 7})},
                   .num_outputs = 2,
                   .opset = 27});
  // Channel 0: seq 5 1 2 3 -> 15+1, 21+1, 32+1. Channel 1: seq 7 1 -1 2 -> 13-1, 3-1, -4-1.
  expect_near(y[0], f32({1, 2, 3}, {16, 22, 33, 12, 2, -5}));
  expect_near(y[1], f32({1, 2, 1}, {3, 2}));
}

TEST(CausalConvWithState, DecodeStepShiftsTheState) {
  // Kernel 3, one new position: y = 1*1 + 1*2 + 1*3; the state drops its oldest entry.
  auto y = run_op({.op = "CausalConvWithState",
                   .inputs = {f32({1, 1, 1}, {3}), f32({1, 1, 3}, {1, 1, 1}), Tensor(), f32({1, 1, 2}, {1, 2})},
                   .num_outputs = 2,
                   .opset = 27});
  expect_near(y[0], f32({1, 1, 1}, {6}));
  expect_near(y[1], f32({1, 1, 2}, {2, 3}));
}

TEST(CausalConvWithState, SiluAndSwishActivation) {
  // Kernel 1 (empty state), weight 1: silu(0) = 0, silu(ln 3) = 0.75 ln 3.
  const float ln3 = std::log(3.0f);
  for (const char* act : {"silu", "swish"}) {
    auto y = run_op({.op = "CausalConvWithState",
                     .inputs = {f32({1, 1, 2}, {0, ln3}), f32({1, 1, 1}, {1})},
                     .attrs = {{"activation", Attribute::of_string(act)}},
                     .num_outputs = 2,
                     .opset = 27});
    expect_near(y[0], f32({1, 1, 2}, {0, 0.75f * ln3}));
    EXPECT_EQ(y[1].dims(), Dims({1, 1, 0}));
  }
}

TEST(CausalConvWithState, InferencePropagatesUnknownDims) {
  // Batch and length unknown; channels and kernel size known.
  Graph g;
  g.opset = 27;
  Value* x = g.add_input("x", {DType::F32, {-1, 2, -1}, true});
  Value* w = g.add_input("w", {DType::F32, {2, 1, 4}, true});
  Node* n = g.add_node("CausalConvWithState", {x, w}, {"y", "state"}, {}, "conv");
  infer_graph(g);
  EXPECT_EQ(n->outputs[0]->type.to_string(), "f32[?x2x?]");
  EXPECT_EQ(n->outputs[1]->type.to_string(), "f32[?x2x3]");
}

TEST(CausalConvWithState, Errors) {
  EXPECT_THROW(run_op({.op = "CausalConvWithState", .inputs = {input(), f32({2, 2, 1}, {1, 1, 1, 1})}, .opset = 27}),
               tessera::Error);  // weight is not depthwise
  EXPECT_THROW(run_op({.op = "CausalConvWithState",
                       .inputs = {input(), weight()},
                       .attrs = {{"activation", Attribute::of_string("relu")}},
                       .opset = 27}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "CausalConvWithState",
                       .inputs = {input(), weight(), Tensor(), f32({1, 2, 2}, {0, 0, 0, 0})},
                       .opset = 27}),
               tessera::Error);  // past_state must hold k - 1 = 1 positions
  EXPECT_THROW(run_op({.op = "CausalConvWithState", .inputs = {f32({2, 3}, {0, 0, 0, 0, 0, 0}), weight()}, .opset = 27}),
               tessera::Error);
}

}  // namespace tessera::testing
