// Winograd F(4x4, 3x3), F(3x3, 3x3) and F(2x2, 3x3) (opt/winograd.cpp, ops/winograd.*,
// support/winograd_transform.*): the transforms' identity, the pass against
// the reference interpreter on the original graph — padded and unpadded
// convolutions, images that leave partial tiles, a batch of two, grouped
// convolutions, no bias, epilogues (residual add, ReLU) — compiled for
// AVX-512 and AVX2, the static estimate's choices and the error budget
// (F(4x4) in branches and on PET's convolutions), a tuner's choices per
// geometry overriding the estimate (never F(4x4) past its bound), the transforms' folded
// point formulas, artifacts, and errors naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "loop/printer.h"
#include "ops/blocked_conv.h"
#include "ops/winograd.h"
#include "opt/passes.h"
#include "opt/winograd.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "support/winograd_transform.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_near_scaled;
using tessera::testing::host_isas;
using tessera::testing::random_f32;
using tessera::testing::save_and_load;

uint32_t seed_ = 1;

Value* conv(Graph& g, Value* x, int64_t M, int64_t Cg, int64_t k, std::vector<int64_t> pads, const std::string& name,
            int64_t group = 1, int64_t stride = 1, bool bias = true) {
  AttrMap a;
  a["pads"] = Attribute::of_ints(std::move(pads));
  a["strides"] = Attribute::of_ints({stride, stride});
  a["group"] = Attribute::of_int(group);
  std::vector<Value*> ins{x, g.add_constant(name + ".w", random_f32({M, Cg, k, k}, seed_++, -0.5f, 0.5f))};
  if (bias) ins.push_back(g.add_constant(name + ".b", random_f32({M}, seed_++)));
  return g.add_node("Conv", ins, {name}, a, name)->outputs[0];
}

Value* relu(Graph& g, Value* x, const std::string& name) { return g.add_node("Relu", {x}, {name}, {}, name)->outputs[0]; }

// Every case the Winograd form handles, on a batch of two 13 x 11 images
// (partial tiles in both directions): padded 3x3 convolutions with a
// residual add and ReLU after them, an unpadded one (11 x 9 output), one
// without bias, a grouped one (4 channels a group: four groups a block of
// 16, two of 8), one with asymmetric pads — and a stride-2 3x3 convolution
// and a 1x1 one, which stay direct.
std::unique_ptr<Graph> network() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {2, 16, 13, 11}, true});
  Value* a = relu(*g, conv(*g, x, 32, 16, 3, {1, 1, 1, 1}, "a"), "a_relu");
  Value* b = conv(*g, a, 32, 32, 3, {1, 1, 1, 1}, "b", 1, 1, false);
  Value* res = relu(*g, g->add_node("Add", {b, a}, {"res"}, {}, "res")->outputs[0], "res_relu");
  Value* grouped = relu(*g, conv(*g, res, 32, 4, 3, {1, 1, 1, 1}, "grouped", 8), "grouped_relu");
  Value* valid = conv(*g, grouped, 16, 32, 3, {0, 0, 0, 0}, "valid");
  Value* skew = conv(*g, valid, 16, 16, 3, {0, 1, 2, 0}, "skew");
  Value* down = conv(*g, skew, 32, 16, 3, {1, 1, 1, 1}, "down", 1, 2);
  g->add_output(conv(*g, down, 16, 32, 1, {0, 0, 0, 0}, "pointwise"));
  g->add_output(res);
  infer_graph(*g);
  return g;
}

// The rewritten graph, run by the interpreter's Winograd reference kernels,
// gives the original graph's outputs; the stride-2 and 1x1 convolutions
// stay direct.
TEST(Winograd, ReferenceKernelsMatchTheConvolutions) {
  for (int tile : kWinogradTiles)
  for (int64_t b : {16, 8}) {
    SCOPED_TRACE("block " + std::to_string(b) + ", tile " + std::to_string(tile));
    auto g = network();
    std::vector<Tensor> ins{random_f32({2, 16, 13, 11}, 5)};
    std::vector<Tensor> want = interpret(*g, ins);
    ASSERT_EQ(to_blocked_layout(*g, b), 7);
    EXPECT_EQ(to_winograd(*g, tile), 5);
    EXPECT_EQ(count_ops(*g, "WinogradInput"), 5);
    EXPECT_EQ(count_ops(*g, "WinogradGemm"), 5);
    EXPECT_EQ(count_ops(*g, "WinogradOutput"), 5);
    EXPECT_EQ(count_ops(*g, "ConvBlocked"), 2);
    const Node* out = nullptr;
    for (const auto& n : g->nodes())
      if (n->name == "b") out = n.get();
    ASSERT_TRUE(out);  // the output transform keeps the convolution's name
    EXPECT_EQ(out->op_type, "WinogradOutput");
    expect_near_scaled(interpret(*g, ins), want, 2e-5);
  }
}

