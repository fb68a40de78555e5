// The channel-blocked layout (opt/blocked_layout.cpp, ops/blocked_conv.*):
// the pass against the reference interpreter on the original graph — first
// convolutions on NCHW images, channel counts that leave padding lanes,
// depthwise and grouped convolutions, pools, concatenations, per-channel
// constants, outputs taken in the middle — the layout changes it leaves, the
// convolutions it must leave alone, the blocked reference kernels, AVX2's
// 8-lane blocks, artifacts, and errors naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "opt/passes.h"
#include "runtime/executor.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "support/thread_pool.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::host_isas;
using tessera::testing::random_f32;
using tessera::testing::save_and_load;

AttrMap conv_attrs(std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1}, int64_t group = 1,
                   std::vector<int64_t> dilations = {1, 1}) {
  AttrMap a;
  a["pads"] = Attribute::of_ints(std::move(pads));
  a["strides"] = Attribute::of_ints(std::move(strides));
  a["dilations"] = Attribute::of_ints(std::move(dilations));
  a["group"] = Attribute::of_int(group);
  return a;
}

uint32_t seed_ = 1;

Value* conv(Graph& g, Value* x, int64_t M, int64_t Cg, int64_t k, AttrMap attrs, const std::string& name) {
  Value* w = g.add_constant(name + ".w", random_f32({M, Cg, k, k}, seed_++, -0.5f, 0.5f));
  Value* b = g.add_constant(name + ".b", random_f32({M}, seed_++));
  return g.add_node("Conv", {x, w, b}, {name}, std::move(attrs), name)->outputs[0];
}

Value* unary(Graph& g, const std::string& op, Value* x, const std::string& name) {
  return g.add_node(op, {x}, {name}, {}, name)->outputs[0];
}

// A small network with every construct the pass handles: a 7x7 stride-2
// first convolution on a 3-channel image, ReLU, max pool, zero padding and
// an average pool, a 3x3 convolution
// to 24 channels (a half-empty second block), Clip, a stride-2 depthwise
// convolution, a per-channel scale, grouped convolutions (4 channels per
// group: several groups per block; 16 per group: one group per block),
// branches concatenated, a residual add, global average pool, a classifier.
std::unique_ptr<Graph> network() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("image", {DType::F32, {1, 3, 29, 30}, true});
  Value* c1 = unary(*g, "Relu", conv(*g, x, 16, 3, 7, conv_attrs({3, 3, 3, 3}, {2, 2}), "stem"), "stem_relu");
  AttrMap mp;
  mp["kernel_shape"] = Attribute::of_ints({3, 3});
  mp["strides"] = Attribute::of_ints({2, 2});
  mp["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* p1 = g->add_node("MaxPool", {c1}, {"pool"}, mp, "pool")->outputs[0];
  // Explicit zero padding before an average pool (as torchvision's Inception exports it).
  Value* pads = g->add_constant("pads", Tensor::from<int64_t>({8}, {0, 0, 1, 1, 0, 0, 1, 1}));
  Value* padded = g->add_node("Pad", {p1, pads}, {"padded"}, {}, "pad")->outputs[0];
  AttrMap ap;
  ap["kernel_shape"] = Attribute::of_ints({3, 3});
  Value* avg = g->add_node("AveragePool", {padded}, {"avg"}, ap, "avg")->outputs[0];
  Value* c2 = conv(*g, avg, 24, 16, 3, conv_attrs({1, 1, 1, 1}), "c24");
  Value* lo = g->add_constant("lo", Tensor::scalar<float>(0.0f));
  Value* hi = g->add_constant("hi", Tensor::scalar<float>(6.0f));
  Value* r2 = g->add_node("Clip", {c2, lo, hi}, {"clip"}, {}, "clip")->outputs[0];
  Value* dw = conv(*g, r2, 24, 1, 3, conv_attrs({1, 1, 1, 1}, {2, 2}, 24), "dw");
  Value* scale = g->add_constant("scale", random_f32({24, 1, 1}, 99));
  Value* sc = g->add_node("Mul", {dw, scale}, {"scaled"}, {}, "scale")->outputs[0];
  Value* c3 = conv(*g, sc, 32, 24, 1, conv_attrs({0, 0, 0, 0}), "c32");
  Value* g8 = unary(*g, "Relu", conv(*g, c3, 32, 4, 3, conv_attrs({1, 1, 1, 1}, {1, 1}, 8), "grp8"), "grp8_relu");
  Value* g2 = conv(*g, c3, 32, 16, 3, conv_attrs({2, 2, 2, 2}, {1, 1}, 2, {2, 2}), "grp2");
  Value* cat = g->add_node("Concat", {g8, g2}, {"cat"}, {{"axis", Attribute::of_int(1)}}, "cat")->outputs[0];
  Value* c4 = conv(*g, cat, 32, 64, 1, conv_attrs({0, 0, 0, 0}), "c4");
  Value* res = g->add_node("Add", {c4, c3}, {"res"}, {}, "res")->outputs[0];
  Value* gap = unary(*g, "GlobalAveragePool", res, "gap");
  Value* flat = g->add_node("Flatten", {gap}, {"flat"}, {{"axis", Attribute::of_int(1)}}, "flat")->outputs[0];
  Value* fc_w = g->add_constant("fc.w", random_f32({10, 32}, 77));
  AttrMap ga;
  ga["transB"] = Attribute::of_int(1);
  g->add_output(g->add_node("Gemm", {flat, fc_w}, {"logits"}, ga, "fc")->outputs[0]);
  g->add_output(r2);  // an output in the middle, read by later convolutions too
  infer_graph(*g);
  return g;
}

