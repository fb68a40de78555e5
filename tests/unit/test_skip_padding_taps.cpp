// Padding taps skipped (opt/skip_padding_taps.cpp): dilated convolutions
// rewritten as one Conv per output region with only the taps that read the
// input. Checked against the interpreter on the original graph over
// dilations, pads, strides, map sizes and groups, interpreted and compiled
// for AVX-512 and AVX2; the regions' multiply-adds are counted against a
// brute-force count of the taps that land inside the input.
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
using tessera::testing::random_f32;

struct Case {
  int64_t C, M, group, H, W, kh, kw;
  int64_t dh, dw, sh, sw;
  std::vector<int64_t> pads;  // begin h, begin w, end h, end w
};

std::unique_ptr<Graph> conv_graph(const Case& c, bool bias = true) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, c.C, c.H, c.W}, true});
  Value* w = g->add_constant("w", random_f32({c.M, c.C / c.group, c.kh, c.kw}, 3, -0.5f, 0.5f));
  std::vector<Value*> ins{x, w};
  if (bias) ins.push_back(g->add_constant("b", random_f32({c.M}, 4)));
  AttrMap attrs{{"kernel_shape", Attribute::of_ints({c.kh, c.kw})},
                {"dilations", Attribute::of_ints({c.dh, c.dw})},
                {"strides", Attribute::of_ints({c.sh, c.sw})},
                {"pads", Attribute::of_ints(c.pads)},
                {"group", Attribute::of_int(c.group)}};
  Value* y = g->add_node("Conv", ins, {"y"}, attrs, "atrous")->outputs[0];
  g->add_output(g->add_node("Relu", {y}, {"out"}, {}, "relu")->outputs[0]);
  g->add_output(y);
  infer_graph(*g);
  return g;
}

int64_t out_size(int64_t in, int64_t k, int64_t d, int64_t s, int64_t pb, int64_t pe) {
  return (in + pb + pe - (k - 1) * d - 1) / s + 1;
}

// Brute force along one axis: the (output, tap) pairs reading the input, and
// the number of runs of outputs with the same set of such taps.
struct AxisCount {
  int64_t pairs = 0, runs = 0;
};
AxisCount count_axis(int64_t in, int64_t k, int64_t d, int64_t s, int64_t pb, int64_t pe) {
  AxisCount a;
  std::vector<bool> prev;
  for (int64_t o = 0; o < out_size(in, k, d, s, pb, pe); ++o) {
    std::vector<bool> inside;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = o * s - pb + t * d;
      inside.push_back(i >= 0 && i < in);
      a.pairs += inside.back();
    }
    a.runs += inside != prev;
    prev = inside;
  }
  return a;
}

// Per output element and input channel: multiply-adds of every Conv in g.
double conv_macs(const Graph& g) {
  double m = 0;
  for (const auto& n : g.nodes()) {
    if (n->op_type != "Conv") continue;
    const Dims& y = n->outputs[0]->type.dims;
    const Dims& w = n->inputs[1]->type.dims;
    m += static_cast<double>(y[2] * y[3] * w[2] * w[3]);
  }
  return m;
}

// Every axis dilated: the regions are the runs' products, and their Convs do
// exactly the multiply-adds whose taps land inside the input.
const std::vector<Case> kBanded = {
    {16, 8, 1, 33, 33, 3, 3, 12, 12, 1, 1, {12, 12, 12, 12}},  // DeepLab's ASPP at 1/16: three bands
    {16, 8, 1, 33, 33, 3, 3, 24, 24, 1, 1, {24, 24, 24, 24}},
    {16, 8, 1, 20, 20, 3, 3, 6, 6, 1, 1, {6, 6, 6, 6}},
    {12, 12, 12, 20, 17, 3, 3, 8, 5, 2, 1, {8, 5, 6, 7}},      // depthwise, strided, uneven pads
    {8, 6, 2, 15, 21, 3, 5, 6, 4, 2, 2, {6, 8, 6, 8}},          // two groups, a 3x5 kernel
    {5, 7, 1, 13, 11, 5, 5, 4, 3, 1, 1, {8, 6, 8, 6}},          // 5x5: up to five bands an axis
    {24, 16, 1, 9, 14, 3, 3, 5, 7, 1, 1, {5, 7, 3, 7}},
};

