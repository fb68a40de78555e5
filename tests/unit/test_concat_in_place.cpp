// Concats done in place (fusion/concat_in_place.*, runtime/concat_views.*):
// which concats qualify and where their inputs sit (offsets computed here
// from the shapes), the fusion plan leaving them out of their branches'
// blocks, and the compiled runtime's view steps against the reference
// interpreter on NCHW and blocked layouts, both ISAs: producers that are
// fused kernels, reference steps or other concats, values read elsewhere
// too, in-place elementwise consumers, repeated runs and artifacts; SqueezeNet
// 1.1's fire modules; and the fusion plan and the compiled plan choosing the
// same concats. Concats sharing one root (dense blocks, concats of the same
// leaves) are in test_concat_in_place_dense.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <set>

#include "codegen/llvm/jit.h"
#include "driver/driver.h"
#include "fusion/concat_in_place.h"
#include "fusion/partition.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "runtime/executor.h"
#include "concat_in_place_test_util.h"
#include "graph_test_util.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using runtime::Executor;
using runtime::ExecutorOptions;
using runtime::Plan;
using runtime::Step;
using tessera::testing::block_of;
using tessera::testing::concat;
using tessera::testing::conv;
using tessera::testing::conv_relu;
using tessera::testing::expect_arena_sound;
using tessera::testing::expect_near_scaled;
using tessera::testing::expect_runs_in_place;
using tessera::testing::expect_views_in_place;
using tessera::testing::in_place;
using tessera::testing::placement;
using tessera::testing::random_f32;
using tessera::testing::save_and_load;
using tessera::testing::unary;

uint32_t seed_ = 1;

// An Inception-like block: x -> {1x1 conv+relu, 1x1 -> 3x3 conv+relu,
// avgpool -> 1x1 conv+relu} -> Concat -> 1x1 conv. Channel counts `c` per
// branch (odd counts: NCHW slices at unaligned offsets; the last one short of
// a block: the blocked concat's padding lanes).
std::unique_ptr<Graph> inception(int64_t batch, std::vector<int64_t> c, int64_t H = 9, int64_t W = 7) {
  seed_ = 1;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {batch, 8, H, W}, true});
  Value* a = unary(*g, "Relu", conv(*g, x, c[0], 8, 1, "a_conv", seed_), "a");
  Value* b1 = unary(*g, "Relu", conv(*g, x, 8, 8, 1, "b1_conv", seed_), "b1");
  Value* b = unary(*g, "Relu", conv(*g, b1, c[1], 8, 3, "b_conv", seed_), "b");
  AttrMap ap;
  ap["kernel_shape"] = Attribute::of_ints({3, 3});
  ap["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* p = g->add_node("AveragePool", {x}, {"pool"}, ap, "pool")->outputs[0];
  Value* d = unary(*g, "Relu", conv(*g, p, c[2], 8, 1, "d_conv", seed_), "d");
  Value* y = concat(*g, {a, b, d}, 1, "cat");
  g->add_output(conv(*g, y, 4, c[0] + c[1] + c[2], 1, "head", seed_));
  infer_graph(*g);
  return g;
}

TEST(ConcatInPlace, TheConcatLeavesItsBranchsBlock) {
  auto g = inception(1, {16, 16, 3});
  fusion::Partition on = fusion::partition_graph(*g);
  fusion::PartitionOptions off_opts;
  off_opts.concat_in_place = false;
  fusion::Partition off = fusion::partition_graph(*g, off_opts);
  // Without: the concat ends one branch's block (the reason for the split).
  int cat_off = block_of(*g, off, "cat");
  EXPECT_GT(off.blocks[static_cast<size_t>(cat_off)].nodes.size(), 1u) << fusion::print_fusion(*g, off);
  EXPECT_TRUE(off.concats_in_place.empty());
  // With: alone, each branch's block ends at its ReLU, which stays with its conv.
  int cat = block_of(*g, on, "cat");
  EXPECT_EQ(on.blocks[static_cast<size_t>(cat)].nodes.size(), 1u) << fusion::print_fusion(*g, on);
  EXPECT_EQ(on.concats_in_place.size(), 1u);
  for (const char* r : {"a", "b", "d"}) EXPECT_NE(block_of(*g, on, r), cat) << r;
  EXPECT_EQ(block_of(*g, on, "a"), block_of(*g, on, "a_conv"));
  EXPECT_EQ(block_of(*g, on, "d"), block_of(*g, on, "d_conv"));
  EXPECT_NE(fusion::print_fusion(*g, on).find("(in place"), std::string::npos);
  // The branch outputs are written into the concat's buffer: not counted.
  EXPECT_LT(fusion::fusion_stats(*g, on).intermediate_after, fusion::fusion_stats(*g, off).intermediate_after);
  // The concat's own block is a view: no kernel is counted for it.
  EXPECT_EQ(fusion::fusion_stats(*g, on).blocks, static_cast<int>(on.blocks.size()) - 1);
}

