// The channel-blocked layout over videos (opt/blocked_layout.cpp,
// ops/blocked_conv.*: [N, Cb, D, H, W, b]): 3-D convolutions of every kernel
// shape video models use (3x3x3, 1x3x3 spatial, 3x1x1 temporal, 1x1x1
// projections) with strides in time and space, padding, groups and
// depthwise, with bias, ReLU and residual adds fused, 3-D pools, against the
// reference interpreter on the original graph, at batch 1 and 2, for
// AVX-512 and AVX2.
#include <gtest/gtest.h>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/blocked_conv.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::for_each_isa_and_fusion;
using tessera::testing::random_f32;

uint32_t seed_ = 1;

// A 3-D Conv of kernel k (kd, kh, kw), pads (begin d, h, w, end d, h, w).
Value* conv3d(Graph& g, Value* x, int64_t M, int64_t Cg, std::vector<int64_t> k, std::vector<int64_t> pads,
              std::vector<int64_t> strides, const std::string& name, int64_t group = 1) {
  Value* w = g.add_constant(name + ".w", random_f32({M, Cg, k[0], k[1], k[2]}, seed_++, -0.5f, 0.5f));
  Value* b = g.add_constant(name + ".b", random_f32({M}, seed_++));
  AttrMap a;
  a["pads"] = Attribute::of_ints(std::move(pads));
  a["strides"] = Attribute::of_ints(std::move(strides));
  a["dilations"] = Attribute::of_ints({1, 1, 1});
  a["group"] = Attribute::of_int(group);
  return g.add_node("Conv", {x, w, b}, {name}, std::move(a), name)->outputs[0];
}

Value* relu(Graph& g, Value* x, const std::string& name) { return g.add_node("Relu", {x}, {name}, {}, name)->outputs[0]; }

Value* pool3d(Graph& g, const std::string& op, Value* x, std::vector<int64_t> k, std::vector<int64_t> s,
              std::vector<int64_t> pads, const std::string& name) {
  AttrMap a;
  a["kernel_shape"] = Attribute::of_ints(std::move(k));
  a["strides"] = Attribute::of_ints(std::move(s));
  a["pads"] = Attribute::of_ints(std::move(pads));
  return g.add_node(op, {x}, {name}, std::move(a), name)->outputs[0];
}

// A small video network in the shape of R3D / R(2+1)D / S3D: a 3x7x7
// stride (1, 2, 2) stem reading the 3-channel clip as it is (plain_input), a
// (1, 3, 3) max pool, a (2+1)-D block (1x3x3 spatial to 24 channels: a
// half-empty second block; 3x1x1 temporal) with a residual 1x1x1 projection,
// a 3x3x3 stride-2 convolution, grouped (16 channels per group) and
// depthwise 3x3x3 convolutions concatenated, a per-channel scale, an
// average pool, global average pool and a classifier.
std::unique_ptr<Graph> video_network(int64_t batch) {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("clip", {DType::F32, {batch, 3, 6, 14, 15}, true});
  Value* stem = relu(*g, conv3d(*g, x, 16, 3, {3, 7, 7}, {1, 3, 3, 1, 3, 3}, {1, 2, 2}, "stem"), "stem_relu");
  Value* mp = pool3d(*g, "MaxPool", stem, {1, 3, 3}, {1, 2, 2}, {0, 1, 1, 0, 1, 1}, "pool");
  Value* sp = relu(*g, conv3d(*g, mp, 24, 16, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, "spatial"), "spatial_relu");
  Value* tp = conv3d(*g, sp, 32, 24, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, {1, 1, 1}, "temporal");
  Value* proj = conv3d(*g, mp, 32, 16, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, "proj");
  Value* res = relu(*g, g->add_node("Add", {tp, proj}, {"res"}, {}, "res")->outputs[0], "res_relu");
  Value* down = relu(*g, conv3d(*g, res, 32, 32, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {2, 2, 2}, "down"), "down_relu");
  Value* grp = conv3d(*g, down, 32, 16, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, "grouped", 2);
  Value* dw = relu(*g, conv3d(*g, down, 32, 1, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, "depthwise", 32), "dw_relu");
  Value* scale = g->add_constant("scale", random_f32({32, 1, 1, 1}, 99));
  Value* sc = g->add_node("Mul", {dw, scale}, {"scaled"}, {}, "scale")->outputs[0];
  Value* cat = g->add_node("Concat", {grp, sc}, {"cat"}, {{"axis", Attribute::of_int(1)}}, "cat")->outputs[0];
  Value* avg = pool3d(*g, "AveragePool", cat, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, "avg");
  Value* gap = g->add_node("GlobalAveragePool", {avg}, {"gap"}, {}, "gap")->outputs[0];
  Value* flat = g->add_node("Flatten", {gap}, {"flat"}, {{"axis", Attribute::of_int(1)}}, "flat")->outputs[0];
  Value* fc_w = g->add_constant("fc.w", random_f32({10, 64}, 77));
  AttrMap ga;
  ga["transB"] = Attribute::of_int(1);
  g->add_output(g->add_node("Gemm", {flat, fc_w}, {"logits"}, ga, "fc")->outputs[0]);
  g->add_output(res);  // an output in the middle, read by later convolutions too
  infer_graph(*g);
  return g;
}

