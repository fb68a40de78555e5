// The fusion planner's op rules (fusion_table.h): the Winograd pass's three
// ops joined to the blocks around them — the input transform to its
// producer's block, the output transform to its product — so a Winograd
// convolution costs one kernel, as the direct one does; a MatMul's bias add
// as its epilogue; a decomposed layer norm, with its scale and shift, as one
// row block. Each rule on a small
// graph whose block count is pinned (planned without the profiler: no
// timing decides them), run compiled with those blocks against the reference
// interpreter on the original (plain-layout, direct-convolution) graph.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "compile/block_kernel.h"
#include "fusion/fusion_table.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "ops/blocked_conv.h"
#include "opt/passes.h"
#include "schedule/schedule.h"
#include "fusion_test_util.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::count_ops;
using tessera::testing::expect_fused_matches_reference;

uint32_t seed_ = 1;

Value* conv(Graph& g, Value* x, int64_t M, int64_t C, int64_t k, const std::string& name) {
  AttrMap a;
  const int64_t p = k / 2;
  a["pads"] = Attribute::of_ints({p, p, p, p});
  std::vector<Value*> ins{x, g.add_constant(name + ".w", tessera::testing::random_f32({M, C, k, k}, seed_++, -0.3f, 0.3f)),
                          g.add_constant(name + ".b", tessera::testing::random_f32({M}, seed_++, -0.5f, 0.5f))};
  return g.add_node("Conv", ins, {name}, a, name)->outputs[0];
}

Value* relu(Graph& g, Value* x, const std::string& name) { return g.add_node("Relu", {x}, {name}, {}, name)->outputs[0]; }
Value* add(Graph& g, Value* a, Value* b, const std::string& name) {
  return g.add_node("Add", {a, b}, {name}, {}, name)->outputs[0];
}

// The block holding the node of op `op` (the first one), as a set of op types.
std::multiset<std::string> block_ops(const Graph& g, const fusion::Partition& p, const std::string& op) {
  for (const fusion::Block& b : p.blocks)
    for (int n : b.nodes)
      if (g.nodes()[static_cast<size_t>(n)]->op_type == op) {
        std::multiset<std::string> ops;
        for (int k : b.nodes) ops.insert(g.nodes()[static_cast<size_t>(k)]->op_type);
        return ops;
      }
  return {};
}

// The plain graph, its blocked Winograd rewrite (tile 2: F(2x2, 3x3)) and
// the rewrite's partition without profiling.
struct Case {
  std::unique_ptr<Graph> plain, rewritten;
  fusion::Partition plan;
};

Case rewrite(std::unique_ptr<Graph> (*build)(), int winograd_convs) {
  Case c{build(), build(), {}};
  to_blocked_layout(*c.rewritten, 16);
  EXPECT_EQ(to_winograd(*c.rewritten, 2), winograd_convs);
  c.plan = fusion::partition_graph(*c.rewritten);
  return c;
}

// The rewrite compiled with the plan's blocks, run on seeded inputs of
// `shape` against the reference interpreter on the plain graph (the
// rewrite's own reference kernels are what expect_fused_matches_reference
// compares with). Returns the op types and schedule of every step that
// holds an input transform.
struct StepSchedule {
  std::set<std::string> ops;
  std::string text;
};
std::vector<StepSchedule> check_against_plain(const Case& c, const Dims& shape) {
  std::vector<Tensor> ins{tessera::testing::random_f32(shape, 17, -1, 1)};
  std::vector<std::vector<int>> blocks;
  for (const auto& b : c.plan.blocks) blocks.push_back(b.nodes);
  auto p = runtime::compile_plan(*c.rewritten, ins, {}, nullptr, &blocks);
  tessera::testing::expect_near_scaled(runtime::run_plan(*c.rewritten, *p, ins), interpret(*c.plain, ins), 2e-5);
  std::vector<StepSchedule> r;
  for (const runtime::Step& st : p->steps) {
    std::set<std::string> ops;
    for (const Node* n : st.nodes) ops.insert(n->op_type);
    if (ops.count("WinogradInput")) r.push_back({ops, schedule::to_text(st.schedule)});
  }
  return r;
}

// The schedules of the steps that hold an output transform and the next input transform.
std::vector<std::string> with_output_transform(const std::vector<StepSchedule>& steps) {
  std::vector<std::string> r;
  for (const StepSchedule& st : steps)
    if (st.ops.count("WinogradOutput")) r.push_back(st.text);
  return r;
}

