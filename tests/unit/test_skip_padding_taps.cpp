// Padding taps skipped (opt/skip_padding_taps.cpp): dilated convolutions,
// and video convolutions on short time axes, rewritten as one Conv per
// output region with only the taps that read the input. Checked against the interpreter on the original graph over
// dilations, pads, strides, map sizes and groups, interpreted and compiled
// for AVX-512 and AVX2; the regions' multiply-adds are counted against a
// brute-force count of the taps that land inside the input.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/op_attrs.h"
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

// Brute force along one axis: the (output, tap) pairs reading the input, the
// number of runs of outputs with the same set of such taps, the taps in those
// sets summed over the runs, and the taps reading the input for some output.
struct AxisCount {
  int64_t pairs = 0, runs = 0, slices = 0, taps = 0;
};
AxisCount count_axis(int64_t in, int64_t k, int64_t d, int64_t s, int64_t pb, int64_t pe) {
  AxisCount a;
  std::vector<bool> prev, any(static_cast<size_t>(k), false);
  for (int64_t o = 0; o < out_size(in, k, d, s, pb, pe); ++o) {
    std::vector<bool> inside;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = o * s - pb + t * d;
      inside.push_back(i >= 0 && i < in);
      a.pairs += inside.back();
      if (inside.back()) any[static_cast<size_t>(t)] = true;
    }
    if (inside != prev) {
      ++a.runs;
      a.slices += std::count(inside.begin(), inside.end(), true);
    }
    prev = inside;
  }
  a.taps = std::count(any.begin(), any.end(), true);
  return a;
}

// The Convs a rewritten 2-D Conv becomes: one per tap reading the input when
// both axes are dilated and the regions would read the weights in at least
// twice as many tap-sized slices (split by tap), else one per region.
int64_t expected_convs(const Case& c, const AxisCount& h, const AxisCount& w) {
  const bool by_tap = c.dh > 1 && c.dw > 1 && h.slices * w.slices >= 2 * h.taps * w.taps;
  return by_tap ? h.taps * w.taps : h.runs * w.runs;
}

// Multiply-adds per output channel and input channel of every Conv in g (any rank).
double conv_macs(const Graph& g) {
  double m = 0;
  for (const auto& n : g.nodes()) {
    if (n->op_type != "Conv") continue;
    const Dims& y = n->outputs[0]->type.dims;
    const Dims& w = n->inputs[1]->type.dims;
    double p = 1;
    for (size_t i = 2; i < y.size(); ++i) p *= static_cast<double>(y[i] * w[i]);
    m += p;
  }
  return m;
}

// The rewrite left one Conv, of weights `w`, reading the input x whole:
// nothing sliced or concatenated.
void expect_one_conv_of_x(const Graph& g, const Dims& w) {
  EXPECT_EQ(count_ops(g, "Conv"), 1);
  EXPECT_EQ(count_ops(g, "Slice"), 0);
  EXPECT_EQ(count_ops(g, "Concat"), 0);
  for (const auto& n : g.nodes())
    if (n->op_type == "Conv") {
      EXPECT_EQ(n->inputs[1]->type.dims, w);
      EXPECT_EQ(n->inputs[0]->name, "x");
    }
}