// The pass leaves one reorder into the layout (none: the first convolution
// reads the NCHW image) and the reorders out where values leave it — the
// Flatten and the Clip output — and the rewritten graph, run by the
// interpreter's blocked kernels, gives the original graph's outputs.
TEST(BlockedLayout, PassKeepsTheLayoutBetweenConvolutions) {
  auto g = network();
  std::vector<Tensor> ins{random_f32({1, 3, 29, 30}, 5)};
  std::vector<Tensor> want = interpret(*g, ins);
  EXPECT_EQ(to_blocked_layout(*g, 16), 7);
  EXPECT_EQ(count_ops(*g, "Conv"), 0);
  EXPECT_EQ(count_ops(*g, "ConvBlocked"), 6);
  EXPECT_EQ(count_ops(*g, "DepthwiseConvBlocked"), 1);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 0);
  EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 2);
  EXPECT_EQ(count_ops(*g, "AveragePool"), 2);  // and the global pool, over the blocked plane
  EXPECT_EQ(count_ops(*g, "Pad"), 1);
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->outputs()[0]->name, "logits");
  EXPECT_EQ(g->outputs()[1]->name, "clip");
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
}

// Compiled for AVX-512 (16 lanes a block) and AVX2 (8), against the
// interpreter on the original graph.
TEST(BlockedLayout, CompiledMatchesTheOriginalGraph) {
  std::vector<Tensor> ins{random_f32({1, 3, 29, 30}, 6)};
  std::vector<Tensor> want = interpret(*network(), ins);
  for (codegen::Isa isa : host_isas()) {
    SCOPED_TRACE(codegen::isa_name(isa));
    runtime::ExecutorOptions o;
    o.isa = isa;
    runtime::Executor m(network(), o);
    EXPECT_EQ(count_ops(m.graph(), "ConvBlocked"), 6);
    const Value* w = nullptr;
    for (const auto& n : m.graph().nodes())
      if (n->op_type == "ConvBlocked") w = n->inputs[1];
    ASSERT_TRUE(w);
    EXPECT_EQ(w->type.dims.back(), isa == codegen::Isa::AVX2 ? 8 : 16);
    expect_near_scaled(m.run(ins), want, 1e-5);
    expect_near_scaled(m.run(ins), want, 1e-5);  // the plan reused
  }
}

// Without fusion every blocked op is its own kernel; the outputs stay the
// original graph's.
TEST(BlockedLayout, UnfusedKernelsMatchTheOriginalGraph) {
  std::vector<Tensor> ins{random_f32({1, 3, 29, 30}, 7)};
  std::vector<Tensor> want = interpret(*network(), ins);
  runtime::ExecutorOptions o;
  o.fusion = false;
  runtime::Executor m(network(), o);
  expect_near_scaled(m.run(ins), want, 1e-5);
}