// A ResNet-50 bottleneck on 16 channels: 1x1 + ReLU, 3x3 + ReLU, 1x1 +
// residual Add + ReLU. Rewritten: ReorderToBlocked, ConvBlocked, Relu,
// WinogradInput, WinogradGemm, WinogradOutput, Relu, ConvBlocked, Add, Relu,
// ReorderFromBlocked.
std::unique_ptr<Graph> bottleneck() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 10, 9}, true});
  Value* a = relu(*g, conv(*g, x, 16, 16, 1, "reduce"), "reduce_relu");
  Value* b = relu(*g, conv(*g, a, 16, 16, 3, "middle"), "middle_relu");
  g->add_output(relu(*g, add(*g, conv(*g, b, 16, 16, 1, "expand"), x, "res"), "out"));
  infer_graph(*g);
  return g;
}

// The input transform joins the 1x1 convolution's block (op rule), the
// product and its output transform are one block (op rule): five kernels
// where the table alone makes seven (the reorders in and out stay apart:
// shuffle after or before many-to-many is a profile cell, not measured here).
TEST(FusionOpRules, WinogradConvolutionIsOneKernelInABottleneck) {
  Case c = rewrite(bottleneck, 1);
  const Graph& g = *c.rewritten;
  ASSERT_EQ(g.nodes().size(), 11u);
  EXPECT_EQ(c.plan.blocks.size(), 5u) << fusion::print_fusion(g, c.plan);
  EXPECT_EQ(block_ops(g, c.plan, "WinogradInput"), (std::multiset<std::string>{"ConvBlocked", "Relu", "WinogradInput"}));
  EXPECT_EQ(block_ops(g, c.plan, "WinogradGemm"),
            (std::multiset<std::string>{"WinogradGemm", "WinogradOutput", "Relu"}));
  EXPECT_NE(fusion::print_fusion(g, c.plan).find("(op rule: input transform joins its producer)"), std::string::npos);
  EXPECT_EQ(expect_fused_matches_reference(g, c.plan, 3, 2e-4), 5u);
  check_against_plain(c, {1, 16, 10, 9});
}

// Two Winograd convolutions in a row with a residual Add around the second
// (ResNet-18's basic block): the first one's output is a block output (the
// Add reads it) and the second input transform reads it in the same block.
// Blocks: [reorder in, input transform 1], [product 1, output transform 1,
// ReLU, input transform 2], [product 2, output transform 2, Add, ReLU],
// [reorder out]: four, where the table alone makes eight. The output
// transform keeps its Winograd schedule (its epilogue's ReLU, stored whole,
// is read by the next input transform as well).
std::unique_ptr<Graph> basic_block() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 9, 11}, true});
  Value* a = relu(*g, conv(*g, x, 16, 16, 3, "first"), "first_relu");
  g->add_output(relu(*g, add(*g, conv(*g, a, 16, 16, 3, "second"), a, "res"), "out"));
  infer_graph(*g);
  return g;
}

TEST(FusionOpRules, ChainedWinogradConvolutionsShareBlocks) {
  Case c = rewrite(basic_block, 2);
  const Graph& g = *c.rewritten;
  EXPECT_EQ(c.plan.blocks.size(), 4u) << fusion::print_fusion(g, c.plan);
  EXPECT_EQ(block_ops(g, c.plan, "ReorderToBlocked"),
            (std::multiset<std::string>{"ReorderToBlocked", "WinogradInput"}));
  EXPECT_EQ(block_ops(g, c.plan, "Add"),
            (std::multiset<std::string>{"WinogradGemm", "WinogradOutput", "Add", "Relu"}));
  EXPECT_EQ(expect_fused_matches_reference(g, c.plan, 3, 2e-4), 4u);
  // The middle block's output transform is scheduled by the Winograd rule
  // in its epilogue's loops (the ReLU's: rows and columns of 2x2 tiles
  // unrolled), not left to the generic rule's rows.
  const std::vector<std::string> schedules = with_output_transform(check_against_plain(c, {1, 16, 9, 11}));
  EXPECT_EQ(schedules.size(), 1u);
  for (const std::string& text : schedules) {
    EXPECT_NE(text.find("split first_relu i2 2\n"), std::string::npos) << text;
    EXPECT_NE(text.find("unroll first_relu i3.i\n"), std::string::npos) << text;
    EXPECT_NE(text.find(".winograd_in p"), std::string::npos) << text;
  }
}

