// MobileNetV3 segmentation networks in small (torchvision's LR-ASPP and
// DeepLabV3 heads on a dilated MobileNetV3 backbone), through the whole
// compiled pipeline: dilated depthwise convolutions (5x5 at dilation 2, 3x3
// at dilation 4, odd map sizes, channel counts leaving padding lanes) with
// hardswish and squeeze-excitation, the LR-ASPP head (a sigmoid-gated
// branch resized 2x to the low-level map), the ASPP head (atrous rates whose
// taps fall partly or wholly in the padding, a pooling branch resized back),
// and the final bilinear upsampling by 8, by 16 and by a non-integer scale.
// Checked against the reference interpreter on the original graph, compiled
// for AVX-512 (16 lanes a block) and AVX2 (8), fused and one kernel per op.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "runtime/executor.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::for_each_isa_and_fusion;
using tessera::testing::random_f32;

struct Builder {
  Graph& g;
  uint32_t seed = 1;

  // A node, its output's type inferred (the next node's weights take their shape from it).
  Value* node(const std::string& op, std::vector<Value*> ins, const std::string& name, AttrMap attrs = {}) {
    Node* n = g.add_node(op, std::move(ins), {name}, std::move(attrs), name);
    infer_node(*n, g.opset);
    return n->outputs[0];
  }

  // Conv of k x k taps (group `group`), padded to keep the map at stride 1.
  Value* conv(Value* x, int64_t M, int64_t k, const std::string& name, int64_t dilation = 1, int64_t group = 1,
              int64_t stride = 1) {
    const int64_t C = x->type.dims[1], pad = dilation * (k - 1) / 2;
    Value* w = g.add_constant(name + ".w", random_f32({M, C / group, k, k}, seed++, -0.5f, 0.5f));
    Value* b = g.add_constant(name + ".b", random_f32({M}, seed++, -0.2f, 0.2f));
    AttrMap a{{"kernel_shape", Attribute::of_ints({k, k})},
              {"pads", Attribute::of_ints({pad, pad, pad, pad})},
              {"dilations", Attribute::of_ints({dilation, dilation})},
              {"strides", Attribute::of_ints({stride, stride})},
              {"group", Attribute::of_int(group)}};
    return node("Conv", {x, w, b}, name, std::move(a));
  }

  // torch's hardsigmoid / hardswish as exported at opset 13.
  Value* hardsigmoid(Value* x, const std::string& name) {
    return node("HardSigmoid", {x}, name,
                {{"alpha", Attribute::of_float(1.0f / 6)}, {"beta", Attribute::of_float(0.5f)}});
  }
  Value* hardswish(Value* x, const std::string& name) { return node("Mul", {x, hardsigmoid(x, name + ".hs")}, name); }
  Value* relu(Value* x, const std::string& name) { return node("Relu", {x}, name); }

  // A bilinear resize to `sizes` as torch's F.interpolate(align_corners=False) exports it.
  Value* resize(Value* x, std::vector<int64_t> sizes, const std::string& name) {
    Value* roi = g.add_constant(name + ".roi", Tensor(DType::F32, {0}));
    Value* scales = g.add_constant(name + ".scales", Tensor(DType::F32, {0}));
    Value* sz = g.add_constant(name + ".sizes", Tensor::from<int64_t>({4}, sizes));
    return node("Resize", {x, roi, scales, sz}, name,
                {{"mode", Attribute::of_string("linear")},
                 {"coordinate_transformation_mode", Attribute::of_string("pytorch_half_pixel")}});
  }