// Every axis dilated: the regions are the runs' products (or, where those
// would reread the weights, the Conv is split by tap), and the Convs do
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
    EXPECT_EQ(count_ops(*g, "Conv"), expected_convs(c, h, w));
    EXPECT_EQ(conv_macs(*g), static_cast<double>(h.pairs * w.pairs));
    EXPECT_EQ(g->outputs()[1]->name, "y");
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// Split by tap (DeepLabV3-MobileNetV3's rate 12 on its 20x20 map, whose nine
// regions would read 25 tap-sized slices of the weights): nine 1x1 Convs,
// each of one tap's weights as they are in the original, the centre's over
// the whole input with the bias, the others over their windows, zero-padded
// back and summed. With strides and uneven pads no tap reads the input for
// every output: the bias is added last.
TEST(SkipPaddingTaps, SplitByTapReadsEachWeightTapOnce) {
  const Case c{32, 16, 1, 20, 20, 3, 3, 12, 12, 1, 1, {12, 12, 12, 12}};
  std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 17)};
  std::vector<Tensor> want = interpret(*conv_graph(c), ins);
  auto g = conv_graph(c);
  const Tensor w = *g->find_value("w")->constant;
  ASSERT_EQ(skip_padding_taps(*g, 0), 1);
  EXPECT_EQ(count_ops(*g, "Conv"), 9);
  EXPECT_EQ(count_ops(*g, "Pad"), 8);
  EXPECT_EQ(count_ops(*g, "Add"), 8);
  EXPECT_EQ(count_ops(*g, "Concat"), 0);
  int biased = 0;
  for (const auto& n : g->nodes()) {
    if (n->op_type != "Conv") continue;
    const Tensor& tw = *n->inputs[1]->constant;
    ASSERT_EQ(tw.dims(), (Dims{16, 32, 1, 1}));
    const size_t at = n->name.find("/tap");
    ASSERT_NE(at, std::string::npos) << n->name;
    const int64_t ty = n->name[at + 4] - '0', tx = n->name[at + 6] - '0';
    for (int64_t k = 0; k < 16 * 32; ++k) ASSERT_EQ(tw.data<float>()[k], w.data<float>()[k * 9 + ty * 3 + tx]);
    if (n->has_input(2)) {
      ++biased;
      EXPECT_EQ(n->inputs[0]->name, "x");
      EXPECT_EQ(ty * 3 + tx, 4);  // the centre
    }
  }
  EXPECT_EQ(biased, 1);
  expect_near_scaled(interpret(*g, ins), want, 1e-5);

  const Case strided = kBanded[3];  // W: the centre tap misses the last two outputs
  auto s = conv_graph(strided);
  ASSERT_EQ(skip_padding_taps(*s, 0), 1);
  int with_bias = 0;
  for (const auto& n : s->nodes()) with_bias += n->op_type == "Conv" && n->has_input(2);
  EXPECT_EQ(with_bias, 0);
  EXPECT_EQ(count_ops(*s, "Add"), count_ops(*s, "Conv"));  // the partial sums and the bias
  ins = {random_f32({1, strided.C, strided.H, strided.W}, 18)};
  expect_near_scaled(interpret(*s, ins), interpret(*conv_graph(strided), ins), 1e-5);
}

// Every off-centre tap in the padding (rate 36 on a 33x33 map): one 1x1 Conv
// of the centre weights, nothing sliced or concatenated.
TEST(SkipPaddingTaps, AllPaddingOffCentreIsAOneByOneConv) {
  const Case c{32, 16, 1, 33, 33, 3, 3, 36, 36, 1, 1, {36, 36, 36, 36}};
  std::vector<Tensor> ins{random_f32({1, c.C, c.H, c.W}, 21)};
  std::vector<Tensor> want = interpret(*conv_graph(c), ins);
  auto g = conv_graph(c);
  ASSERT_EQ(skip_padding_taps(*g, 0), 1);
  expect_one_conv_of_x(*g, {16, 32, 1, 1});
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

// Convolutions whose padding taps are a thin border, undilated ones on tiny
// 2-D maps (not split: the regions' weights would outweigh the kernel's), and
// one whose outputs include some that read no input at all (bias only), are
// left alone.
TEST(SkipPaddingTaps, LeavesThinBordersAndEmptyOutputsAlone) {
  auto plain = conv_graph({16, 16, 1, 56, 56, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}});
  EXPECT_EQ(skip_padding_taps(*plain, 0), 0);
  auto tiny = conv_graph({16, 16, 1, 2, 2, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}});
  EXPECT_EQ(skip_padding_taps(*tiny, 0), 0);
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
  for (codegen::Isa isa : host_isas()) {
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
      EXPECT_EQ(regions, expected_convs(c, h, w));
      expect_near_scaled(m.run(ins), want, 1e-5);
    }
  }
}

