// Grouped convolutions in the channel-blocked layout (opt/blocked_layout.cpp,
// BlockGroups in ops/blocked_conv.h): group widths from 1 to 56 that divide
// the block, fill several blocks, or straddle blocks (RegNet's 24 and 56 in
// blocks of 16), channel counts that are not multiples of the block (the
// last window clamped to the input's last blocks), stride 2, with and
// without bias, in blocks of 16 (AVX-512) and 8 (AVX2). Each case against the
// reference interpreter on the NCHW graph: the pass's graph in the
// interpreter (the same bits: other groups' channels add exact zeros), the
// compiled kernels, and the Winograd forms of the 3x3 stride-1 ones;
// separable 3-D convolutions ((1,3,3) then (3,1,1)) of narrow groups; and a
// RegNet-like block on a batch whose padded input outweighs the planned
// second-level cache, padded chunk by chunk (schedule/chunked_padding.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/blocked_conv.h"
#include "ops/op_attrs.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "schedule/schedule.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::for_each_isa_and_fusion;
using tessera::testing::random_f32;

// One grouped convolution: C input and M output channels in G groups, a
// k x k kernel (padding k / 2), and whether the pass blocks it with blocks of
// 16 and of 8 lanes. Whether it does is the rule under test: a window of
// whole groups must fill whole blocks on both sides with at most 4 groups
// (or hold several groups in one output block).
struct Case {
  int64_t C, M, G, k, stride;
  bool bias;
  bool blocked16, blocked8;
  int64_t last16 = -1, last8 = -1;  // the expected group_last (-1: none)
};

const Case kCases[] = {
    // channels per group (in / out) that divide both blocks
    {64, 64, 16, 3, 1, true, true, true},     // 4 / 4
    {104, 104, 13, 3, 1, true, true, true},   // 8 / 8, 104 = 6.5 blocks of 16 (RegNetY-400MF)
    {104, 104, 13, 3, 2, false, true, true},  // the same, stride 2
    {440, 440, 55, 1, 1, true, true, true},   // 8 / 8, 27.5 blocks of 16, a 1x1 kernel
    {40, 40, 20, 3, 1, true, true, true},     // 2 / 2, 2.5 blocks of 16
    {64, 64, 2, 3, 2, true, true, true},      // 32 / 32
    {48, 48, 3, 3, 1, false, true, true},     // 16 / 16
    {32, 64, 16, 3, 1, true, false, true},    // 2 / 4: 8 groups a window of 16, 4 of 8
    {20, 40, 5, 3, 2, true, true, true},      // 4 / 8, channels of neither block size
    // groups that straddle blocks of 16 (and of 8 for widths 12 and 6)
    {48, 48, 2, 3, 1, true, true, true},      // 24: one window holds every block: dense
    {72, 72, 3, 3, 1, false, true, true, 2},  // 24 (RegNetX-1.6GF): last window clamped
    {120, 120, 5, 3, 2, true, true, true, 5},
    {224, 224, 4, 3, 2, true, true, true},    // 56 (RegNetY-8GF)
    {168, 168, 3, 3, 1, true, true, true, 4, -1},
    {60, 60, 5, 3, 1, true, true, true, 1, 5},   // 12: windows of 4 groups (16), of 2 (8)
    {36, 36, 6, 3, 2, true, false, true, -1, 2},  // 6: 8 groups a window of 16, 4 of 8
    {90, 90, 3, 3, 1, false, false, true},        // 30: 8 groups a window of 16; 4 of 8, dense
    // windows of too many groups: left in NCHW
    {40, 40, 8, 3, 1, true, false, false},    // 5 / 5
    {56, 56, 8, 3, 2, false, false, false},   // 7 / 7
    {48, 96, 48, 3, 1, true, false, false},   // 1 / 2
};

std::string describe(const Case& c) {
  return "C " + std::to_string(c.C) + " M " + std::to_string(c.M) + " G " + std::to_string(c.G) + " k " +
         std::to_string(c.k) + " stride " + std::to_string(c.stride) + (c.bias ? " bias" : "");
}

constexpr int64_t kH = 10, kW = 9;

