// Dilated convolutions on their phases (opt/dilation_phases.cpp): a dilated
// 3x3 stride-1 blocked convolution becomes an undilated one on the input's
// phases in the batch. Checked against the interpreter on the original
// graph over dilations (equal and unequal), maps that are and are not whole
// phases, uneven pads, a batch of two, groups and channels that leave a
// partial block: the rewritten graph interpreted (the same sums in the same
// order: equal bits), and compiled for AVX-512 and AVX2 through the default
// pipeline and with Winograd made to take every rewritten convolution; by
// default Winograd takes F(4x4) in a residual bottleneck as ResNet's dilated
// layer4 (64 channels on a 40x40 map at dilation 4). The convolutions the
// rule leaves alone (small phases, one axis dilated, strided, 5x5, Winograd
// off) are checked to stay as they are.
#include <gtest/gtest.h>

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
  int64_t N, C, M, group, H, W, k, dh, dw, s;
  std::vector<int64_t> pads;  // begin h, begin w, end h, end w
  bool explicit_pad;          // the map is not whole phases: Pad and Slice around the phases
};

Value* conv(Graph& g, Value* x, int64_t M, int64_t Cg, int64_t k, std::vector<int64_t> dil, int64_t stride,
            std::vector<int64_t> pads, int64_t group, const std::string& name, uint32_t seed) {
  AttrMap a{{"kernel_shape", Attribute::of_ints({k, k})},
            {"dilations", Attribute::of_ints(std::move(dil))},
            {"strides", Attribute::of_ints({stride, stride})},
            {"pads", Attribute::of_ints(std::move(pads))},
            {"group", Attribute::of_int(group)}};
  std::vector<Value*> ins{x, g.add_constant(name + ".w", random_f32({M, Cg, k, k}, seed, -0.5f, 0.5f)),
                          g.add_constant(name + ".b", random_f32({M}, seed + 1))};
  return g.add_node("Conv", ins, {name}, a, name)->outputs[0];
}

// x -> the case's Conv -> Relu.
std::unique_ptr<Graph> conv_graph(const Case& c) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {c.N, c.C, c.H, c.W}, true});
  Value* y = conv(*g, x, c.M, c.C / c.group, c.k, {c.dh, c.dw}, c.s, c.pads, c.group, "atrous", 3);
  g->add_output(g->add_node("Relu", {y}, {"out"}, {}, "relu")->outputs[0]);
  infer_graph(*g);
  return g;
}

// Blocked convolutions in g with a dilation above 1.
int dilated_blocked_convs(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes()) {
    if (node->op_type != "ConvBlocked") continue;
    for (int64_t d : OpAttrs(*node, kAnyOpset).ints("dilations")) {
      if (d > 1) {
        ++n;
        break;
      }
    }
  }
  return n;
}

const std::vector<Case> kTaken = {
    {1, 32, 32, 1, 40, 40, 3, 2, 2, 1, {2, 2, 2, 2}, false},  // DeepLab's layer3 at 320x320: phases of 20x20
    {1, 32, 48, 1, 40, 40, 3, 4, 4, 1, {4, 4, 4, 4}, false},  // layer4: 10x10
    {2, 16, 16, 1, 33, 35, 3, 2, 4, 1, {2, 4, 2, 4}, true},   // a batch of two, unequal dilations, odd sizes
    {1, 24, 20, 1, 65, 65, 3, 2, 2, 1, {2, 2, 2, 2}, true},   // 520x520's 65x65, channels in a partial block
    {1, 32, 32, 2, 40, 40, 3, 2, 2, 1, {2, 2, 2, 2}, false},  // two groups
    {1, 16, 16, 1, 24, 24, 3, 3, 3, 1, {6, 3, 0, 3}, false},  // uneven pads, multiples of the dilation
    {1, 16, 16, 1, 26, 24, 3, 3, 3, 1, {4, 3, 2, 3}, true},   // uneven pads, not multiples
};

const std::vector<Case> kLeft = {
    {1, 16, 16, 1, 33, 33, 3, 12, 12, 1, {12, 12, 12, 12}, false},  // DeepLab's ASPP: phases of 5 rows
    {1, 16, 16, 1, 40, 40, 3, 1, 2, 1, {1, 2, 1, 2}, false},        // one axis dilated
    {1, 16, 16, 1, 40, 40, 3, 2, 2, 2, {2, 2, 2, 2}, false},        // strided
    {1, 16, 16, 1, 40, 40, 5, 2, 2, 1, {4, 4, 4, 4}, false},        // 5x5
};

// The rewrite on the blocked graph, interpreted: the original's bits, for
// both block widths; the Pad and Slice only where the map is not whole
// phases, and no dilated convolution left.
TEST(DilationPhases, InterpretedGivesTheConvolutionsBits) {
  for (int64_t b : {16, 8})
    for (size_t i = 0; i < kTaken.size(); ++i) {
      const Case& c = kTaken[i];
      SCOPED_TRACE("block " + std::to_string(b) + ", case " + std::to_string(i));
      std::vector<Tensor> ins{random_f32({c.N, c.C, c.H, c.W}, 20 + static_cast<uint32_t>(i))};
      std::vector<Tensor> want = interpret(*conv_graph(c), ins);
      auto g = conv_graph(c);
      ASSERT_EQ(to_blocked_layout(*g, b), 1);
      ASSERT_EQ(dilated_blocked_convs(*g), 1);
      EXPECT_EQ(dilations_to_phases(*g), 1);
      EXPECT_EQ(dilated_blocked_convs(*g), 0);
      EXPECT_EQ(count_ops(*g, "ConvBlocked"), 1);
      EXPECT_EQ(count_ops(*g, "Transpose"), 2);
      EXPECT_EQ(count_ops(*g, "Pad"), c.explicit_pad ? 1 : 0);
      EXPECT_EQ(count_ops(*g, "Slice"), c.explicit_pad ? 1 : 0);
      for (const auto& n : g->nodes()) {
        if (n->op_type == "ConvBlocked") {
          EXPECT_EQ(n->inputs[0]->type.dims[0], c.N * c.dh * c.dw);
        }
      }
      expect_near_scaled(interpret(*g, ins), want, 0);
    }
}