// The pass takes every 3-D convolution, pool and elementwise op into the
// layout: no reorder in (the stem reads the clip) and reorders out only at
// the Flatten and the middle output; the interpreter's blocked kernels give
// the original graph's outputs.
TEST(BlockedConv3d, PassKeepsVideosBlocked) {
  for (int64_t b : {8, 16}) {
    SCOPED_TRACE(b);
    auto g = video_network(1);
    std::vector<Tensor> ins{random_f32({1, 3, 6, 14, 15}, 5)};
    std::vector<Tensor> want = interpret(*g, ins);
    EXPECT_EQ(to_blocked_layout(*g, b), 7);
    EXPECT_EQ(count_ops(*g, "Conv"), 0);
    EXPECT_EQ(count_ops(*g, "ConvBlocked"), 6);
    EXPECT_EQ(count_ops(*g, "DepthwiseConvBlocked"), 1);
    EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 0);
    EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 2);
    EXPECT_EQ(count_ops(*g, "MaxPool"), 1);
    EXPECT_EQ(count_ops(*g, "AveragePool"), 2);  // and the global pool, over the blocked volume
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// The blocked reference kernel sums in the reference Conv's order (input
// channel, kernel depth, row, column), padding lanes and other groups'
// channels adding exact zeros: 3-D convolutions alone give the Conv's bits.
TEST(BlockedConv3d, BlockedReferenceKernelsGiveTheConvBits) {
  seed_ = 60;
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 20, 5, 7, 6}, true});
  Value* a = conv3d(*g, x, 24, 20, {3, 3, 3}, {1, 0, 1, 2, 1, 0}, {2, 1, 2}, "a");
  Value* b = conv3d(*g, a, 24, 1, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, {1, 1, 1}, "b", 24);
  g->add_output(conv3d(*g, b, 32, 12, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, {1, 2, 1}, "c", 2));
  infer_graph(*g);
  std::vector<Tensor> ins{random_f32({2, 20, 5, 7, 6}, 9)};
  Tensor want = interpret(*g, ins)[0];
  ASSERT_EQ(to_blocked_layout(*g, 4), 3);
  Tensor got = interpret(*g, ins)[0];
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t k = 0; k < got.numel(); ++k) ASSERT_EQ(got.data<float>()[k], want.data<float>()[k]) << k;
}

// A clip with few channels read as it is (plain_input): the stem gives the
// Conv's bits too, and so does one whose input has too many channels for
// that (reordered into blocks, in_channels 9 of 16).
TEST(BlockedConv3d, PlainClipInputGivesTheConvBits) {
  seed_ = 70;
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 3, 5, 11, 12}, true});
  Value* y = g->add_input("y", {DType::F32, {1, 9, 4, 6, 5}, true});
  g->add_output(conv3d(*g, x, 20, 3, {3, 5, 5}, {1, 2, 2, 1, 1, 2}, {2, 2, 1}, "stem"));
  g->add_output(conv3d(*g, y, 8, 9, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, "nine"));
  infer_graph(*g);
  std::vector<Tensor> ins{random_f32({2, 3, 5, 11, 12}, 10), random_f32({1, 9, 4, 6, 5}, 11)};
  std::vector<Tensor> want = interpret(*g, ins);
  ASSERT_EQ(to_blocked_layout(*g, 16), 2);
  int plain = 0;
  for (const auto& n : g->nodes()) plain += n->op_type == "ConvBlocked" && n->has_attr("plain_input");
  EXPECT_EQ(plain, 1);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 1);  // y's
  std::vector<Tensor> got = interpret(*g, ins);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims());
    for (int64_t k = 0; k < got[i].numel(); ++k) ASSERT_EQ(got[i].data<float>()[k], want[i].data<float>()[k]) << k;
  }
  runtime::Executor m(std::move(g), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), want, 1e-5);
}