// Compiled (fused with the ReLUs and the residual add) for AVX-512 and
// AVX2, against the interpreter on the original graph; twice, the plan reused.
TEST(Winograd, CompiledMatchesTheOriginalGraph) {
  std::vector<Tensor> ins{random_f32({2, 16, 13, 11}, 6)};
  auto g = network();
  std::vector<Tensor> want = interpret(*g, ins);
  for (int tile : kWinogradTiles)
  for (codegen::Isa isa : host_isas()) {
    SCOPED_TRACE(std::string(codegen::isa_name(isa)) + ", tile " + std::to_string(tile));
    auto rewritten = network();
    to_blocked_layout(*rewritten, isa == codegen::Isa::AVX2 ? 8 : 16);
    ASSERT_EQ(to_winograd(*rewritten, tile), 5);
    runtime::ExecutorOptions o;
    o.isa = isa;
    o.passes.disable("blocked-layout");  // done above
    runtime::Executor m(std::move(rewritten), o);
    expect_near_scaled(m.run(ins), want, 2e-5);
    expect_near_scaled(m.run(ins), want, 2e-5);
    // The output transform's kernel (with its product, by the planner's op
    // rules, test_fusion_op_rules.cpp) takes the residual Add and the ReLU;
    // whether the layout reorder after them joins too is the fusion
    // profiler's timing call, so it is not checked.
    bool epilogue = false;
    for (const runtime::Step& st : m.last_plan()->steps) {
      std::set<std::string> ops;
      for (const Node* n : st.nodes) ops.insert(n->op_type);
      if (!ops.count("WinogradOutput")) continue;
      EXPECT_TRUE(ops.count("WinogradGemm"));
      epilogue |= ops.count("Add") && ops.count("Relu");
    }
    EXPECT_TRUE(epilogue);
  }
}

// The estimate: a 3x3 convolution of 64 channels on 56 x 56 pixels (ResNet's
// first stage) pays; 512 channels on 7 x 7 (its last) does not — the
// transformed weights (37 MB) would cost more than the products save. The
// compiled model takes the estimate's choice by default, none with
// winograd off, and gives the convolution's outputs.
TEST(Winograd, EstimateChoosesLargeImagesOverManyChannels) {
  auto build = [](int64_t c, int64_t hw) {
    seed_ = 30;
    auto g = std::make_unique<Graph>();
    Value* x = g->add_input("x", {DType::F32, {1, c, hw, hw}, true});
    g->add_output(conv(*g, x, c, c, 3, {1, 1, 1, 1}, "conv"));
    infer_graph(*g);
    return g;
  };
  auto big = build(64, 56);
  to_blocked_layout(*big, 16);
  EXPECT_EQ(to_winograd(*big), 1);
  auto deep = build(512, 7);
  to_blocked_layout(*deep, 16);
  EXPECT_EQ(to_winograd(*deep), 0);
  std::vector<Tensor> ins{random_f32({1, 64, 56, 56}, 7)};
  std::vector<Tensor> want = interpret(*build(64, 56), ins);
  for (bool on : {true, false}) {
    runtime::ExecutorOptions o;
    if (!on) o.passes.disable("winograd");
    runtime::Executor m(build(64, 56), o);
    EXPECT_EQ(count_ops(m.graph(), "WinogradGemm"), on ? 1 : 0);
    expect_near_scaled(m.run(ins), want, 2e-5);
  }
}

