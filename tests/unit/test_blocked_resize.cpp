// Resize in the channel-blocked layout (opt/blocked_layout.cpp): a resize of
// the spatial axes of a blocked value whose consumers stay blocked is carried
// as a resize over [N, Cb, H, W, b] — DeepLabV3's pooling branch (a 1x1 map
// resized to the pyramid's size and concatenated with the other branches),
// an FPN's nearest 2x upsampling added to a lateral convolution — and a
// resize into a graph output stays NCHW. Checked against the reference
// interpreter on the original graph, interpreted and compiled for AVX-512
// (16 lanes) and AVX2 (8), fused and not.
#include <gtest/gtest.h>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::for_each_isa_and_fusion;
using tessera::testing::random_f32;

uint32_t seed_ = 1;

Value* conv(Graph& g, Value* x, int64_t M, int64_t C, int64_t k, const std::string& name) {
  Value* w = g.add_constant(name + ".w", random_f32({M, C, k, k}, seed_++, -0.5f, 0.5f));
  Value* b = g.add_constant(name + ".b", random_f32({M}, seed_++));
  AttrMap a;
  a["pads"] = Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
  return g.add_node("Conv", {x, w, b}, {name}, std::move(a), name)->outputs[0];
}

Value* relu(Graph& g, Value* x, const std::string& name) {
  return g.add_node("Relu", {x}, {name}, {}, name)->outputs[0];
}

// Resize of x with constant sizes (`scales` empty) or scales (`sizes` empty).
Value* resize(Graph& g, Value* x, const std::vector<int64_t>& sizes, const std::vector<float>& scales,
              const std::string& mode, const std::string& coord, const std::string& name) {
  Value* roi = g.add_constant(name + ".roi", Tensor(DType::F32, {0}));
  Value* sc = scales.empty() ? g.add_constant(name + ".scales", Tensor(DType::F32, {0}))
                             : g.add_constant(name + ".scales", Tensor::from<float>({4}, scales));
  std::vector<Value*> ins{x, roi, sc};
  if (!sizes.empty()) ins.push_back(g.add_constant(name + ".sizes", Tensor::from<int64_t>({4}, sizes)));
  AttrMap a;
  a["mode"] = Attribute::of_string(mode);
  a["coordinate_transformation_mode"] = Attribute::of_string(coord);
  return g.add_node("Resize", ins, {name}, std::move(a), name)->outputs[0];
}

// An ASPP-like head on a 9x11 map with 24 channels (a half-empty second
// block): a 3x3 branch to 32 channels, and a pooling branch (global average
// pool, 1x1 conv to 24 channels, bilinear resize 1x1 -> 9x11 by sizes: its
// padding lanes resized too) concatenated after it and
// projected; an FPN-like top-down path (a 4x5 map upsampled 2x by scales,
// nearest, asymmetric, then bilinearly to 9x11 by sizes) added
// to a lateral convolution; the sum upsampled to 18x22 into a graph output.
std::unique_ptr<Graph> network() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 9, 11}, true});
  Value* feat = relu(*g, conv(*g, x, 24, 16, 3, "stem"), "stem_relu");
  Value* b0 = relu(*g, conv(*g, feat, 32, 24, 3, "branch0"), "branch0_relu");
  Value* gap = g->add_node("GlobalAveragePool", {feat}, {"gap"}, {}, "gap")->outputs[0];
  Value* pooled = relu(*g, conv(*g, gap, 24, 24, 1, "pool_conv"), "pool_relu");
  Value* up = resize(*g, pooled, {1, 24, 9, 11}, {}, "linear", "half_pixel", "pool_resize");
  Value* cat = g->add_node("Concat", {b0, up}, {"cat"}, {{"axis", Attribute::of_int(1)}}, "cat")->outputs[0];
  Value* proj = relu(*g, conv(*g, cat, 16, 56, 1, "project"), "project_relu");
  AttrMap mp;
  mp["kernel_shape"] = Attribute::of_ints({2, 2});
  mp["strides"] = Attribute::of_ints({2, 2});
  Value* coarse = conv(*g, g->add_node("MaxPool", {proj}, {"down"}, mp, "down")->outputs[0], 16, 16, 3, "coarse");
  Value* up2 = resize(*g, coarse, {}, {1.0f, 1.0f, 2.0f, 2.0f}, "nearest", "asymmetric", "top_down");
  Value* crop = resize(*g, up2, {1, 16, 9, 11}, {}, "linear", "pytorch_half_pixel", "crop");
  Value* sum = g->add_node("Add", {crop, conv(*g, proj, 16, 16, 1, "lateral")}, {"sum"}, {}, "sum")->outputs[0];
  g->add_output(resize(*g, sum, {1, 16, 18, 22}, {}, "linear", "half_pixel", "out_resize"));
  infer_graph(*g);
  return g;
}

// Resize nodes over blocked (rank-5) values.
int blocked_resizes(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes())
    if (node->op_type == "Resize" && node->inputs[0]->type.rank() == 5) ++n;
  return n;
}

// The pass keeps the three inner resizes blocked (no reorder around the
// pooling branch, the concat or the top-down path) and leaves the output's
// NCHW; the interpreter on the rewritten graph gives the original's outputs.
TEST(BlockedResize, InnerResizesStayBlockedAndMatch) {
  auto g = network();
  std::vector<Tensor> ins{random_f32({1, 16, 9, 11}, 5)};
  std::vector<Tensor> want = interpret(*g, ins);
  EXPECT_EQ(to_blocked_layout(*g, 16), 6);
  EXPECT_EQ(count_ops(*g, "Resize"), 4);
  EXPECT_EQ(blocked_resizes(*g), 3);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 1);    // the input
  EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 1);  // before the output's resize
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// Compiled for each ISA (its block width), fused and one kernel per op.
TEST(BlockedResize, CompiledMatchesTheOriginalGraph) {
  std::vector<Tensor> ins{random_f32({1, 16, 9, 11}, 6)};
  std::vector<Tensor> want = interpret(*network(), ins);
  for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
    runtime::Executor m(network(), o);
    EXPECT_EQ(blocked_resizes(m.graph()), 3);
    expect_near_scaled(m.run(ins), want, 1e-5);
  });
}

// A resize that changes channels, or whose consumer leaves the layout
// (a Flatten), is not carried blocked.
TEST(BlockedResize, ChannelResizesAndNchwConsumersStayNchw) {
  auto build = [] {
    seed_ = 1;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 16, 6, 6}, true});
    Value* c = conv(*g, x, 16, 16, 3, "c");
    Value* chan = resize(*g, c, {1, 32, 6, 6}, {}, "nearest", "asymmetric", "chan");
    g->add_output(conv(*g, chan, 8, 32, 1, "after_chan"));
    Value* sp = resize(*g, c, {1, 16, 3, 3}, {}, "linear", "half_pixel", "sp");
    g->add_output(g->add_node("Flatten", {sp}, {"flat"}, {}, "flat")->outputs[0]);
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 16, 6, 6}, 7)};
  std::vector<Tensor> want = interpret(*build(), ins);
  auto g = build();
  EXPECT_EQ(to_blocked_layout(*g, 16), 2);
  EXPECT_EQ(blocked_resizes(*g), 0);
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
  runtime::Executor m(build(), {});
  expect_near_scaled(m.run(ins), want, 1e-5);
}

}  // namespace
}  // namespace tessera