  // An inverted residual block: 1x1 expansion, a k x k depthwise
  // convolution at `dilation` with hardswish, squeeze-excitation (global
  // pool, 1x1 down with ReLU, 1x1 up, hardsigmoid, a per-channel scale),
  // 1x1 projection, residual.
  Value* block(Value* x, int64_t expand, int64_t k, int64_t dilation, const std::string& name) {
    const int64_t C = x->type.dims[1];
    Value* e = hardswish(conv(x, expand, 1, name + ".expand"), name + ".expand.act");
    Value* d = hardswish(conv(e, expand, k, name + ".dw", dilation, expand), name + ".dw.act");
    Value* pooled = node("GlobalAveragePool", {d}, name + ".se.pool");
    Value* squeezed = relu(conv(pooled, 8, 1, name + ".se.fc1"), name + ".se.relu");
    Value* gate = hardsigmoid(conv(squeezed, expand, 1, name + ".se.fc2"), name + ".se.gate");
    Value* scaled = node("Mul", {d, gate}, name + ".se.scale");
    return node("Add", {conv(scaled, C, 1, name + ".project"), x}, name + ".residual");
  }
};

// The input's map (odd sizes) and the backbone: a stem at full resolution
// (the low-level features), a stride-2 depthwise step to the high-level map
// (13x11), and two dilated blocks there (5x5 at dilation 2 over 40
// channels, 3x3 at dilation 4 over 56).
constexpr int64_t kH = 26, kW = 22;

struct Backbone {
  Value *low, *high;
};
Backbone backbone(Builder& b, Value* x) {
  Value* low = b.hardswish(b.conv(x, 24, 3, "stem"), "stem.act");
  Value* down = b.relu(b.conv(low, 24, 3, "down.dw", 1, 24, 2), "down.act");
  Value* high = b.conv(down, 48, 1, "widen");
  high = b.block(high, 40, 5, 2, "block1");
  high = b.block(high, 56, 3, 4, "block2");
  return {low, high};
}

// LR-ASPP: a 1x1 branch gated by a sigmoid of the pooled map, resized 2x to
// the low-level map, classified and added to the low-level classifier's
// output, upsampled 8x (from 26x22 to 208x176) into the output.
std::unique_ptr<Graph> lraspp() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Builder b{*g};
  Value* x = g->add_input("image", {DType::F32, {1, 8, kH, kW}, true});
  const Backbone f = backbone(b, x);
  Value* cbr = b.relu(b.conv(f.high, 32, 1, "head.cbr"), "head.cbr.relu");
  Value* pooled = b.node("GlobalAveragePool", {f.high}, "head.scale.pool");
  Value* gate = b.node("Sigmoid", {b.conv(pooled, 32, 1, "head.scale.conv")}, "head.scale.sigmoid");
  Value* gated = b.node("Mul", {cbr, gate}, "head.gated");
  Value* up = b.resize(gated, {1, 32, kH, kW}, "head.up2");
  Value* logits = b.node("Add", {b.conv(f.low, 5, 1, "head.low_classifier"), b.conv(up, 5, 1, "head.high_classifier")},
                         "head.logits");
  g->add_output(b.resize(logits, {1, 5, 8 * kH, 8 * kW}, "out"));
  infer_graph(*g);
  return g;
}