// x [1, C, 10, 9] -> the grouped conv -> ReLU -> a dense 1x1 conv: the grouped
// conv reads a value the pass reorders in, and its output stays blocked.
std::unique_ptr<Graph> build(const Case& c) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, c.C, kH, kW}, true});
  const int64_t p = c.k / 2;
  AttrMap a{{"pads", Attribute::of_ints({p, p, p, p})},
            {"strides", Attribute::of_ints({c.stride, c.stride})},
            {"group", Attribute::of_int(c.G)}};
  std::vector<Value*> ins{x, g->add_constant("grouped.w", random_f32({c.M, c.C / c.G, c.k, c.k}, 11, -0.5f, 0.5f))};
  if (c.bias) ins.push_back(g->add_constant("grouped.b", random_f32({c.M}, 12)));
  Value* y = g->add_node("Conv", ins, {"grouped"}, a, "grouped")->outputs[0];
  Value* r = g->add_node("Relu", {y}, {"relu"}, {}, "relu")->outputs[0];
  Value* w2 = g->add_constant("mix.w", random_f32({8, c.M, 1, 1}, 13, -0.5f, 0.5f));
  g->add_output(g->add_node("Conv", {r, w2}, {"mix"}, {}, "mix")->outputs[0]);
  g->add_output(y);
  infer_graph(*g);
  return g;
}

// The blocked twin of the node named "grouped", or null.
const Node* grouped_node(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->name == "grouped" && n->op_type == "ConvBlocked") return n.get();
  return nullptr;
}

// The pass blocks exactly the cases the table says, with the clamp the table
// says, and the interpreter on its graph gives the NCHW graph's bits.
TEST(BlockedGroupedConv, PassGivesTheConvBits) {
  for (const Case& c : kCases)
    for (int64_t b : {16, 8}) {
      SCOPED_TRACE(describe(c) + ", blocks of " + std::to_string(b));
      auto g = build(c);
      std::vector<Tensor> ins{random_f32({1, c.C, kH, kW}, 14)};
      std::vector<Tensor> want = interpret(*g, ins);
      const bool expect = b == 16 ? c.blocked16 : c.blocked8;
      to_blocked_layout(*g, b);
      const Node* n = grouped_node(*g);
      ASSERT_EQ(n != nullptr, expect);
      EXPECT_EQ(count_ops(*g, "Conv"), expect ? 0u : 1u);
      if (n) {
        EXPECT_EQ(OpAttrs(*n, g->opset).i("group_last"), b == 16 ? c.last16 : c.last8);
      }
      std::vector<Tensor> got = interpret(*g, ins);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        ASSERT_EQ(got[o].dims(), want[o].dims());
        for (int64_t k = 0; k < got[o].numel(); ++k)
          ASSERT_EQ(got[o].data<float>()[k], want[o].data<float>()[k]) << "output " << o << " element " << k;
      }
    }
}

// Compiled for AVX-512 and AVX2 (the block is the ISA's vector), fused and
// not, against the interpreter on the NCHW graph.
TEST(BlockedGroupedConv, CompiledMatchesTheOriginalGraph) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> ins{random_f32({1, c.C, kH, kW}, 15)};
    std::vector<Tensor> want = interpret(*build(c), ins);
    for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
      runtime::Executor m(build(c), o);
      // blocked: a ConvBlocked or its Winograd form (the 1x1 mix conv is always blocked)
      EXPECT_EQ(count_ops(m.graph(), "Conv"), (o.isa == codegen::Isa::AVX2 ? c.blocked8 : c.blocked16) ? 0u : 1u);
      expect_near_scaled(m.run(ins), want, 1e-5);
    });
  }
}