// Two Winograd convolutions in a plain chain (U-Net's double convolution):
// the first ReLU is read only by the second input transform, inside the
// same block, so the first output transform has no epilogue to write; it is
// computed whole with its Winograd schedule (rows and columns of tiles
// unrolled, so its point formulas fold) instead of being inlined into the
// next transform's padded copy.
std::unique_ptr<Graph> double_conv() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 10, 10}, true});
  Value* a = relu(*g, conv(*g, x, 16, 16, 3, "first"), "first_relu");
  g->add_output(relu(*g, conv(*g, a, 16, 16, 3, "second"), "second_relu"));
  infer_graph(*g);
  return g;
}

TEST(FusionOpRules, InternalOutputTransformKeepsItsSchedule) {
  Case c = rewrite(double_conv, 2);
  const Graph& g = *c.rewritten;
  EXPECT_EQ(c.plan.blocks.size(), 4u) << fusion::print_fusion(g, c.plan);
  EXPECT_EQ(expect_fused_matches_reference(g, c.plan, 3, 2e-4), 4u);
  const std::vector<std::string> schedules = with_output_transform(check_against_plain(c, {1, 16, 10, 10}));
  EXPECT_EQ(schedules.size(), 1u);
  for (const std::string& text : schedules) {
    EXPECT_NE(text.find("compute_root first.winograd_out\n"), std::string::npos) << text;
    EXPECT_NE(text.find("unroll first.winograd_out h.i\n"), std::string::npos) << text;
  }
}

// VGG's pattern: 3x3 + ReLU, 2x2 max pool, 3x3 + ReLU. Each F(2x2) input
// transform whose image its block stores — the pool's output, or the ReLU of
// a stored output transform — reads it in place under guards (no padded
// copy); the first, behind the reorder from the plain layout, keeps its copy.
std::unique_ptr<Graph> conv_pool_conv() {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 12, 10}, true});
  Value* a = relu(*g, conv(*g, x, 16, 16, 3, "first"), "first_relu");
  AttrMap pool;
  pool["kernel_shape"] = Attribute::of_ints({2, 2});
  pool["strides"] = Attribute::of_ints({2, 2});
  Value* p = g->add_node("MaxPool", {a}, {"pool"}, pool, "pool")->outputs[0];
  g->add_output(relu(*g, conv(*g, p, 16, 16, 3, "second"), "second_relu"));
  infer_graph(*g);
  return g;
}

TEST(FusionOpRules, InputTransformsReadStoredImagesInPlace) {
  Case c = rewrite(conv_pool_conv, 2);
  int in_place = 0, copied = 0;
  for (const StepSchedule& st : check_against_plain(c, {1, 16, 12, 10})) {
    // A padded copy is a compute_root step (the only one ending with the stage name).
    const bool copy = st.text.find("winograd_in.pad\n") != std::string::npos;
    EXPECT_EQ(copy, st.ops.count("ReorderToBlocked") > 0) << st.text;
    (copy ? copied : in_place)++;
  }
  EXPECT_EQ(copied, 1);
  EXPECT_EQ(in_place, 1);  // the pool's block
}

// A MatMul's bias add (the bias broadcast over rows: one-to-many, a profile
// cell) joins the product without a measurement; an Add that broadcasts the
// product itself (a [4, 1] product against [4, 48]) is not its epilogue and
// stays with the table's (unmeasured: apart).
TEST(FusionOpRules, BiasAddJoinsItsMatMul) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias add" : "broadcast product");
    seed_ = 3;
    auto g = std::make_unique<Graph>();
    const int64_t n = bias ? 48 : 1;
    Value* x = g->add_input("x", {DType::F32, {4, 32}, true});
    Value* w = g->add_constant("w", tessera::testing::random_f32({32, n}, seed_++, -0.3f, 0.3f));
    Value* m = g->add_node("MatMul", {x, w}, {"m"}, {}, "matmul")->outputs[0];
    Value* other = bias ? g->add_constant("b", tessera::testing::random_f32({48}, seed_++, -1, 1))
                        : g->add_constant("c", tessera::testing::random_f32({4, 48}, seed_++, -1, 1));
    g->add_output(add(*g, m, other, "add"));
    infer_graph(*g);
    EXPECT_EQ(node_mapping_type(*g->nodes()[1]), MappingType::OneToMany);
    fusion::Partition plan = fusion::partition_graph(*g);
    EXPECT_EQ(plan.blocks.size(), bias ? 1u : 2u) << fusion::print_fusion(*g, plan);
    EXPECT_EQ(plan.unmeasured, bias ? 0 : 1);
    EXPECT_EQ(expect_fused_matches_reference(*g, plan, bias ? 1 : 0), bias ? 1u : 2u);
  }
}