// Groups that do not line up with blocks (3 channels per group) and
// depthwise convolutions with a channel multiplier stay NCHW Conv nodes;
// values crossing between the layouts are reordered once each.
TEST(BlockedLayout, ConvolutionsThatDoNotFitStayNchw) {
  auto build = [] {
    seed_ = 40;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 48, 9, 9}, true});
    Value* a = conv(*g, x, 48, 48, 3, conv_attrs({1, 1, 1, 1}), "dense");
    Value* b = conv(*g, a, 48, 3, 3, conv_attrs({1, 1, 1, 1}, {1, 1}, 16), "g16");
    Value* c = conv(*g, b, 96, 1, 3, conv_attrs({1, 1, 1, 1}, {1, 1}, 48), "mult2");
    g->add_output(conv(*g, c, 16, 96, 1, conv_attrs({0, 0, 0, 0}), "out"));
    infer_graph(*g);
    return g;
  };
  auto g = build();
  std::vector<Tensor> ins{random_f32({1, 48, 9, 9}, 8)};
  std::vector<Tensor> want = interpret(*g, ins);
  EXPECT_EQ(to_blocked_layout(*g, 16), 2);
  EXPECT_EQ(count_ops(*g, "Conv"), 2);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 2);   // the input, and before "out"
  EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 2);  // after "dense", and the output
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
  runtime::Executor m(build(), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), want, 1e-5);
}

// The blocked reference kernel sums in the reference Conv's order, padding
// lanes and other groups' channels adding exact zeros: the rewritten graph
// of convolutions alone gives the original's bits.
TEST(BlockedLayout, BlockedReferenceKernelsGiveTheConvBits) {
  auto build = [] {
    seed_ = 60;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 20, 11, 10}, true});
    Value* a = conv(*g, x, 40, 20, 3, conv_attrs({1, 0, 2, 1}, {2, 1}), "a");
    Value* b = conv(*g, a, 40, 1, 5, conv_attrs({2, 2, 2, 2}, {1, 1}, 40), "b");
    g->add_output(conv(*g, b, 32, 5, 3, conv_attrs({1, 1, 1, 1}, {1, 1}, 8, {1, 2}), "c"));
    infer_graph(*g);
    return g;
  };
  auto g = build();
  std::vector<Tensor> ins{random_f32({1, 20, 11, 10}, 9)};
  Tensor want = interpret(*g, ins)[0];
  ASSERT_EQ(to_blocked_layout(*g, 8), 2);  // c stays NCHW: groups of 5 input channels do not fill blocks of 8
  Tensor got = interpret(*g, ins)[0];
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t k = 0; k < got.numel(); ++k) ASSERT_EQ(got.data<float>()[k], want.data<float>()[k]) << k;
}