TEST(ConcatInPlace, OffsetsAreChannelPrefixes) {
  auto g = inception(1, {5, 7, 3}, 9, 7);
  auto ps = in_place(*g);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].offsets, (std::vector<int64_t>{0, 5 * 9 * 7 * 4, 12 * 9 * 7 * 4}));
  // Batch 2: each slice repeats per image, not contiguous (phase 2).
  EXPECT_TRUE(in_place(*inception(2, {5, 7, 3})).empty());
}

TEST(ConcatInPlace, WhichConcatsQualify) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 4, 3, 5}, true});
  Value* r = unary(*g, "Relu", x, "r");
  Value* e = unary(*g, "Exp", x, "e");
  Value* t = unary(*g, "Tanh", x, "t");
  Value* k = g->add_constant("k", random_f32({1, 2, 3, 5}, 9));
  std::vector<Value*> outs{
      concat(*g, {x, r}, 1, "graph_input"),   // x is a graph input
      concat(*g, {r, k}, 1, "constant"),      // k is a constant
      concat(*g, {e, e}, 1, "repeated"),      // e twice
      concat(*g, {r, e}, 2, "axis2"),         // dims before the axis: 1x4
      concat(*g, {r, t}, 1, "first"),         // qualifies: claims r and t
      concat(*g, {t, e}, 1, "second"),        // t claimed by "first"
  };
  Value* out_cat = concat(*g, {unary(*g, "Sigmoid", x, "s"), unary(*g, "Neg", x, "n")}, 1, "graph_output");
  Value* nested = concat(*g, {outs[4], unary(*g, "Abs", x, "abs")}, 1, "outer");  // nests "first"
  for (Value* v : outs) g->add_output(unary(*g, "Identity", v, v->name + "_id"));
  g->add_output(out_cat);
  g->add_output(unary(*g, "Identity", nested, "outer_id"));
  infer_graph(*g);
  auto ps = in_place(*g);
  std::vector<std::string> names;
  for (const auto& p : ps) names.push_back(p.concat->name);
  EXPECT_EQ(names, (std::vector<std::string>{"first", "outer"}));
  ASSERT_NE(placement(ps, "outer"), nullptr);
  EXPECT_EQ(placement(ps, "outer")->offsets, (std::vector<int64_t>{0, 8 * 3 * 5 * 4}));
  // The ones left out still run (copies), and right; fused or not, the two
  // in place stay views (a view is never fused with its Identity).
  auto build = [&] { return g->clone(); };
  expect_runs_in_place(build, 2, 2, false);
  expect_runs_in_place(build, 2, 2, true);
}

TEST(ConcatInPlace, InceptionBlockMatchesTheInterpreter) {
  // Odd channel counts: unaligned NCHW offsets; blocked, the concat stays
  // NCHW over the branches' reorders, which write into it.
  expect_runs_in_place([] { return inception(1, {5, 7, 3}); }, 1, 1);
  // Block multiples with a short last input (padding lanes), fused and not.
  expect_runs_in_place([] { return inception(1, {16, 32, 3}); }, 1, 1);
  expect_runs_in_place([] { return inception(1, {16, 32, 3}); }, 1, 1, false);
}