// The target pipeline runs the pass where each Conv skips enough work to
// pay for its kernel: DeepLab's pyramid (64 channels to 32 at rate 12 on
// 33x33: 9 taps) but not the same on a 4x4 map.
TEST(SkipPaddingTaps, PipelineRewritesWhereRegionsPay) {
  const Case aspp{64, 32, 1, 33, 33, 3, 3, 12, 12, 1, 1, {12, 12, 12, 12}};
  std::vector<Tensor> ins{random_f32({1, aspp.C, aspp.H, aspp.W}, 51)};
  runtime::Executor m(conv_graph(aspp), runtime::ExecutorOptions{});
  EXPECT_EQ(count_ops(m.graph(), "ConvBlocked"), 9);
  // The Pads and Adds stay blocked: reorders only of the input and of the two outputs.
  EXPECT_EQ(count_ops(m.graph(), "ReorderToBlocked"), 1);
  EXPECT_EQ(count_ops(m.graph(), "ReorderFromBlocked"), 2);
  expect_near_scaled(m.run(ins), interpret(*conv_graph(aspp), ins), 1e-5);
  const Case tiny{64, 32, 1, 4, 4, 3, 3, 2, 2, 1, 1, {2, 2, 2, 2}};
  auto g = conv_graph(tiny);
  EXPECT_EQ(skip_padding_taps(*g), 0);
  EXPECT_EQ(skip_padding_taps(*g, 0), 1);
}


// Convolutions of any rank: a video [1, C, D, H, W] (or a sequence [1, C, W])
// with per-axis kernel, dilation, stride and pads.
struct NdCase {
  int64_t C, M, group;
  Dims in, k, d, s;
  std::vector<int64_t> pads;  // begins then ends
};

Dims input_dims(const NdCase& c) {
  Dims xd{1, c.C};
  xd.insert(xd.end(), c.in.begin(), c.in.end());
  return xd;
}

// With `stem`, the input first goes through a 1x1x1 Conv, as inside a net
// (the Conv's input then has a blocked twin when the layout is blocked).
std::unique_ptr<Graph> nd_conv_graph(const NdCase& c, bool stem = false) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Dims wd{c.M, c.C / c.group};
  wd.insert(wd.end(), c.k.begin(), c.k.end());
  Value* x = g->add_input("x", {DType::F32, input_dims(c), true});
  if (stem) {
    const Dims ones(c.in.size(), 1);
    Dims sd{c.C, c.C};
    sd.insert(sd.end(), ones.begin(), ones.end());
    Value* sw = g->add_constant("stem_w", random_f32(sd, 7, -0.5f, 0.5f));
    x = g->add_node("Conv", {x, sw}, {"stem"}, {{"kernel_shape", Attribute::of_ints(ones)}}, "stem")->outputs[0];
  }
  Value* w = g->add_constant("w", random_f32(wd, 5, -0.5f, 0.5f));
  Value* b = g->add_constant("b", random_f32({c.M}, 6));
  AttrMap attrs{{"kernel_shape", Attribute::of_ints(c.k)},
                {"dilations", Attribute::of_ints(c.d)},
                {"strides", Attribute::of_ints(c.s)},
                {"pads", Attribute::of_ints(c.pads)},
                {"group", Attribute::of_int(c.group)}};
  Value* y = g->add_node("Conv", {x, w, b}, {"y"}, attrs, "conv3d")->outputs[0];
  g->add_output(g->add_node("Relu", {y}, {"out"}, {}, "relu")->outputs[0]);
  g->add_output(y);
  infer_graph(*g);
  return g;
}