// A dense convolution of 24 channels in blocks of 16 sums over the 24 real
// channels only (in_channels), not the 8 padding lanes of the second block:
// the pass sets the attribute, and a ConvBlocked whose padding lanes and
// their weights hold NaN still gives the NCHW convolution's outputs,
// compiled and in the reference kernel.
TEST(BlockedLayout, PaddingLanesAreNotSummed) {
  constexpr int64_t C = 24, M = 20, H = 6, W = 7, K = 3, b = 16, Cb = 2, Mb = 2;
  seed_ = 90;
  auto nchw = std::make_unique<Graph>();
  Value* x = nchw->add_input("x", {DType::F32, {1, C, H, W}, true});
  nchw->add_output(conv(*nchw, x, M, C, K, conv_attrs({1, 1, 1, 1}), "c"));
  infer_graph(*nchw);
  Tensor image = random_f32({1, C, H, W}, 91);
  Tensor want = interpret(*nchw, {image})[0];
  const Tensor w = *nchw->find_value("c.w")->constant;  // copies: the pass drops the originals
  const Tensor bias = *nchw->find_value("c.b")->constant;

  ASSERT_EQ(to_blocked_layout(*nchw, b), 1);
  int blocked_convs = 0;
  for (const auto& n : nchw->nodes()) {
    if (n->op_type != "ConvBlocked") continue;
    ++blocked_convs;
    EXPECT_EQ(OpAttrs(*n, nchw->opset).i("in_channels"), C);
  }
  EXPECT_EQ(blocked_convs, 1);

  const float nan = std::nanf("");
  Tensor xb(DType::F32, {1, Cb, H, W, b}), wb(DType::F32, {Mb, Cb, K, K, b, b}), bb(DType::F32, {Mb, b});
  for (int64_t k = 0; k < xb.numel(); ++k) xb.data<float>()[k] = nan;
  for (int64_t k = 0; k < wb.numel(); ++k) wb.data<float>()[k] = nan;
  for (int64_t k = 0; k < bb.numel(); ++k) bb.data<float>()[k] = k < M ? bias.data<float>()[k] : 0.0f;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < H * W; ++p) xb.data<float>()[((c / b) * H * W + p) * b + c % b] = image.data<float>()[c * H * W + p];
  for (int64_t m = 0; m < Mb * b; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < K * K; ++t)
        wb.data<float>()[((((m / b) * Cb + c / b) * K * K + t) * b + c % b) * b + m % b] =
            m < M ? w.data<float>()[(m * C + c) * K * K + t] : 0.0f;
  auto blocked = [&] {
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* in = g->add_input("xb", {DType::F32, {1, Cb, H, W, b}, true});
    AttrMap a{{"strides", Attribute::of_ints({1, 1})}, {"dilations", Attribute::of_ints({1, 1})},
              {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"in_channels", Attribute::of_int(C)}};
    Node* n = g->add_node("ConvBlocked", {in, g->add_constant("wb", wb), g->add_constant("bb", bb)}, {"y"}, a, "cb");
    n->domain = kBlockedDomain;
    g->add_output(n->outputs[0]);
    infer_graph(*g);
    return g;
  };
  // Back to NCHW, the first M channels.
  auto unblock = [&](const Tensor& y) {
    Tensor r(DType::F32, {1, M, H, W});
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < H * W; ++p) r.data<float>()[m * H * W + p] = y.data<float>()[((m / b) * H * W + p) * b + m % b];
    return r;
  };
  expect_near_scaled({unblock(interpret(*blocked(), {xb})[0])}, {want}, 1e-5);
  if (!codegen::host_supports(codegen::Isa::AVX512)) {
    GTEST_LOG_(INFO) << "AVX-512 not on this host: the compiled 16-lane kernel not run";
    return;
  }
  runtime::ExecutorOptions o;
  o.isa = codegen::Isa::AVX512;
  runtime::Executor m(blocked(), o);
  expect_near_scaled({unblock(m.run({xb})[0])}, {want}, 1e-5);
}

// A model compiled with the blocked layout saves its rewritten graph; the
// artifact loads without rewriting it again and runs the same.
TEST(BlockedLayout, ArtifactKeepsTheRewrittenGraph) {
  std::vector<Tensor> ins{random_f32({1, 3, 29, 30}, 10)};
  runtime::Executor m(network(), runtime::ExecutorOptions{});
  std::vector<Tensor> first = m.run(ins);
  auto loaded = save_and_load(m, "blocked");
  EXPECT_EQ(count_ops(loaded->graph(), "ConvBlocked"), 6);
  EXPECT_EQ(loaded->graph().nodes().size(), m.graph().nodes().size());
  expect_near_scaled(loaded->run(ins), first, 0);
}