// The transforms' per-point select chains fold once the point loops are
// unrolled: the kernels have no selects left (the input's padding is a
// separate, guarded copy), and the schedule unrolls the points.
TEST(Winograd, TransformKernelsFoldTheirPointFormulas) {
  for (int tile : kWinogradTiles) {
  SCOPED_TRACE("tile " + std::to_string(tile));
  Graph g;
  g.opset = 13;
  const int64_t tiles_h = (9 + tile - 1) / tile, tiles_w = (10 + tile - 1) / tile;
  Value* x = g.add_input("x", {DType::F32, {1, 2, 9, 10, 16}, true});
  Node* in = g.add_node("WinogradInput", {x}, {"v"},
                        {{"pads", Attribute::of_ints({1, 1})},
                         {"tiles", Attribute::of_ints({tiles_h, tiles_w})},
                         {"tile", Attribute::of_int(tile)}},
                        "in");
  in->domain = kBlockedDomain;
  infer_node(*in, 13);
  Node* out = g.add_node("WinogradOutput", {in->outputs[0]}, {"y"},
                         {{"output", Attribute::of_ints({9, 10})}, {"tile", Attribute::of_int(tile)}}, "out");
  out->domain = kBlockedDomain;
  infer_node(*out, 13);
  EXPECT_EQ(out->outputs[0]->type.dims, Dims({1, 2, 9, 10, 16}));
  for (Node* n : {in, out}) {
    SCOPED_TRACE(n->name);
    compile::NodeKernel k = compile::compile_node(*n, 13);
    std::string ir = loop::to_string(k.kernel);
    std::string text = schedule::to_text(k.schedule);
    EXPECT_NE(text.find(n == in ? "unroll in.winograd_in p" : "unroll out.winograd_out h.i"), std::string::npos)
        << text;
    // The output's rows past 9 (the last tile's) are guarded, not selected.
    // F(2x2)'s input transform reads the image in place under guards (no
    // padded copy); the larger tiles' read a padded copy, their one select.
    const bool in_place = n == in && tile == 2;
    EXPECT_EQ(text.find("compute_root in.pad") == std::string::npos, n != in || in_place) << text;
    size_t selects = 0;
    for (size_t at = ir.find("select("); at != std::string::npos; at = ir.find("select(", at + 1)) ++selects;
    if (!in_place) {
      EXPECT_EQ(selects, n == in ? 1u : 0u) << ir;
    }
  }
  }
}

// A model compiled with Winograd saves its rewritten graph; the artifact
// loads without rewriting it again and runs the same.
TEST(Winograd, ArtifactKeepsTheTransforms) {
  std::vector<Tensor> ins{random_f32({2, 16, 13, 11}, 8)};
  auto g = network();
  to_blocked_layout(*g, 16);
  to_winograd(*g, 2);
  runtime::ExecutorOptions o;
  o.passes.disable("blocked-layout");
  runtime::Executor m(std::move(g), o);
  std::vector<Tensor> first = m.run(ins);
  auto loaded = save_and_load(m, "winograd");
  EXPECT_EQ(count_ops(loaded->graph(), "WinogradGemm"), 5);
  EXPECT_EQ(loaded->graph().nodes().size(), m.graph().nodes().size());
  expect_near_scaled(loaded->run(ins), first, 0);
}