// The 3x3 stride-1 blocked ones as Winograd F(2x2) and F(4x4): the product
// reads each output block's window (clamped or not) of the transformed
// input; in the interpreter for both block sizes, and compiled for each ISA
// the host has (one it lacks is logged as not run), against the NCHW graph.
TEST(BlockedGroupedConv, WinogradFormsMatchTheOriginalGraph) {
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2})
    if (!codegen::host_supports(isa))
      GTEST_LOG_(INFO) << codegen::isa_name(isa) << " not on this host: its compiled Winograd forms not run";
  for (const Case& c : kCases) {
    if (c.k != 3 || c.stride != 1) continue;
    for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
      const int64_t b = isa == codegen::Isa::AVX2 ? 8 : 16;
      if (!(b == 16 ? c.blocked16 : c.blocked8)) continue;
      for (int tile : {2, 4}) {
        SCOPED_TRACE(describe(c) + ", blocks of " + std::to_string(b) + ", F" + std::to_string(tile));
        std::vector<Tensor> ins{random_f32({1, c.C, kH, kW}, 16)};
        std::vector<Tensor> want = interpret(*build(c), ins);
        auto g = build(c);
        to_blocked_layout(*g, b);
        ASSERT_EQ(to_winograd(*g, tile), 1);
        expect_near_scaled(interpret(*g, ins), want, 2e-5);
        if (!codegen::host_supports(isa)) continue;  // logged above
        runtime::ExecutorOptions o;
        o.isa = isa;
        o.passes.disable("blocked-layout");  // done above
        runtime::Executor m(std::move(g), o);
        expect_near_scaled(m.run(ins), want, 2e-5);
      }
    }
  }
}

// Separable 3-D convolutions of narrow groups (a (1,3,3) spatial conv, ReLU,
// a (3,1,1) temporal conv, both grouped alike), as (2+1)-D and S3D blocks
// would be with RegNet's or ResNeXt's groups: widths 1 (depthwise) to 24,
// channel counts that are not multiples of the block, strides in space and
// in time. Both convs take the blocked layout for blocks of 16 and of 8.
struct VideoCase {
  int64_t C, G;
  std::vector<int64_t> spatial_stride, temporal_stride;
};

const VideoCase kVideoCases[] = {
    {104, 13, {1, 2, 2}, {1, 1, 1}},  // width 8, 6.5 blocks of 16 (RegNetY-400MF's 104)
    {48, 6, {1, 1, 1}, {2, 1, 1}},    // width 8, stride 2 in time
    {20, 5, {1, 2, 2}, {2, 1, 1}},    // width 4, channels of neither block size
    {40, 20, {1, 1, 1}, {1, 1, 1}},   // width 2
    {60, 5, {1, 2, 2}, {1, 1, 1}},    // width 12: windows of 4 groups (16), of 2 (8)
    {72, 3, {1, 1, 1}, {2, 1, 1}},    // width 24: the last window clamped (16)
    {24, 24, {1, 2, 2}, {1, 1, 1}},   // width 1: depthwise
};

constexpr int64_t kD = 5, kVH = 7, kVW = 9;

std::string describe(const VideoCase& c) {
  return "C " + std::to_string(c.C) + " G " + std::to_string(c.G) + " spatial stride " +
         std::to_string(c.spatial_stride[1]) + " temporal stride " + std::to_string(c.temporal_stride[0]);
}

// x [1, C, 5, 7, 9] -> (1,3,3) grouped conv -> ReLU -> (3,1,1) grouped conv.
std::unique_ptr<Graph> build_video(const VideoCase& c) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, c.C, kD, kVH, kVW}, true});
  auto conv = [&](Value* in, std::vector<int64_t> k, std::vector<int64_t> pads, std::vector<int64_t> strides,
                  const std::string& name, uint32_t seed) {
    AttrMap a{{"pads", Attribute::of_ints(std::move(pads))},
              {"strides", Attribute::of_ints(std::move(strides))},
              {"group", Attribute::of_int(c.G)}};
    Value* w = g->add_constant(name + ".w", random_f32({c.C, c.C / c.G, k[0], k[1], k[2]}, seed, -0.5f, 0.5f));
    Value* b = g->add_constant(name + ".b", random_f32({c.C}, seed + 1));
    return g->add_node("Conv", {in, w, b}, {name}, a, name)->outputs[0];
  };
  Value* s = conv(x, {1, 3, 3}, {0, 1, 1, 0, 1, 1}, c.spatial_stride, "spatial", 21);
  Value* r = g->add_node("Relu", {s}, {"relu"}, {}, "relu")->outputs[0];
  g->add_output(conv(r, {3, 1, 1}, {1, 0, 0, 1, 0, 0}, c.temporal_stride, "temporal", 23));
  infer_graph(*g);
  return g;
}