// A row of 31 output pixels is tiled 16 + 16 with the second tile shifted
// back one pixel (split_shift), so one pixel is written twice: the fused
// convolution + residual add must then not write its output over the
// residual (the second write would read the first's result).
TEST(BlockedLayout, ShiftedTilesDoNotWriteOverTheirInputs) {
  auto build = [] {
    seed_ = 80;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 16, 5, 31}, true});
    Value* r = unary(*g, "Relu", conv(*g, x, 16, 16, 3, conv_attrs({1, 1, 1, 1}), "a"), "r");
    Value* c = conv(*g, r, 16, 16, 3, conv_attrs({1, 1, 1, 1}), "b");
    Value* d = unary(*g, "Sigmoid", conv(*g, x, 16, 16, 1, conv_attrs({0, 0, 0, 0}), "d"), "s");
    g->add_output(g->add_node("Add", {c, d}, {"y"}, {}, "res")->outputs[0]);
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 16, 5, 31}, 11)};
  std::vector<Tensor> want = interpret(*build(), ins);
  runtime::Executor m(build(), runtime::ExecutorOptions{});
  expect_near_scaled(m.run(ins), want, 1e-5);
  bool shifted = false;
  for (const runtime::Step& st : m.last_plan()->steps) {
    if (!schedule::has_shifted_split(st.schedule)) continue;
    shifted = true;
    for (bool b : st.in_place) EXPECT_FALSE(b) << st.node->describe();
  }
  EXPECT_TRUE(shifted);
}

// A blocked convolution whose activations outweigh its weights splits its
// rows in halves outermost (each thread keeps its half of the image from
// layer to layer); one whose weights weigh more keeps its output blocks
// outermost. Both compiled give the original graph's outputs.
TEST(BlockedLayout, LargeMapsSplitTheirRowsInHalves) {
  auto build = [] {
    seed_ = 100;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 16, 12, 10}, true});
    Value* a = unary(*g, "Relu", conv(*g, x, 32, 16, 1, conv_attrs({0, 0, 0, 0}), "wide"), "r");
    Value* d = conv(*g, a, 32, 1, 3, conv_attrs({1, 1, 1, 1}, {1, 1}, 32), "dw");
    g->add_output(conv(*g, d, 64, 32, 3, conv_attrs({1, 1, 1, 1}), "heavy"));
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 16, 12, 10}, 101)};
  std::vector<Tensor> want = interpret(*build(), ins);
  runtime::ExecutorOptions o;
  o.fusion = false;  // one step per convolution
  runtime::Executor m(build(), o);
  expect_near_scaled(m.run(ins), want, 1e-5);
  std::map<std::string, bool> halves;
  for (const runtime::Step& st : m.last_plan()->steps) {
    if (st.node->op_type.find("ConvBlocked") == std::string::npos) continue;
    bool split = false;
    for (const schedule::Directive& step : st.schedule.directives)
      split |= step.kind == schedule::DirectiveKind::Split && step.names[0] == "h" && step.ints == std::vector<int64_t>{6};
    halves[st.node->name] = split;
  }
  EXPECT_EQ(halves, (std::map<std::string, bool>{{"wide", true}, {"dw", true}, {"heavy", false}}));
}

// An odd number of rows (Inception's 35 and 17) has no halves of whole rows:
// a convolution whose activations outweigh its weights there puts its row
// tiles outermost, before the output blocks (so each thread still computes
// the same half of the image in every layer), one whose weights weigh more
// keeps the output blocks outermost. On AVX-512 and AVX2, at 1 and 2
// threads, the outputs are the original graph's, and alike bit for bit.
TEST(BlockedLayout, OddMapsPutTheirRowsOutermost) {
  auto build = [] {
    seed_ = 120;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, 16, 17, 9}, true});
    Value* a = unary(*g, "Relu", conv(*g, x, 32, 16, 1, conv_attrs({0, 0, 0, 0}), "wide"), "r");
    Value* b = unary(*g, "Relu", conv(*g, a, 32, 32, 3, conv_attrs({1, 1, 1, 1}), "mid"), "r2");
    g->add_output(conv(*g, b, 64, 32, 3, conv_attrs({1, 1, 1, 1}), "heavy"));
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 16, 17, 9}, 121)};
  std::vector<Tensor> want = interpret(*build(), ins);
  const int saved_threads = ThreadPool::global().threads();
  for (codegen::Isa isa : host_isas()) {
    std::vector<Tensor> first;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + ", " + std::to_string(threads) + " threads");
      runtime::ExecutorOptions o;
      o.isa = isa;
      o.threads = threads;
      o.fusion = false;  // one step per convolution
      runtime::Executor m(build(), o);
      std::vector<Tensor> got = m.run(ins);
      expect_near_scaled(got, want, 1e-5);
      if (first.empty()) first = got;
      ASSERT_EQ(got.size(), first.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].nbytes(), first[k].nbytes());
        EXPECT_EQ(std::memcmp(got[k].raw(), first[k].raw(), got[k].nbytes()), 0) << "output " << k;
      }
      // Per convolution: whether its tile loops have the rows (h, or h.o
      // tiled by th) before the output blocks (kb, or kb.o).
      std::map<std::string, bool> rows_first;
      for (const runtime::Step& st : m.last_plan()->steps) {
        if (st.node->op_type.find("ConvBlocked") == std::string::npos) continue;
        for (const schedule::Directive& step : st.schedule.directives) {
          if (step.kind != schedule::DirectiveKind::Reorder) continue;
          auto starts = [&](const std::string& prefix) {
            return std::find_if(step.names.begin(), step.names.end(), [&](const std::string& n) {
              return n == prefix || n.rfind(prefix + ".", 0) == 0;
            });
          };
          if (starts("h") == step.names.end() || starts("kb") == step.names.end()) continue;
          rows_first.emplace(st.node->name, starts("h") < starts("kb"));  // the tile loops' reorder comes first
        }
      }
      EXPECT_EQ(rows_first, (std::map<std::string, bool>{{"wide", true}, {"mid", true}, {"heavy", false}}));
    }
  }
  ThreadPool::global().set_threads(saved_threads);
}