// Malformed Winograd nodes are errors naming the node.
TEST(Winograd, BadNodesNameTheNode) {
  Graph g;
  Value* m = g.add_input("m", {DType::F32, {36, 2, 12, 16}, true});
  auto expect_error = [&](Node* n, const std::string& what) {
    n->domain = kBlockedDomain;
    try {
      infer_node(*n, 13);
      FAIL() << "no error for " << n->name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(n->name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // 12 tiles are not a multiple of the 3 x 3 of a 9 x 10 output.
  expect_error(g.add_node("WinogradOutput", {m}, {"y"}, {{"output", Attribute::of_ints({9, 10})}}, "odd_tiles"),
               "not a multiple");
  expect_error(g.add_node("WinogradOutput", {m}, {"y2"}, {{"output", Attribute::of_ints({9})}}, "short_attr"),
               "2 values");
  Value* u = g.add_constant("u", Tensor(DType::F32, {36, 2, 3, 16, 16}));
  expect_error(g.add_node("WinogradGemm", {m, u}, {"z"}, {}, "reads_past"), "reads input blocks");
  Value* x = g.add_input("x", {DType::F32, {1, 2, 9, 10}, true});
  expect_error(g.add_node("WinogradInput", {x}, {"v"},
                          {{"pads", Attribute::of_ints({1, 1})}, {"tiles", Attribute::of_ints({3, 3})}}, "not_blocked"),
               "[N, Cb, H, W, b]");
  Value* xb = g.add_input("xb", {DType::F32, {1, 2, 9, 10, 16}, true});
  expect_error(g.add_node("WinogradInput", {xb}, {"v3"},
                          {{"pads", Attribute::of_ints({1, 1})},
                           {"tiles", Attribute::of_ints({3, 3})},
                           {"tile", Attribute::of_int(5)}},
                          "tile_five"),
               "tile must be 2, 3 or 4");
  // M has F(4x4)'s 36 points; the node says F(2x2).
  expect_error(g.add_node("WinogradOutput", {m}, {"y3"},
                          {{"output", Attribute::of_ints({6, 8})}, {"tile", Attribute::of_int(2)}}, "points_mismatch"),
               "36 points");
  Value* m16 = g.add_input("m16", {DType::F32, {16, 2, 12, 16}, true});
  expect_error(g.add_node("WinogradGemm", {m16, u}, {"z2"}, {}, "u_points"), "as V");
}

// The transforms are exact: for random d and g, A^T [(G g) (.) (B^T d)] is
// the 1-D correlation of d with g (in double, to rounding), and every entry
// of B^T and A^T is exact in float (dyadic).
TEST(Winograd, TransformsComputeTheCorrelation) {
  for (int tile : kWinogradTiles) {
    SCOPED_TRACE("tile " + std::to_string(tile));
    const WinogradTransform& tf = winograd_transform(tile);
    EXPECT_EQ(tf.m, tile);
    EXPECT_EQ(tf.alpha, tile + 2);
    for (int trial = 0; trial < 5; ++trial) {
      Tensor dt = random_f32({tf.alpha}, 100 + trial, -1, 1), gt = random_f32({3}, 200 + trial, -1, 1);
      const float* d = dt.data<float>();
      const float* gk = gt.data<float>();
      for (int i = 0; i < tf.m; ++i) {
        double want = 0, got = 0;
        for (int k = 0; k < 3; ++k) want += static_cast<double>(d[i + k]) * gk[k];
        for (int j = 0; j < tf.alpha; ++j) {
          double gg = 0, bd = 0;
          for (int k = 0; k < 3; ++k) gg += tf.G(j, k) * gk[k];
          for (int l = 0; l < tf.alpha; ++l) bd += static_cast<double>(tf.BT(j, l)) * d[l];
          got += static_cast<double>(tf.AT(i, j)) * gg * bd;
        }
        EXPECT_NEAR(got, want, 1e-12) << "output " << i;
      }
    }
    for (float v : tf.bt) EXPECT_EQ(std::ldexp(v, 6), std::round(std::ldexp(v, 6))) << v;  // multiples of 1/64
    for (float v : tf.at) EXPECT_EQ(std::ldexp(v, 6), std::round(std::ldexp(v, 6))) << v;
  }
  EXPECT_THROW(winograd_transform(5), Error);
}

// Accuracy picks the tile: a plain chain of 3x3 layers takes F(2x2)
// everywhere; the two 3x3 layers of a residual block (conv, ReLU, conv, Add
// onto the block's input) take F(4x4), and so do those of a branch that ends
// in a Concat (Inception's). Each choice computes the convolutions.
TEST(Winograd, ResidualBranchesTakeTheLargeTiles) {
  enum Kind { kPlain, kResidual, kConcat };
  auto model = [](Kind kind) {
    seed_ = 40;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 64, 56, 56}, true});
    Value* a = relu(*g, conv(*g, x, 64, 64, 3, {1, 1, 1, 1}, "c0"), "r0");
    Value* b = conv(*g, a, 64, 64, 3, {1, 1, 1, 1}, "c1");
    if (kind == kResidual) b = g->add_node("Add", {b, x}, {"sum"}, {}, "sum")->outputs[0];
    if (kind == kConcat)
      b = g->add_node("Concat", {b, x}, {"cat"}, {{"axis", Attribute::of_int(1)}}, "cat")->outputs[0];
    g->add_output(relu(*g, b, "r1"));
    infer_graph(*g);
    return g;
  };
  for (Kind kind : {kPlain, kResidual, kConcat}) {
    SCOPED_TRACE(kind == kResidual ? "residual block" : kind == kConcat ? "concatenated branch" : "plain chain");
    std::vector<Tensor> ins{random_f32({1, 64, 56, 56}, 9)};
    std::vector<Tensor> want = interpret(*model(kind), ins);
    runtime::Executor m(model(kind), {});
    int tiles = 0, rewritten = 0;
    for (const auto& node : m.graph().nodes())
      if (node->op_type == "WinogradOutput") {
        ++rewritten;
        tiles += static_cast<int>(OpAttrs(*node, kAnyOpset).i("tile"));
      }
    EXPECT_EQ(rewritten, 2);
    EXPECT_EQ(tiles, kind == kPlain ? 4 : 8);
    expect_near_scaled(m.run(ins), want, 2e-5);
  }
}