// Brute force along one axis of an NdCase: the (output, tap) pairs reading
// the input, the runs of outputs with the same such taps, and the
// multiply-adds the rewrite keeps: the pairs when the axis is split into
// runs (dilated, or the time axis of a 3-D kernel where no output reads
// every tap some output reads), else
// every output times the taps some output reads.
struct NdAxis {
  AxisCount count;
  bool split = false;
  int64_t kept = 0;
};
NdAxis nd_axis(const NdCase& c, size_t i) {
  const size_t n = c.in.size();
  const int64_t in = c.in[i], k = c.k[i], d = c.d[i], s = c.s[i], pb = c.pads[i], pe = c.pads[i + n];
  NdAxis a{count_axis(in, k, d, s, pb, pe)};
  std::vector<bool> any(static_cast<size_t>(k), false);
  std::vector<std::vector<bool>> reads;
  const int64_t out = out_size(in, k, d, s, pb, pe);
  for (int64_t o = 0; o < out; ++o) {
    reads.emplace_back();
    for (int64_t t = 0; t < k; ++t) {
      const int64_t p = o * s - pb + t * d;
      reads.back().push_back(p >= 0 && p < in);
      if (reads.back().back()) any[static_cast<size_t>(t)] = true;
    }
  }
  const bool short_time = n == 3 && i == 0 && std::none_of(reads.begin(), reads.end(), [&](const auto& r) { return r == any; });
  a.split = d > 1 || short_time;
  const int64_t first = static_cast<int64_t>(std::find(any.begin(), any.end(), true) - any.begin());
  const int64_t last = k - static_cast<int64_t>(std::find(any.rbegin(), any.rend(), true) - any.rbegin());
  a.kept = a.split ? a.count.pairs : out * (last - first);
  return a;
}