// Concatenations of blocked videos along frames (axis 2) and along W
// (axis -1, of channels that do not fill a block) stay blocked and give the
// original graph's outputs.
TEST(BlockedConv3d, SpatialConcatsStayBlocked) {
  auto build = [] {
    seed_ = 80;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 16, 3, 5, 6}, true});
    Value* a = conv3d(*g, x, 20, 16, {3, 3, 3}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, "a");
    Value* b = conv3d(*g, x, 20, 16, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, "b");
    Value* t = g->add_node("Concat", {a, b}, {"frames"}, {{"axis", Attribute::of_int(2)}}, "frames")->outputs[0];
    Value* w = g->add_node("Concat", {t, t}, {"cols"}, {{"axis", Attribute::of_int(-1)}}, "cols")->outputs[0];
    g->add_output(conv3d(*g, w, 8, 20, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, {2, 1, 1}, "out"));
    infer_graph(*g);
    return g;
  };
  auto g = build();
  std::vector<Tensor> ins{random_f32({1, 16, 3, 5, 6}, 12)};
  std::vector<Tensor> want = interpret(*g, ins);
  EXPECT_EQ(to_blocked_layout(*g, 16), 3);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 1);    // x
  EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 1);  // the output
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
  runtime::Executor m(build(), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), want, 1e-5);
}

// Compiled for AVX-512 (16 lanes a block) and AVX2 (8), fused and not, at
// batch 1 and 2, against the interpreter on the original graph.
TEST(BlockedConv3d, CompiledMatchesTheOriginalGraph) {
  for (int64_t batch : {1, 2}) {
    std::vector<Tensor> ins{random_f32({batch, 3, 6, 14, 15}, 6)};
    std::vector<Tensor> want = interpret(*video_network(batch), ins);
    SCOPED_TRACE("batch " + std::to_string(batch));
    for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
      runtime::Executor m(video_network(batch), o);
      EXPECT_EQ(count_ops(m.graph(), "ConvBlocked"), 6);
      EXPECT_EQ(count_ops(m.graph(), "Conv"), 0);
      const Value* w = nullptr;
      for (const auto& n : m.graph().nodes())
        if (n->op_type == "ConvBlocked") w = n->inputs[1];
      ASSERT_TRUE(w);
      EXPECT_EQ(w->type.dims.size(), 7u);
      EXPECT_EQ(w->type.dims.back(), o.isa == codegen::Isa::AVX2 ? 8 : 16);
      expect_near_scaled(m.run(ins), want, 1e-5);
    });
  }
}

// Inferring `n` (of the blocked domain) fails with an error that names it and says `what`.
void expect_error_naming(Node& n, const std::string& what) {
  tessera::testing::expect_error_naming(n, kBlockedDomain, what);
}

TEST(BlockedConv3d, BadVideoNodesNameTheNode) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 2, 4, 5, 5, 16}, true});
  Value* w = g.add_constant("w", Tensor(DType::F32, {1, 2, 3, 3, 16, 16}));
  expect_error_naming(*g.add_node("ConvBlocked", {x, w}, {"y"}, {}, "flat_weights"), "W must have rank 7");
  Value* wd = g.add_constant("wd", Tensor(DType::F32, {2, 3, 3, 16}));
  expect_error_naming(*g.add_node("DepthwiseConvBlocked", {x, wd}, {"z"}, {}, "flat_depthwise"), "W must have rank 5");
  Value* x7 = g.add_input("x7", {DType::F32, {1, 2, 2, 4, 5, 5, 16}, true});
  expect_error_naming(*g.add_node("ConvBlocked", {x7, w}, {"u"}, {}, "rank7"), "got rank 7");
  Value* wp = g.add_constant("wp", Tensor(DType::F32, {1, 2, 3, 3, 3, 16, 16}));
  expect_error_naming(*g.add_node("ConvBlocked", {x, wp}, {"p"}, {{"plain_input", Attribute::of_int(1)}}, "plain6"),
                      "plain_input needs X [N, C, D, H, W]");
}

}  // namespace
}  // namespace tessera