// Inception v3's Mixed_7b shape: a concat of a concat, both in place.
TEST(ConcatInPlace, NestedConcats) {
  auto build = [] {
    seed_ = 30;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 8, 6, 6}, true});
    Value* a = unary(*g, "Relu", conv(*g, x, 16, 8, 1, "a_conv", seed_), "a");
    Value* b0 = unary(*g, "Relu", conv(*g, x, 8, 8, 1, "b0_conv", seed_), "b0");
    Value* b1 = unary(*g, "Relu", conv(*g, b0, 16, 8, 3, "b1_conv", seed_), "b1");
    Value* b2 = unary(*g, "Relu", conv(*g, b0, 16, 8, 3, "b2_conv", seed_), "b2");
    Value* inner = concat(*g, {b1, b2}, 1, "inner");
    Value* y = concat(*g, {a, inner}, 1, "outer");
    g->add_output(conv(*g, y, 4, 48, 1, "head", seed_));
    infer_graph(*g);
    return g;
  };
  auto g = build();
  fusion::Partition p = fusion::partition_graph(*g);
  EXPECT_EQ(p.blocks[static_cast<size_t>(block_of(*g, p, "inner"))].nodes.size(), 1u) << fusion::print_fusion(*g, p);
  EXPECT_EQ(p.blocks[static_cast<size_t>(block_of(*g, p, "outer"))].nodes.size(), 1u) << fusion::print_fusion(*g, p);
  expect_runs_in_place(build, 2, 2);
}

// A branch output read after the concat by an elementwise op that could
// overwrite a dying input, and an elementwise consumer of the concat (a step
// of its own, free to overwrite the concat's buffer when fusion is off).
TEST(ConcatInPlace, OtherReadersAndInPlaceConsumers) {
  auto build = [] {
    seed_ = 40;
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {1, 8, 5, 5}, true});
    Value* a = conv(*g, x, 16, 8, 1, "a_conv", seed_);
    Value* b = unary(*g, "Relu", conv(*g, x, 16, 8, 3, "b_conv", seed_), "b");
    Value* y = concat(*g, {a, b}, 1, "cat");
    Value* z = unary(*g, "Sigmoid", unary(*g, "Relu", y, "cat_relu"), "cat_sigmoid");
    Value* later = unary(*g, "Tanh", a, "a_tanh");  // reads a at its last use
    g->add_output(conv(*g, z, 4, 32, 1, "head", seed_));
    g->add_output(conv(*g, later, 4, 16, 1, "head_a", seed_));
    infer_graph(*g);
    return g;
  };
  expect_runs_in_place(build, 1, 1, false);
  expect_runs_in_place(build, 1, 1, true);  // the concat is never fused with its ReLU
}

// Producers that are reference steps (NonZero has no expression) whose
// output length depends on the values: the plan's concrete types make the
// concat contiguous, and the reference outputs are copied into their slices.
TEST(ConcatInPlace, ReferenceProducers) {
  auto build = [] {
    auto g = std::make_unique<Graph>();
    g->opset = 13;
    Value* x = g->add_input("x", {DType::F32, {9}, true});
    Value* y = g->add_input("y", {DType::F32, {7}, true});
    Value* nx = unary(*g, "NonZero", unary(*g, "Relu", x, "rx"), "nx");
    Value* ny = unary(*g, "NonZero", unary(*g, "Relu", y, "ry"), "ny");
    Value* c = concat(*g, {nx, ny}, 1, "cat");
    AttrMap to;
    to["to"] = Attribute::of_int(1);  // ONNX FLOAT
    g->add_output(unary(*g, "Neg", g->add_node("Cast", {c}, {"f"}, to, "cast")->outputs[0], "out"));
    infer_graph(*g);
    return g;
  };
  for (ExecutorOptions o : tessera::testing::host_isa_options()) {
    Executor m(build(), o);
    for (uint32_t s : {5u, 6u}) {
      std::vector<Tensor> ins{random_f32({9}, s), random_f32({7}, s + 10)};
      expect_near_scaled(m.run(ins), interpret(*build(), ins), 0);
      const Plan& p = *m.last_plan();
      EXPECT_EQ(p.concat_views, 1);
      expect_views_in_place(p);
      expect_arena_sound(p);
    }
  }
}

TEST(ConcatInPlace, OptionOffCopies) {
  ExecutorOptions o;
  o.fusion_profile = false;
  o.concat_in_place = false;
  Executor m(inception(1, {16, 16, 3}), o);
  std::vector<Tensor> ins{random_f32({1, 8, 9, 7}, 7)};
  expect_near_scaled(m.run(ins), interpret(*inception(1, {16, 16, 3}), ins), 1e-5);
  EXPECT_EQ(m.last_plan()->concat_views, 0);
  for (const Step& st : m.last_plan()->steps) EXPECT_FALSE(st.view);
}