// 3x3x3 video convolutions on short time axes (R3D-18's last stage at 16 and
// 8 frames), strided and dilated in time, with a dilated spatial axis, a
// depthwise one, and a 1-D sequence.
const std::vector<NdCase> kNd = {
    {16, 8, 1, {2, 7, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // D=2: each frame 2 of 3 taps
    {16, 8, 1, {1, 4, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // D=1: centre frame only
    {8, 8, 1, {3, 6, 5}, {3, 3, 3}, {1, 1, 1}, {2, 1, 2}, {1, 1, 1, 1, 1, 1}},   // stride 2 in time: windows
    {8, 12, 1, {4, 5, 6}, {3, 3, 3}, {2, 1, 1}, {1, 1, 1}, {2, 1, 1, 2, 1, 1}},  // dilated in time
    {8, 8, 1, {2, 9, 6}, {3, 3, 3}, {1, 4, 1}, {1, 1, 1}, {1, 4, 1, 1, 4, 0}},   // and a dilated H, uneven pads
    {16, 16, 16, {2, 6, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},  // depthwise
    {8, 4, 1, {5}, {3}, {2}, {1}, {2, 2}},                                       // 1-D, dilated
};

TEST(SkipPaddingTaps, VideoRegionsDoOnlyTheTapsTheyRead) {
  for (size_t i = 0; i < kNd.size(); ++i) {
    const NdCase& c = kNd[i];
    SCOPED_TRACE("case " + std::to_string(i));
    std::vector<Tensor> ins{random_f32(input_dims(c), 60 + static_cast<uint32_t>(i))};
    std::vector<Tensor> want = interpret(*nd_conv_graph(c), ins);
    auto g = nd_conv_graph(c);
    ASSERT_EQ(skip_padding_taps(*g, 0), 1);
    int64_t regions = 1, kept = 1;
    for (size_t a = 0; a < c.in.size(); ++a) {
      const NdAxis ax = nd_axis(c, a);
      kept *= ax.kept;
      regions *= ax.split ? ax.count.runs : 1;
    }
    EXPECT_EQ(count_ops(*g, "Conv"), regions);
    EXPECT_EQ(conv_macs(*g), static_cast<double>(kept));
    EXPECT_EQ(g->outputs()[1]->name, "y");
    expect_near_scaled(interpret(*g, ins), want, 1e-5);
  }
}

// One frame: a 3x3x3 Conv reads only its centre time tap and becomes a 1x3x3
// Conv of the centre weights, with no Slice and no Concat; two frames: two
// 2x3x3 Convs (each frame's two taps) reading the whole input.
TEST(SkipPaddingTaps, ShortTimeAxesKeepTheFramesTheyRead) {
  {
    auto g = nd_conv_graph(kNd[1]);
    ASSERT_EQ(skip_padding_taps(*g, 0), 1);
    expect_one_conv_of_x(*g, {8, 16, 1, 3, 3});
  }
  auto g = nd_conv_graph(kNd[0]);
  ASSERT_EQ(skip_padding_taps(*g, 0), 1);
  ASSERT_EQ(count_ops(*g, "Conv"), 2);
  EXPECT_EQ(count_ops(*g, "Slice"), 0);
  EXPECT_EQ(count_ops(*g, "Concat"), 1);
  for (const auto& n : g->nodes()) {
    if (n->op_type == "Conv") {
      EXPECT_EQ(n->inputs[1]->type.dims, (Dims{8, 16, 2, 3, 3}));
      EXPECT_EQ(n->outputs[0]->type.dims, (Dims{1, 8, 1, 7, 7}));
    }
    if (n->op_type == "Concat") {
      EXPECT_EQ(OpAttrs(*n, g->opset).i("axis"), 2);
    }
  }
  // A long time axis keeps its thin border: nothing to rewrite.
  auto plain = nd_conv_graph({16, 8, 1, {8, 7, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}});
  EXPECT_EQ(skip_padding_taps(*plain, 0), 0);
}

// Compiled for AVX-512 and AVX2, after a 1x1x1 stem Conv, against the
// interpreter on the original graph: the video regions take the blocked
// layout, their time Slices and Concats carried in it (the stem's output
// the one value reordered in).
TEST(SkipPaddingTaps, CompiledVideoMatchesTheOriginalGraph) {
  for (codegen::Isa isa : host_isas()) {
    for (size_t i = 0; i < kNd.size(); ++i) {
      const NdCase& c = kNd[i];
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + " case " + std::to_string(i));
      std::vector<Tensor> ins{random_f32(input_dims(c), 80 + static_cast<uint32_t>(i))};
      std::vector<Tensor> want = interpret(*nd_conv_graph(c, true), ins);
      auto g = nd_conv_graph(c, true);
      ASSERT_EQ(skip_padding_taps(*g, 0), 1);
      const int convs = count_ops(*g, "Conv");  // the regions and the stem
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(std::move(g), o);
      EXPECT_EQ(count_ops(m.graph(), "Conv") + count_ops(m.graph(), "ConvBlocked") +
                    count_ops(m.graph(), "DepthwiseConvBlocked"),
                convs);
      if (c.in.size() == 3) {
        EXPECT_EQ(count_ops(m.graph(), "Conv"), 0);  // every region blocked
        EXPECT_EQ(count_ops(m.graph(), "ReorderToBlocked"), 1);
      }
      expect_near_scaled(m.run(ins), want, 1e-5);
    }
  }
}

// The target pipeline on R3D-18's last stage at 16 frames (2 time positions,
// 7x7, here 64 channels): two blocked regions, their Concat along time kept
// blocked, reorders only of the input and of the two outputs.
TEST(SkipPaddingTaps, PipelineRewritesShortTimeAxes) {
  const NdCase layer4{64, 64, 1, {2, 7, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}};
  std::vector<Tensor> ins{random_f32(input_dims(layer4), 91)};
  runtime::Executor m(nd_conv_graph(layer4), runtime::ExecutorOptions{});
  EXPECT_EQ(count_ops(m.graph(), "ConvBlocked"), 2);
  EXPECT_EQ(count_ops(m.graph(), "ReorderToBlocked"), 1);
  EXPECT_EQ(count_ops(m.graph(), "ReorderFromBlocked"), 2);
  expect_near_scaled(m.run(ins), interpret(*nd_conv_graph(layer4), ins), 1e-5);
}

}  // namespace
}  // namespace tessera