// In a plain chain the convolutions PET made (named with its prefix,
// pet/subprogram.h) take F(4x4), the model's own F(2x2): a chain of six 3x3
// layers with ReLUs, the middle four PET's. The compiled chain gives the
// interpreter's outputs on the original graph within PET's bound, 1e-4 of
// the largest output.
TEST(Winograd, PetConvolutionsInAChainTakeTheLargeTiles) {
  const std::vector<std::string> names = {"c0", "pet/c1", "pet/c2", "pet/c3", "pet/c4", "c5"};
  auto model = [&] {
    seed_ = 60;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* v = g->add_input("x", {DType::F32, {1, 64, 56, 56}, true});
    for (const std::string& name : names) v = relu(*g, conv(*g, v, 64, 64, 3, {1, 1, 1, 1}, name), name + "_relu");
    g->add_output(v);
    infer_graph(*g);
    return g;
  };
  std::vector<Tensor> ins{random_f32({1, 64, 56, 56}, 11)};
  std::vector<Tensor> want = interpret(*model(), ins);
  runtime::Executor m(model(), {});
  std::set<std::string> large, small;
  for (const auto& node : m.graph().nodes())
    if (node->op_type == "WinogradOutput")
      (OpAttrs(*node, kAnyOpset).i("tile") == 4 ? large : small).insert(node->name);
  EXPECT_EQ(large, (std::set<std::string>{"pet/c1", "pet/c2", "pet/c3", "pet/c4"}));
  EXPECT_EQ(small, (std::set<std::string>{"c0", "c5"}));
  expect_near_scaled(m.run(ins), want, 1e-4);
}

// Two convolutions of one geometry (16 channels, 12 x 12): c1 ends a
// residual branch (F(4x4) allowed), c0 does not (its ReLU's output also
// feeds the Add). A choice for the geometry applies to both — except F(4x4),
// which c0 never takes: it keeps what it has without choices. A choice of
// another geometry changes nothing; one that is not a tile names the node.
// Every graph computes the original's outputs.
TEST(Winograd, ChoicesOverrideTheEstimatePerGeometry) {
  auto block = [] {
    seed_ = 70;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 16, 12, 12}, true});
    Value* a = relu(*g, conv(*g, x, 16, 16, 3, {1, 1, 1, 1}, "c0"), "r0");
    Value* b = conv(*g, a, 16, 16, 3, {1, 1, 1, 1}, "c1");
    g->add_output(relu(*g, g->add_node("Add", {b, a}, {"sum"}, {}, "sum")->outputs[0], "r1"));
    infer_graph(*g);
    return g;
  };
  // Each convolution's tile in the compiled graph (0: direct).
  auto tiles = [](const Graph& g) {
    std::map<std::string, int> t;
    for (const auto& n : g.nodes()) {
      if (n->op_type == "WinogradOutput") t[n->name] = static_cast<int>(OpAttrs(*n, kAnyOpset).i("tile"));
      if (n->op_type == "ConvBlocked") t[n->name] = 0;
    }
    return t;
  };
  std::vector<Tensor> ins{random_f32({1, 16, 12, 12}, 12)};
  std::vector<Tensor> want = interpret(*block(), ins);
  for (codegen::Isa isa : host_isas()) {
    SCOPED_TRACE(codegen::isa_name(isa));
    auto blocked = block();
    ASSERT_EQ(to_blocked_layout(*blocked, isa == codegen::Isa::AVX2 ? 8 : 16), 2);
    const std::vector<WinogradSite> sites = winograd_sites(*blocked);
    ASSERT_EQ(sites.size(), 2u);
    EXPECT_EQ(sites[0].geometry, sites[1].geometry);
    for (const WinogradSite& s : sites) EXPECT_EQ(s.large_tile_allowed, s.node->name == "c1") << s.node->name;
    const std::string geometry = sites[0].geometry;
    auto compiled = [&](std::map<std::string, int> choices) {
      runtime::ExecutorOptions o;
      o.isa = isa;
      o.passes.winograd_tiles = std::move(choices);
      return std::make_unique<runtime::Executor>(block(), o);
    };
    const std::map<std::string, int> estimate = tiles(compiled({})->graph());
    ASSERT_EQ(estimate.size(), 2u);
    EXPECT_EQ(tiles(compiled({{"n1 c1x16 m1x16 r16 99x99->99x99 pads1,1,1,1", 0}})->graph()), estimate);
    for (int tile : kWinogradChoiceTiles) {
      SCOPED_TRACE("choice " + std::to_string(tile));
      std::unique_ptr<runtime::Executor> m = compiled({{geometry, tile}});
      std::map<std::string, int> got = tiles(m->graph());
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(got["c1"], tile);
      EXPECT_EQ(got["c0"], tile == 4 ? estimate.at("c0") : tile);
      EXPECT_NE(got["c0"], 4) << "F(4x4) where its error bound does not hold";
      EXPECT_EQ(count_ops(m->graph(), "WinogradGemm"), (got["c0"] != 0) + (got["c1"] != 0));
      expect_near_scaled(m->run(ins), want, 2e-5);
    }
    try {
      compiled({{geometry, 3}});
      FAIL() << "no error for tile 3";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'c0'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(geometry), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