// A layer norm exported in pieces after a residual add (BERT's), its scale
// and shift read from `affine` (constants, or graph inputs). The table
// breaks it at x - mean(x) (one-to-many before the variance's reduction);
// the centring rules make the add, both reductions and the normalization
// one row-wise block. Its scale and shift (one-to-many, profile cells) join
// that block by the gamma-and-beta rule when they are constants: one block,
// where the table alone makes six ([square, var, eps, sqrt], [residual,
// mean], [centre], [div], [scale], [shift]). Read from graph inputs they are
// no layer norm's affine and keep the table's cells (unmeasured here: apart).
std::unique_ptr<Graph> layer_norm(bool constant_affine) {
  seed_ = 5;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {2, 6, 40}, true});
  Value* r = g->add_input("r", {DType::F32, {2, 6, 40}, true});
  AttrMap last;
  last["axes"] = Attribute::of_ints({-1});
  auto op = [&](const char* type, std::vector<Value*> ins, const char* name, AttrMap a = {}) {
    return g->add_node(type, ins, {std::string(name) + "_out"}, a, name)->outputs[0];
  };
  auto scalar = [&](const char* name, float v) { return g->add_constant(name, Tensor::scalar<float>(v)); };
  auto affine = [&](const char* name, uint32_t seed) {
    return constant_affine ? g->add_constant(name, tessera::testing::random_f32({40}, seed, -1, 1))
                           : g->add_input(name, {DType::F32, {40}, true});
  };
  Value* s = op("Add", {x, r}, "residual");
  Value* d = op("Sub", {s, op("ReduceMean", {s}, "mean", last)}, "centre");
  Value* var = op("ReduceMean", {op("Mul", {d, d}, "square")}, "var", last);
  Value* n = op("Div", {d, op("Sqrt", {op("Add", {var, scalar("eps", 1e-5f)}, "add_eps")}, "sqrt")}, "div");
  Value* gamma = affine("gamma", 7);
  Value* beta = affine("beta", 8);
  g->add_output(op("Add", {beta, op("Mul", {n, gamma}, "scale")}, "shift"));  // beta first, as PyTorch exports it
  infer_graph(*g);
  return g;
}

TEST(FusionOpRules, DecomposedLayerNormIsOneRowBlock) {
  for (bool constant_affine : {true, false}) {
    SCOPED_TRACE(constant_affine ? "gamma and beta constants" : "gamma and beta inputs");
    auto g = layer_norm(constant_affine);
    fusion::Partition plan = fusion::partition_graph(*g);
    const std::multiset<std::string> norm{"Add", "ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div"};
    if (constant_affine) {
      ASSERT_EQ(plan.blocks.size(), 1u) << fusion::print_fusion(*g, plan);
      std::multiset<std::string> all = norm;
      all.insert("Mul");
      all.insert("Add");
      EXPECT_EQ(block_ops(*g, plan, "Sub"), all);
      EXPECT_EQ(plan.unmeasured, 0);  // decided by the rule, not by a timing
      EXPECT_NE(fusion::print_fusion(*g, plan).find("(op rule: layer norm: scale and shift join the rows)"),
                std::string::npos);
    } else {
      ASSERT_EQ(plan.blocks.size(), 3u) << fusion::print_fusion(*g, plan);
      EXPECT_EQ(block_ops(*g, plan, "Sub"), norm);
      EXPECT_GT(plan.unmeasured, 0);  // left to the table's profile cells
    }
    EXPECT_EQ(expect_fused_matches_reference(*g, plan, 1), constant_affine ? 1u : 3u);
  }
  // Not a centring: a mean over the middle axis keeps the table's break.
  auto other = std::make_unique<Graph>();
  Value* a = other->add_input("a", {DType::F32, {2, 6, 40}, true});
  AttrMap middle;
  middle["axes"] = Attribute::of_ints({1});
  Node* mean = other->add_node("ReduceMean", {a}, {"m"}, middle, "mean");
  Node* sub = other->add_node("Sub", {a, mean->outputs[0]}, {"d"}, {}, "sub");
  other->add_output(sub->outputs[0]);
  infer_graph(*other);
  EXPECT_EQ(fusion::op_fusion_rule(*mean, *sub), nullptr);
}