TEST(SkipPaddingTaps, RegionsDoOnlyTheTapsInsideTheInput) {
  for (size_t i = 0; i < kBanded.size(); ++i) {
    const Case& c = kBanded[i];
    SCOPED_TRACE("case " + std::to_string(i));
    std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 10 + static_cast<uint32_t>(i))};
    std::vector<Tensor> want = interpret(*conv_graph(c), ins);
    auto g = conv_graph(c);
    ASSERT_EQ(skip_padding_taps(*g, 0), 1);
    const AxisCount h = count_axis(c.H, c.kh, c.dh, c.sh, c.pads[0], c.pads[2]);
    const AxisCount w = count_axis(c.W, c.kw, c.dw, c.sw, c.pads[1], c.pads[3]);
    EXPECT_EQ(count_ops(*g, "Conv"), h.runs * w.runs);
    EXPECT_EQ(conv_macs(*g), static_cast<double>(h.pairs * w.pairs));
    EXPECT_EQ(g->outputs()[1]->name, "y");
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// Every off-centre tap in the padding (rate 36 on a 33x33 map): one 1x1 Conv
// of the centre weights, nothing sliced or concatenated.
TEST(SkipPaddingTaps, AllPaddingOffCentreIsAOneByOneConv) {
  const Case c{32, 16, 1, 33, 33, 3, 3, 36, 36, 1, 1, {36, 36, 36, 36}};
  std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 21)};
  std::vector<Tensor> want = interpret(*conv_graph(c), ins);
  auto g = conv_graph(c);
  ASSERT_EQ(skip_padding_taps(*g, 0), 1);
  ASSERT_EQ(count_ops(*g, "Conv"), 1);
  EXPECT_EQ(count_ops(*g, "Slice"), 0);
  EXPECT_EQ(count_ops(*g, "Concat"), 0);
  for (const auto& n : g->nodes())
    if (n->op_type == "Conv") {
      EXPECT_EQ(n->inputs[1]->type.dims, (Dims{16, 32, 1, 1}));
      EXPECT_EQ(n->inputs[0]->name, "x");
    }
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// Undilated too: a 3x3 convolution of a 1x1 map (pads 1) reads only its
// centre tap, and a 1x3 map keeps its three column taps.
TEST(SkipPaddingTaps, OnePixelMapsKeepTheTapsTheyRead) {
  for (int64_t w : {1, 3}) {
    SCOPED_TRACE("width " + std::to_string(w));
    const Case c{8, 4, 1, 1, w, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}};
    std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 25)};
    std::vector<Tensor> want = interpret(*conv_graph(c), ins);
    auto g = conv_graph(c);
    ASSERT_EQ(skip_padding_taps(*g, 0), 1);
    ASSERT_EQ(count_ops(*g, "Conv"), 1);
    for (const auto& n : g->nodes())
      if (n->op_type == "Conv") {
        EXPECT_EQ(n->inputs[1]->type.dims, (Dims{4, 8, 1, w}));
      }
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// An undilated axis is not banded: its taps are the union over the axis
// (here every one), while the dilated axis is.
TEST(SkipPaddingTaps, UndilatedAxisKeepsOneBand) {
  const Case c{8, 8, 1, 17, 19, 3, 3, 1, 8, 1, 1, {1, 8, 1, 8}};
  std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 31)};
  std::vector<Tensor> want = interpret(*conv_graph(c, false), ins);
  auto g = conv_graph(c, false);
  ASSERT_EQ(skip_padding_taps(*g, 0), 1);
  const AxisCount w = count_axis(c.W, c.kw, c.dw, c.sw, c.pads[1], c.pads[3]);
  EXPECT_EQ(count_ops(*g, "Conv"), w.runs);
  for (const auto& n : g->nodes()) {
    if (n->op_type == "Conv") {
      EXPECT_EQ(n->inputs[1]->type.dims[2], 3);
    }
  }
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// Convolutions whose padding taps are a thin border, and one whose outputs
// include some that read no input at all (bias only), are left alone.
TEST(SkipPaddingTaps, LeavesThinBordersAndEmptyOutputsAlone) {
  auto plain = conv_graph({16, 16, 1, 56, 56, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}});
  EXPECT_EQ(skip_padding_taps(*plain, 0), 0);
  auto backbone = conv_graph({16, 16, 1, 65, 65, 3, 3, 4, 4, 1, 1, {4, 4, 4, 4}});  // 8% padding taps
  EXPECT_EQ(skip_padding_taps(*backbone, 0), 0);
  auto beyond = conv_graph({4, 4, 1, 6, 6, 3, 3, 2, 2, 1, 1, {9, 9, 9, 9}});
  EXPECT_EQ(skip_padding_taps(*beyond, 0), 0);
}