// An artifact keeps the blocks, so the loaded model has the view steps too;
// one saved with the option off (the concat fused) loads and runs as well.
TEST(ConcatInPlace, Artifacts) {
  std::vector<Tensor> ins{random_f32({1, 8, 9, 7}, 8)};
  for (bool on : {true, false}) {
    ExecutorOptions o;
    o.fusion_profile = false;
    o.concat_in_place = on;
    Executor m(inception(1, {16, 16, 3}), o);
    std::vector<Tensor> first = m.run(ins);
    auto loaded = save_and_load(m, on ? "concat_views" : "concat_copies");
    expect_near_scaled(loaded->run(ins), first, 0);
    EXPECT_EQ(loaded->last_plan()->concat_views, on ? 1 : 0);
  }
}

// SqueezeNet 1.1's eight fire modules: every expand concat (counted in the
// compiled graph) is done in place, and the model still matches the interpreter.
TEST(ConcatInPlace, SqueezeNetFireModules) {
  ExecutorOptions o;
  o.fusion_profile = false;
  Executor m(load_model("zoo:squeezenet1_1"), o);
  int concats = 0;
  for (const auto& n : m.graph().nodes()) concats += n->op_type == "Concat";
  EXPECT_EQ(concats, 8);
  std::vector<Tensor> ins{random_f32(m.graph().inputs()[0]->type.dims, 12, -1, 1)};
  std::vector<Tensor> got = m.run(ins);
  const Plan& p = *m.last_plan();
  EXPECT_EQ(p.concat_views, concats) << fusion::print_fusion(m.graph(), m.partition());
  expect_views_in_place(p);
  expect_arena_sound(p);
  expect_near_scaled(got, interpret(m.graph(), ins), 1e-4);
}

// --- the fusion plan and the compiled plan agree -------------------------------
// The fusion planner (on the graph's types) and the runtime plan (on the
// concrete types) each decide which concats run in place; on static shapes
// the two must pick the same ones, or a concat would be split off its block
// and still copied, or be a view step inside a fused kernel.

Value* max_pool(Graph& g, Value* x, const std::string& name) {
  AttrMap a;
  a["kernel_shape"] = Attribute::of_ints({2, 2});
  a["strides"] = Attribute::of_ints({2, 2});
  return g.add_node("MaxPool", {x}, {name}, std::move(a), name)->outputs[0];
}

// Three Inception modules in a row, each concat read by every branch of the
// next: block multiples with a short last input, a nested concat (Mixed_7b's
// shape) and odd channel counts; the last module's branches also go, swapped,
// into a second concat of the same size (its inputs cannot sit at two places:
// a copy).
std::unique_ptr<Graph> inception_net() {
  seed_ = 50;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 8, 12, 12}, true});
  Value* stem = conv_relu(*g, x, 16, 8, 3, "stem", seed_);
  AttrMap ap;
  ap["kernel_shape"] = Attribute::of_ints({3, 3});
  ap["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* pool1 = g->add_node("AveragePool", {stem}, {"m1_pool"}, ap, "m1_pool")->outputs[0];
  Value* m1 = concat(*g,
                     {conv_relu(*g, stem, 16, 16, 1, "m1_a", seed_),
                      conv_relu(*g, conv_relu(*g, stem, 8, 16, 1, "m1_b0", seed_), 16, 8, 3, "m1_b", seed_),
                      conv_relu(*g, pool1, 8, 16, 1, "m1_d", seed_)},
                     1, "m1");  // 40 channels
  Value* b0 = conv_relu(*g, m1, 8, 40, 1, "m2_b0", seed_);
  Value* inner = concat(
      *g, {conv_relu(*g, b0, 16, 8, 3, "m2_b1", seed_), conv_relu(*g, b0, 16, 8, 3, "m2_b2", seed_)}, 1, "m2_inner");
  Value* pool2 = g->add_node("AveragePool", {m1}, {"m2_pool"}, ap, "m2_pool")->outputs[0];
  Value* m2 = concat(
      *g, {conv_relu(*g, m1, 16, 40, 1, "m2_a", seed_), inner, conv_relu(*g, pool2, 5, 40, 1, "m2_d", seed_)}, 1,
      "m2");  // 53 channels
  Value* m3_a = conv_relu(*g, m2, 5, 53, 1, "m3_a", seed_);
  Value* m3_b = conv_relu(*g, m2, 7, 53, 3, "m3_b", seed_);
  g->add_output(conv(*g, concat(*g, {m3_a, m3_b}, 1, "m3"), 4, 12, 1, "head", seed_));
  g->add_output(conv(*g, concat(*g, {m3_b, m3_a}, 1, "m3_swapped"), 4, 12, 1, "head_swapped", seed_));
  infer_graph(*g);
  return g;
}