// A scale by a constant joins by the gamma-and-beta rule only after a layer
// norm's division ((x - mean(x)) / y over rows [6, 40]), not after a
// division of rows not centred (x / y), nor when the constant broadcasts
// the normalized rows themselves (scaled by a [2, 6, 40] constant).
TEST(FusionOpRules, ScaleJoinsOnlyNormalizedRows) {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {6, 40}, true});
  Value* y = g->add_input("y", {DType::F32, {6, 40}, true});
  AttrMap last;
  last["axes"] = Attribute::of_ints({-1});
  auto node = [&](const char* type, std::vector<Value*> ins, const char* name, AttrMap a = {}) {
    return g->add_node(type, ins, {std::string(name) + "_out"}, a, name);
  };
  auto constant = [&](const char* name, const Dims& dims, uint32_t seed) {
    return g->add_constant(name, tessera::testing::random_f32(dims, seed, -1, 1));
  };
  Node* centre = node("Sub", {x, node("ReduceMean", {x}, "mean", last)->outputs[0]}, "centre");
  Node* norm = node("Div", {centre->outputs[0], y}, "norm");
  Node* plain = node("Div", {x, y}, "plain");
  Node* scale = node("Mul", {norm->outputs[0], constant("gamma", {40}, 9)}, "scale");
  Node* shift = node("Add", {constant("beta", {40}, 10), scale->outputs[0]}, "shift");
  Node* plain_scale = node("Mul", {plain->outputs[0], constant("gamma2", {40}, 11)}, "plain_scale");
  Node* spread = node("Mul", {norm->outputs[0], constant("c", {2, 6, 40}, 12)}, "spread");
  for (Node* n : {shift, plain_scale, spread}) g->add_output(n->outputs[0]);
  infer_graph(*g);
  for (auto [producer, consumer] : {std::pair{norm, scale}, std::pair{scale, shift}}) {
    const fusion::OpFusionRule* r = fusion::op_fusion_rule(*producer, *consumer);
    ASSERT_NE(r, nullptr) << consumer->describe();
    EXPECT_EQ(r->decision, fusion::Decision::Fuse);
    EXPECT_EQ(r->why, "layer norm: scale and shift join the rows");
  }
  EXPECT_EQ(fusion::op_fusion_rule(*plain, *plain_scale), nullptr);
  EXPECT_EQ(fusion::op_fusion_rule(*norm, *spread), nullptr);
}

// The rules themselves: edges between the Winograd ops decide as listed, and
// every other edge keeps the table's cell.
TEST(FusionOpRules, RulesOverrideOnlyTheirEdges) {
  Case c = rewrite(basic_block, 2);
  const Graph& g = *c.rewritten;
  const Node *in = nullptr, *gemm = nullptr, *out = nullptr;
  for (const auto& n : g.nodes()) {
    if (!in && n->op_type == "WinogradInput") in = n.get();
    if (!gemm && n->op_type == "WinogradGemm") gemm = n.get();
    if (!out && n->op_type == "WinogradOutput") out = n.get();
  }
  ASSERT_TRUE(in && gemm && out);
  using M = MappingType;
  EXPECT_EQ(fusion::edge_rule(*gemm, M::ManyToMany, *out, M::ManyToMany).decision, fusion::Decision::Fuse);
  EXPECT_EQ(fusion::edge_rule(*in->inputs[0]->producer, M::Shuffle, *in, M::ManyToMany).decision,
            fusion::Decision::Fuse);
  EXPECT_EQ(fusion::edge_rule(*in->inputs[0]->producer, M::Shuffle, *in, M::ManyToMany).result, M::ManyToMany);
  // The product does not join its input transform (it is the next block's
  // contraction), nor the output transform the next product.
  EXPECT_EQ(fusion::edge_rule(*in, M::ManyToMany, *gemm, M::ManyToMany).decision, fusion::Decision::Break);
  EXPECT_EQ(fusion::op_fusion_rule(*out, *gemm), nullptr);
  for (const fusion::OpFusionRule& r : fusion::op_fusion_rules()) EXPECT_FALSE(r.why.empty());
}

}  // namespace
}  // namespace tessera