// A conv to 56 channels (3 blocks of 16, the last half padding lanes) split
// on channels into `sizes`, each part through a Relu and its own 3x3 conv
// (the last part also a graph output), and slices {start, end, axis, step,
// channels after it} of the conv's output, each through a Relu and a 1x1
// conv: what PET's merged parallel convs and its corrections produce.
std::unique_ptr<Graph> split_network(const std::vector<int64_t>& sizes,
                                     const std::vector<std::vector<int64_t>>& slices) {
  seed_ = 120;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 7, 6}, true});
  Value* y = conv(*g, x, 56, 16, 1, conv_attrs({0, 0, 0, 0}), "merged");
  std::vector<std::string> names;
  for (size_t i = 0; i < sizes.size(); ++i) names.push_back("part" + std::to_string(i));
  Value* split = g->add_constant("split", Tensor::from<int64_t>({static_cast<int64_t>(sizes.size())}, sizes));
  Node* sp = g->add_node("Split", {y, split}, names, {{"axis", Attribute::of_int(1)}}, "split");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string k = std::to_string(i);
    Value* r = unary(*g, "Relu", sp->outputs[i], "relu" + k);
    g->add_output(conv(*g, r, 16, sizes[i], 3, conv_attrs({1, 1, 1, 1}), "branch" + k));
  }
  g->add_output(sp->outputs.back());
  for (size_t i = 0; i < slices.size(); ++i) {
    const std::vector<int64_t>& s = slices[i];
    const std::string k = "slice" + std::to_string(i);
    auto ints1 = [&](const std::string& what, int64_t v) {
      return g->add_constant(k + what, Tensor::from<int64_t>({1}, {v}));
    };
    Value* sl = g->add_node("Slice", {y, ints1(".starts", s[0]), ints1(".ends", s[1]), ints1(".axes", s[2]),
                                      ints1(".steps", s[3])}, {k}, {}, k)->outputs[0];
    Value* r = unary(*g, "Relu", sl, k + ".relu");
    g->add_output(conv(*g, r, 8, s[4], 1, conv_attrs({0, 0, 0, 0}), k + ".conv"));
  }
  infer_graph(*g);
  return g;
}

// How many nodes of `op` read a blocked (rank-5) value.
int blocked_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes())
    if (node->op_type == op && node->inputs[0]->type.rank() == 5) ++n;
  return n;
}

// The pass, the interpreter and the compiled kernels (fused and not) on
// `build()`'s graph give the original graph's outputs; returns the pass's graph.
std::unique_ptr<Graph> check_against_original(const std::function<std::unique_ptr<Graph>()>& build) {
  std::vector<Tensor> ins{random_f32({1, 16, 7, 6}, 121)};
  std::vector<Tensor> want = interpret(*build(), ins);
  auto g = build();
  EXPECT_EQ(to_blocked_layout(*g, 16), static_cast<int>(count_ops(*build(), "Conv")));
  expect_near_scaled(interpret(*g, ins), want, 1e-5);
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "fused" : "unfused");
    runtime::ExecutorOptions o;
    o.fusion = fusion;
    runtime::Executor m(build(), o);
    expect_near_scaled(m.run(ins), want, 1e-5);
  }
  return g;
}