// DeepLabV3's ASPP on the 13x11 map: a 1x1 branch, 3x3 branches at rates 6
// (half the taps in the padding), 12 (only the first and last rows read an
// off-centre row) and 24 (every off-centre tap in the padding), a pooling branch resized back,
// concatenated and projected; the classifier's output upsampled 16x (from
// 13x11 to 208x176) and, as a second output, to 50x37 (non-integer scales).
std::unique_ptr<Graph> deeplab() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Builder b{*g};
  Value* x = g->add_input("image", {DType::F32, {1, 8, kH, kW}, true});
  const Backbone f = backbone(b, x);
  std::vector<Value*> branches{b.relu(b.conv(f.high, 32, 1, "aspp.0"), "aspp.0.relu")};
  for (int64_t rate : {6, 12, 24}) {
    const std::string name = "aspp.rate" + std::to_string(rate);
    branches.push_back(b.relu(b.conv(f.high, 32, 3, name, rate), name + ".relu"));
  }
  Value* pooled = b.node("GlobalAveragePool", {f.high}, "aspp.pool");
  Value* pool_branch = b.relu(b.conv(pooled, 32, 1, "aspp.pool.conv"), "aspp.pool.relu");
  branches.push_back(b.resize(pool_branch, {1, 32, kH / 2, kW / 2}, "aspp.pool.up"));
  Value* cat = b.node("Concat", branches, "aspp.cat", {{"axis", Attribute::of_int(1)}});
  Value* project = b.relu(b.conv(cat, 32, 1, "aspp.project"), "aspp.project.relu");
  Value* head = b.relu(b.conv(project, 32, 3, "head.conv"), "head.relu");
  Value* logits = b.conv(head, 5, 1, "head.classifier");
  g->add_output(b.resize(logits, {1, 5, 16 * (kH / 2), 16 * (kW / 2)}, "out"));
  g->add_output(b.resize(logits, {1, 5, 50, 37}, "out_odd"));
  infer_graph(*g);
  return g;
}

// Nodes of op type `op` whose first input has rank `rank`.
int ops_of_rank(const Graph& g, const std::string& op, size_t rank) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op && static_cast<size_t>(node->inputs[0]->type.rank()) == rank;
  return n;
}

// Every ISA the host runs, fused and not, against the interpreter on the
// original graph; the depthwise convolutions run blocked, and so does every
// resize but the output's.
void expect_compiled_matches(const std::function<std::unique_ptr<Graph>()>& build, int inner_resizes,
                             uint32_t seed) {
  std::vector<Tensor> ins{random_f32({1, 8, kH, kW}, seed)};
  std::vector<Tensor> want = interpret(*build(), ins);
  for_each_isa_and_fusion([&](const runtime::ExecutorOptions& o) {
    runtime::Executor m(build(), o);
    EXPECT_EQ(count_ops(m.graph(), "DepthwiseConvBlocked"), 3);
    EXPECT_EQ(ops_of_rank(m.graph(), "Resize", 5), inner_resizes);
    // Twenty layers of sums regrouped (blocks, FMA, Winograd's transforms
    // on the head's 3x3 convolution) against the interpreter's order.
    expect_near_scaled(m.run(ins), want, 5e-5);
  });
}

TEST(MobileNetSegmentation, LrasppMatchesTheInterpreter) { expect_compiled_matches(lraspp, 1, 11); }

TEST(MobileNetSegmentation, DeepLabMatchesTheInterpreter) { expect_compiled_matches(deeplab, 1, 12); }

// The ASPP's atrous branches lose their padding taps: rate 24 on a 13x11
// map reads only its centre tap (one 1x1 convolution), rate 12 the centre
// column and, in its first and last rows, one off-centre row (three regions);
// rate 6, whose regions would each skip too few multiply-adds to pay, keeps
// its 3x3 taps.
TEST(MobileNetSegmentation, AtrousBranchesSkipTheirPaddingTaps) {
  runtime::Executor m(deeplab(), {});
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> taps;  // per branch, each conv's kernel
  for (const auto& n : m.graph().nodes())
    for (const char* branch : {"aspp.rate6", "aspp.rate12", "aspp.rate24"})
      if (n->op_type == "ConvBlocked" && n->name.rfind(branch, 0) == 0 && n->name.find("/window") == std::string::npos)
        taps[branch].push_back({n->inputs[1]->type.dims[2], n->inputs[1]->type.dims[3]});
  using Taps = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(taps["aspp.rate24"], (Taps{{1, 1}}));
  EXPECT_EQ(taps["aspp.rate6"], (Taps{{3, 3}}));
  Taps rate12 = taps["aspp.rate12"];
  std::sort(rate12.begin(), rate12.end());
  EXPECT_EQ(rate12, (Taps{{1, 1}, {2, 1}, {2, 1}}));
}

}  // namespace
}  // namespace tessera