TEST(DilationPhases, LeavesOtherConvolutionsAlone) {
  for (size_t i = 0; i < kLeft.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    auto g = conv_graph(kLeft[i]);
    ASSERT_EQ(to_blocked_layout(*g, 16), 1);
    EXPECT_EQ(dilations_to_phases(*g), 0);
    EXPECT_EQ(count_ops(*g, "Transpose"), 0);
  }
}

// Compiled for AVX-512 and AVX2 against the original graph: through the
// default pipeline (no dilated convolution left; Winograd takes those where
// its estimate says it pays, the bottleneck below), and with Winograd
// F(2x2) and F(4x4) made to take every phase convolution.
TEST(DilationPhases, CompiledMatchesTheOriginalGraph) {
  for (codegen::Isa isa : host_isas())
    for (size_t i = 0; i < kTaken.size(); ++i) {
      const Case& c = kTaken[i];
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + " case " + std::to_string(i));
      std::vector<Tensor> ins{random_f32({c.N, c.C, c.H, c.W}, 40 + static_cast<uint32_t>(i))};
      std::vector<Tensor> want = interpret(*conv_graph(c), ins);
      runtime::ExecutorOptions o;
      o.isa = isa;
      runtime::Executor m(conv_graph(c), o);
      EXPECT_EQ(dilated_blocked_convs(m.graph()), 0);
      EXPECT_EQ(count_ops(m.graph(), "Transpose"), 2);
      expect_near_scaled(m.run(ins), want, 2e-5);
      for (int tile : {2, 4}) {
        SCOPED_TRACE("tile " + std::to_string(tile));
        auto g = conv_graph(c);
        ASSERT_EQ(to_blocked_layout(*g, isa == codegen::Isa::AVX2 ? 8 : 16), 1);
        ASSERT_EQ(dilations_to_phases(*g), 1);
        ASSERT_EQ(to_winograd(*g, tile), 1);
        runtime::ExecutorOptions w = o;
        w.passes.disable("blocked-layout");  // done above
        runtime::Executor mw(std::move(g), w);
        expect_near_scaled(mw.run(ins), want, 2e-5);
      }
    }
}

// ResNet's dilated bottleneck (layer4 of DeepLab and FCN, channels scaled
// down to 128 and 64): 1x1, ReLU, 3x3 at dilation 4, ReLU, 1x1, Add onto the input, ReLU.
// The 3x3 one, on its phases, is still found in the residual branch and
// takes F(4x4); with winograd off the pass does not run and the convolution
// stays dilated.
TEST(DilationPhases, BottleneckTakesTheLargeTiles) {
  auto model = [] {
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 128, 40, 40}, true});
    auto relu = [&](Value* v, const std::string& name) {
      return g->add_node("Relu", {v}, {name}, {}, name)->outputs[0];
    };
    Value* a = relu(conv(*g, x, 64, 128, 1, {1, 1}, 1, {0, 0, 0, 0}, 1, "conv1", 60), "relu1");
    Value* b = relu(conv(*g, a, 64, 64, 3, {4, 4}, 1, {4, 4, 4, 4}, 1, "conv2", 62), "relu2");
    Value* c = conv(*g, b, 128, 64, 1, {1, 1}, 1, {0, 0, 0, 0}, 1, "conv3", 64);
    g->add_output(relu(g->add_node("Add", {c, x}, {"sum"}, {}, "sum")->outputs[0], "out"));
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 128, 40, 40}, 66)};
  std::vector<Tensor> want = interpret(*model(), ins);
  for (codegen::Isa isa : host_isas()) {
    SCOPED_TRACE(codegen::isa_name(isa));
    runtime::ExecutorOptions o;
    o.isa = isa;
    runtime::Executor m(model(), o);
    int tiles = 0, rewritten = 0;
    for (const auto& node : m.graph().nodes())
      if (node->op_type == "WinogradOutput") {
        ++rewritten;
        tiles += static_cast<int>(OpAttrs(*node, kAnyOpset).i("tile"));
      }
    EXPECT_EQ(rewritten, 1);
    EXPECT_EQ(tiles, 4);
    expect_near_scaled(m.run(ins), want, 2e-5);

    runtime::ExecutorOptions off = o;
    off.passes.disable("winograd");
    runtime::Executor direct(model(), off);
    EXPECT_EQ(dilated_blocked_convs(direct.graph()), 1);
    EXPECT_EQ(count_ops(direct.graph(), "Transpose"), 0);
    expect_near_scaled(direct.run(ins), want, 2e-5);
  }
}

}  // namespace
}  // namespace tessera