// Split on channels into parts of whole blocks (the last may end in padding
// lanes: 8 of 16) stays in the blocked layout: no reorder between the merged
// conv and the branches' convs; the part that is a graph output is reordered
// out under its own name.
TEST(BlockedLayout, SplitOnBlockBoundariesStaysBlocked) {
  auto g = check_against_original([] { return split_network({16, 32, 8}, {}); });
  EXPECT_EQ(blocked_ops(*g, "Split"), 1);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 1);  // the image only
  EXPECT_EQ(count_ops(*g, "ReorderFromBlocked"), 4);  // three branch outputs and the last part
  EXPECT_EQ(g->outputs().back()->name, "part2");
  // compiled for AVX2 too: blocks of 8, the same parts
  if (codegen::host_supports(codegen::Isa::AVX2)) {
    std::vector<Tensor> ins{random_f32({1, 16, 7, 6}, 122)};
    runtime::ExecutorOptions o;
    o.isa = codegen::Isa::AVX2;
    runtime::Executor m(split_network({16, 32, 8}, {}), o);
    EXPECT_EQ(blocked_ops(m.graph(), "Split"), 1);
    expect_near_scaled(m.run(ins), interpret(*split_network({16, 32, 8}, {}), ins), 1e-5);
  }
}

// A part that is not whole blocks before the last (20 of 16-lane blocks)
// keeps the Split on the NCHW value: reordered out once, each part back in.
TEST(BlockedLayout, SplitOffBlockBoundariesFallsBackToNchw) {
  auto g = check_against_original([] { return split_network({20, 36}, {}); });
  EXPECT_EQ(blocked_ops(*g, "Split"), 0);
  EXPECT_EQ(count_ops(*g, "Split"), 1);
  EXPECT_EQ(count_ops(*g, "ReorderToBlocked"), 3);  // the image, and each part
}

// Slices on channels from a block boundary to a block boundary or to the
// last channel (step 1), and spatial slices with any step, stay blocked;
// a channel slice starting inside a block or with a step does not.
TEST(BlockedLayout, SlicesOnBlockBoundariesStayBlocked) {
  auto g = check_against_original([] {
    return split_network({56}, {{16, 48, 1, 1, 32},     // whole blocks
                                {32, 1000, 1, 1, 24},   // to the last channel: 1.5 blocks
                                {-24, 56, -3, 1, 24},   // the same, negative start and axis
                                {1, 6, 2, 2, 56},       // rows 1, 3, 5
                                {-1, 0, -1, -2, 56},    // columns backwards
                                {8, 24, 1, 1, 16},      // inside blocks: NCHW
                                {0, 48, 1, 2, 24}});    // a channel step: NCHW
  });
  EXPECT_EQ(blocked_ops(*g, "Slice"), 5);
  EXPECT_EQ(count_ops(*g, "Slice"), 7);
}

// Inferring `n` (of the blocked domain) fails with an error that names it and says `what`.
void expect_error_naming(Node& n, const std::string& what) {
  tessera::testing::expect_error_naming(n, kBlockedDomain, what);
}

TEST(BlockedLayout, BadBlockedNodesNameTheNode) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 2, 5, 5, 16}, true});
  Value* w = g.add_constant("w", Tensor(DType::F32, {1, 2, 3, 3, 8, 16}));
  expect_error_naming(*g.add_node("ConvBlocked", {x, w}, {"y"}, {}, "bad_conv"), "input block");
  Value* w2 = g.add_constant("w2", Tensor(DType::F32, {2, 3, 3, 3, 16, 16}));
  expect_error_naming(*g.add_node("ConvBlocked", {x, w2}, {"y2"}, {}, "reads_past"), "reads input blocks up to");
  Value* w3 = g.add_constant("w3", Tensor(DType::F32, {1, 2, 3, 3, 16, 16}));
  expect_error_naming(
      *g.add_node("ConvBlocked", {x, w3}, {"y3"}, {{"in_channels", Attribute::of_int(16)}}, "few_channels"),
      "in_channels 16");
  expect_error_naming(
      *g.add_node("ReorderFromBlocked", {x}, {"z"}, {{"channels", Attribute::of_int(40)}}, "too_many"), "40");
}