// SqueezeNet 1.1's layout in small: a stem, fire modules (a 1x1 squeeze,
// then 1x1 and 3x3 expands concatenated) between max pools, a 1x1
// classifier and a global average pool; the last fire's expands also go,
// swapped, into a second concat and classifier (a copy, as in inception_net).
std::unique_ptr<Graph> squeezenet_net() {
  seed_ = 60;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 3, 32, 32}, true});
  Value* y = max_pool(*g, conv_relu(*g, x, 16, 3, 3, "stem", seed_), "pool0");
  int64_t channels = 16;
  Value *e1 = nullptr, *e3 = nullptr;
  struct Fire {
    int64_t squeeze, expand;
    bool pool_after;
  };
  const Fire fires[] = {{8, 16, false}, {8, 16, true}, {12, 24, false}, {6, 7, false}};
  for (size_t i = 0; i < std::size(fires); ++i) {
    const Fire& f = fires[i];
    const std::string name = "fire" + std::to_string(i + 2);
    Value* s = conv_relu(*g, y, f.squeeze, channels, 1, name + "_squeeze", seed_);
    e1 = conv_relu(*g, s, f.expand, f.squeeze, 1, name + "_e1", seed_);
    e3 = conv_relu(*g, s, f.expand, f.squeeze, 3, name + "_e3", seed_);
    y = concat(*g, {e1, e3}, 1, name);
    channels = 2 * f.expand;
    if (f.pool_after) y = max_pool(*g, y, name + "_pool");
  }
  Value* logits = conv_relu(*g, y, 10, channels, 1, "classifier", seed_);
  g->add_output(g->add_node("GlobalAveragePool", {logits}, {"gap"}, {}, "gap")->outputs[0]);
  g->add_output(conv_relu(*g, concat(*g, {e3, e1}, 1, "swapped"), 10, channels, 1, "classifier_swapped", seed_));
  infer_graph(*g);
  return g;
}

// On every ISA, blocked layout on and off: the concats the fusion plan
// split off as in place are exactly the compiled plan's view steps. Over
// the runs some concat is done in place and some is not, so both answers
// are compared.
void expect_plans_agree(const std::function<std::unique_ptr<Graph>()>& build) {
  size_t concats = 0;
  const std::unique_ptr<Graph> g = build();
  for (const auto& n : g->nodes()) concats += n->op_type == "Concat";
  size_t most = 0, fewest = concats;
  for (ExecutorOptions o : tessera::testing::host_isa_options())
    for (bool blocked : {true, false}) {
      SCOPED_TRACE(std::string(codegen::isa_name(o.isa)) + (blocked ? " blocked" : " NCHW"));
      if (!blocked) o.passes.disable("blocked-layout");
      Executor m(build(), o);
      std::vector<Tensor> ins;
      for (const Value* v : m.graph().inputs()) ins.push_back(random_f32(v->type.dims, 5));
      std::shared_ptr<const Plan> plan = m.prepare(ins);
      std::set<std::string> by_partition, by_plan;
      for (int c : m.partition().concats_in_place)
        by_partition.insert(m.graph().nodes().at(static_cast<size_t>(c))->name);
      for (const Step& st : plan->steps)
        if (st.view) by_plan.insert(st.node->name);
      EXPECT_EQ(by_partition, by_plan) << fusion::print_fusion(m.graph(), m.partition());
      EXPECT_EQ(plan->concat_views, static_cast<int>(by_plan.size()));
      most = std::max(most, by_plan.size());
      fewest = std::min(fewest, by_plan.size());
    }
  EXPECT_GT(most, 0u) << "no concat was done in place in any run";
  EXPECT_LT(fewest, concats) << "every concat was done in place in every run";
}

TEST(ConcatInPlace, PlansAgreeOnAnInceptionNet) { expect_plans_agree(inception_net); }

TEST(ConcatInPlace, PlansAgreeOnASqueezeNet) { expect_plans_agree(squeezenet_net); }

}  // namespace
}  // namespace tessera