// The pass blocks both convs (depthwise or grouped windows) and its graph
// gives the Conv's bits in the interpreter; compiled for AVX-512 and AVX2,
// fused and not, the kernels match the interpreter on the NCHW graph.
TEST(BlockedGroupedConv, SeparableVideoConvsOfNarrowGroups) {
  for (const VideoCase& c : kVideoCases) {
    std::vector<Tensor> ins{random_f32({1, c.C, kD, kVH, kVW}, 17)};
    const std::vector<Tensor> want = interpret(*build_video(c), ins);
    const bool depthwise = c.G == c.C;
    for (int64_t b : {16, 8}) {
      SCOPED_TRACE(describe(c) + ", blocks of " + std::to_string(b));
      auto g = build_video(c);
      to_blocked_layout(*g, b);
      EXPECT_EQ(count_ops(*g, "Conv"), 0);
      EXPECT_EQ(count_ops(*g, depthwise ? "DepthwiseConvBlocked" : "ConvBlocked"), 2);
      std::vector<Tensor> got = interpret(*g, ins);
      ASSERT_EQ(got.size(), 1u);
      ASSERT_EQ(got[0].dims(), want[0].dims());
      for (int64_t k = 0; k < got[0].numel(); ++k)
        ASSERT_EQ(got[0].data<float>()[k], want[0].data<float>()[k]) << "element " << k;
    }
    SCOPED_TRACE(describe(c));
    for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
      runtime::Executor m(build_video(c), o);
      EXPECT_EQ(count_ops(m.graph(), "Conv"), 0);
      expect_near_scaled(m.run(ins), want, 1e-5);
    });
  }
}

// RegNetX-3.2GF's first block in small: 2 images of 32 channels on 48x48 ->
// 1x1 conv to 96 -> ReLU -> the grouped 3x3 conv (2 groups of 48, stride 2)
// -> ReLU. The grouped conv's padded input (1.8 MB) outweighs the planned
// 1 MB second-level cache and its weights (166 KB) do not: its kernel pads
// per chunk of rows (a compute_at of the padded copy, no compute_root),
// and, compiled for AVX-512 and AVX2, fused and not, matches the
// interpreter on the NCHW graph.
TEST(BlockedGroupedConv, LargeBatchesPadPerChunk) {
  auto build_block = [] {
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {2, 32, 48, 48}, true});
    Value* wa = g->add_constant("a.w", random_f32({96, 32, 1, 1}, 31, -0.5f, 0.5f));
    Value* ba = g->add_constant("a.b", random_f32({96}, 32));
    Value* a = g->add_node("Conv", {x, wa, ba}, {"a"}, {}, "a")->outputs[0];
    Value* ra = g->add_node("Relu", {a}, {"a_relu"}, {}, "a_relu")->outputs[0];
    AttrMap attrs{{"pads", Attribute::of_ints({1, 1, 1, 1})},
                  {"strides", Attribute::of_ints({2, 2})},
                  {"group", Attribute::of_int(2)}};
    Value* wb = g->add_constant("grouped.w", random_f32({96, 48, 3, 3}, 33, -0.5f, 0.5f));
    Value* bb = g->add_constant("grouped.b", random_f32({96}, 34));
    Value* y = g->add_node("Conv", {ra, wb, bb}, {"grouped"}, attrs, "grouped")->outputs[0];
    g->add_output(g->add_node("Relu", {y}, {"relu"}, {}, "relu")->outputs[0]);
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({2, 32, 48, 48}, 35)};
  const std::vector<Tensor> want = interpret(*build_block(), ins);
  for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
    runtime::Executor m(build_block(), o);
    expect_near_scaled(m.run(ins), want, 1e-5);
    bool found = false;
    for (const runtime::Step& st : m.last_plan()->steps) {
      bool grouped = false;
      for (const Node* n : st.nodes) grouped |= n->name == "grouped";
      if (!grouped) continue;
      found = true;
      const std::string text = schedule::to_text(st.schedule);
      EXPECT_NE(text.find("compute_at grouped.pad "), std::string::npos) << text;
      EXPECT_EQ(text.find("compute_root grouped.pad"), std::string::npos) << text;
    }
    EXPECT_TRUE(found);
  });
}

}  // namespace
}  // namespace tessera