// Blocked max pools propagate NaN and compare infinities as the reference
// does, their maximum finished tile by tile (the NaN check inside the tile):
// a convolution's map plus an input holding NaN, +inf and -inf at scattered
// positions (passed through a depthwise 1x1 convolution of weight 1) (some windows with both NaN and +inf, some with +inf only),
// pooled 3x3 stride 2 with padding and 2x2; AVX-512 and AVX2.
TEST(BlockedLayout, MaxPoolsPropagateNanAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Dims dims{1, 20, 9, 10};
  Tensor e = random_f32(dims, 71, -1, 1);
  for (int64_t i = 0; i < e.numel(); i += 37) e.data<float>()[i] = nan;
  for (int64_t i = 5; i < e.numel(); i += 29) e.data<float>()[i] = inf;
  for (int64_t i = 11; i < e.numel(); i += 31) e.data<float>()[i] = -inf;
  auto build = [&](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads) {
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, dims, true});
    Value* ev = g->add_input("e", {DType::F32, dims, true});
    seed_ = 1;  // the same weights in every build
    Value* y = conv(*g, x, 20, 20, 3, conv_attrs({1, 1, 1, 1}), "c");
    // e through a depthwise 1x1 convolution of weight 1 (exact, NaN and
    // infinities kept): blocked like y, so the Add and the pool stay blocked.
    Value* ones = g->add_constant("ones", Tensor::from<float>({20, 1, 1, 1}, std::vector<float>(20, 1.0f)));
    Value* eb = g->add_node("Conv", {ev, ones}, {"eb"}, conv_attrs({0, 0, 0, 0}, {1, 1}, 20), "e_dw")->outputs[0];
    Value* sum = g->add_node("Add", {y, eb}, {"sum"}, {}, "add")->outputs[0];
    AttrMap mp{{"kernel_shape", Attribute::of_ints(std::move(k))}, {"strides", Attribute::of_ints(std::move(s))},
               {"pads", Attribute::of_ints(std::move(pads))}};
    g->add_output(g->add_node("MaxPool", {sum}, {"pool"}, mp, "pool")->outputs[0]);
    infer_graph(*g);
    return g;
  };
  const std::vector<std::function<std::unique_ptr<Graph>()>> graphs = {
      [&] { return build({3, 3}, {2, 2}, {1, 1, 1, 1}); }, [&] { return build({2, 2}, {1, 1}, {0, 0, 0, 0}); }};
  std::vector<Tensor> ins{random_f32(dims, 72), e};
  for (codegen::Isa isa : host_isas()) {
    for (size_t gi = 0; gi < graphs.size(); ++gi) {
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + " pool " + std::to_string(gi));
      const Tensor want = interpret(*graphs[gi](), ins)[0];
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(graphs[gi](), o);
      for (const auto& n : m.graph().nodes())
        if (n->op_type == "MaxPool") {
          EXPECT_EQ(n->inputs[0]->type.rank(), 5);  // pooled in the blocked layout
        }
      const Tensor got = m.run(ins)[0];
      ASSERT_EQ(got.dims(), want.dims());
      int nans = 0, infs = 0;
      for (int64_t k = 0; k < want.numel(); ++k) {
        const float w = want.data<float>()[k], v = got.data<float>()[k];
        if (std::isnan(w)) {
          ++nans;
          EXPECT_TRUE(std::isnan(v)) << "element " << k << ": " << v;
        } else if (std::isinf(w)) {
          ++infs;
          EXPECT_EQ(v, w) << "element " << k;
        } else {
          EXPECT_NEAR(v, w, 1e-5 * (1 + std::fabs(w))) << "element " << k;
        }
      }
      EXPECT_GT(nans, 0);
      EXPECT_GT(infs, 0);
    }
  }
}

}  // namespace
}  // namespace tessera