// Compiled for AVX-512 and AVX2 (the regions in the blocked layout, which
// carries their spatial Concats), against the interpreter on the original
// graph: every case rewritten first, then compiled.
TEST(SkipPaddingTaps, CompiledMatchesTheOriginalGraph) {
  std::vector<Case> cases = kBanded;
  cases.push_back({32, 16, 1, 33, 33, 3, 3, 36, 36, 1, 1, {36, 36, 36, 36}});
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (!codegen::host_supports(isa)) {
      GTEST_LOG_(INFO) << codegen::isa_name(isa) << " not on this host: not run";
      continue;
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + " case " + std::to_string(i));
      std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 40 + static_cast<uint32_t>(i))};
      std::vector<Tensor> want = interpret(*conv_graph(c), ins);
      auto g = conv_graph(c);
      ASSERT_EQ(skip_padding_taps(*g, 0), 1);
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(std::move(g), o);
      const AxisCount h = count_axis(c.H, c.kh, c.dh, c.sh, c.pads[0], c.pads[2]);
      const AxisCount w = count_axis(c.W, c.kw, c.dw, c.sw, c.pads[1], c.pads[3]);
      const int regions = count_ops(m.graph(), "Conv") + count_ops(m.graph(), "ConvBlocked") +
                          count_ops(m.graph(), "DepthwiseConvBlocked");
      EXPECT_EQ(regions, h.runs * w.runs);
      expect_near_scaled(m.run(ins), want, 1e-5);
    }
  }
}

// The target pipeline runs the pass where each region skips enough work to
// pay for its kernel: DeepLab's pyramid (64 channels to 32 at rate 12 on
// 33x33: 9 regions) but not the same on a 4x4 map.
TEST(SkipPaddingTaps, PipelineRewritesWhereRegionsPay) {
  const Case aspp{64, 32, 1, 33, 33, 3, 3, 12, 12, 1, 1, {12, 12, 12, 12}};
  std::vector<Tensor> ins{random_f32({1, aspp.C, aspp.H, aspp.W}, 51)};
  runtime::Executor m(conv_graph(aspp), runtime::ExecutorOptions{});
  EXPECT_EQ(count_ops(m.graph(), "ConvBlocked"), 9);
  // The Concats stay blocked: reorders only of the input and of the two outputs.
  EXPECT_EQ(count_ops(m.graph(), "ReorderToBlocked"), 1);
  EXPECT_EQ(count_ops(m.graph(), "ReorderFromBlocked"), 2);
  expect_near_scaled(m.run(ins), interpret(*conv_graph(aspp), ins), 1e-5);
  const Case tiny{64, 32, 1, 4, 4, 3, 3, 2, 2, 1, 1, {2, 2, 2, 2}};
  auto g = conv_graph(tiny);
  EXPECT_EQ(skip_padding_taps(*g), 0);
  EXPECT_EQ(skip_padding_taps(*g, 0), 1);
}

}  // namespace
}  // namespace tessera
