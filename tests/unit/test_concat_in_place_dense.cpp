// Concats done in place that share one root (fusion/concat_in_place.*,
// runtime/concat_views.*): a DenseNet block, where every concat is a prefix of
// the block's last one, checked in the fusion plan's placements (offsets
// computed here from the shapes), in its blocks, and compiled on both ISAs and
// layouts against the reference interpreter; and two concats of the same
// leaves, one holding the other (placed the same in either graph order) or
// overlapping (one copies).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fusion/concat_in_place.h"
#include "fusion/partition.h"
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
using runtime::Slot;
using runtime::Step;
using tessera::testing::block_of;
using tessera::testing::concat;
using tessera::testing::conv;
using tessera::testing::conv_relu;
using tessera::testing::count_ops;
using tessera::testing::expect_runs_in_place;
using tessera::testing::host_isa_options;
using tessera::testing::in_place;
using tessera::testing::placement;
using tessera::testing::random_f32;
using tessera::testing::unary;

uint32_t seed_ = 1;

// A BatchNormalization `name` of x (C channels), its scale and variance
// positive, its parameters drawn from seed_ on.
Value* batch_norm(Graph& g, Value* x, int64_t C, const std::string& name) {
  std::vector<Value*> in{x, g.add_constant(name + ".gamma", random_f32({C}, seed_++, 0.5f, 1.5f)),
                         g.add_constant(name + ".beta", random_f32({C}, seed_++)),
                         g.add_constant(name + ".mean", random_f32({C}, seed_++)),
                         g.add_constant(name + ".var", random_f32({C}, seed_++, 0.5f, 2.0f))};
  return g.add_node("BatchNormalization", in, {name}, {}, name)->outputs[0];
}

constexpr int64_t kDenseH = 6, kDenseW = 5;

// A DenseNet block in small, in torchvision's export order: a stem gives x0
// (c0 channels); layer k concatenates x0 and every earlier layer's output
// (layer 1: x0 alone), then BatchNormalization, ReLU, a 1x1 conv, ReLU and
// a 3x3 conv give its `growth` channels; the block's last concat (all of
// them) feeds a 1x1 transition conv.
std::unique_ptr<Graph> dense_block(int64_t c0, int64_t growth, int layers) {
  seed_ = 70;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 8, kDenseH, kDenseW}, true});
  std::vector<Value*> feats{conv_relu(*g, x, c0, 8, 3, "stem", seed_)};
  for (int k = 1; k <= layers; ++k) {
    const std::string l = "layer" + std::to_string(k);
    const int64_t C = c0 + growth * (k - 1);
    Value* z = unary(*g, "Relu", batch_norm(*g, concat(*g, feats, 1, l + "_cat"), C, l + "_norm1"), l + "_relu1");
    Value* m = conv_relu(*g, z, 16, C, 1, l + "_conv1", seed_);
    feats.push_back(conv(*g, m, growth, 16, 3, l + "_conv2", seed_));
  }
  Value* all = concat(*g, feats, 1, "block_cat");
  g->add_output(conv(*g, all, 4, c0 + growth * layers, 1, "transition", seed_));
  infer_graph(*g);
  return g;
}

// Every concat of the block is a view of the last one: each feature sits at
// its channel prefix (the stem at 0, layer j's output after c0 + growth (j - 1)
// channels) in every concat that reads it.
TEST(ConcatInPlace, DenseBlockSharesOneRoot) {
  const int64_t c0 = 16, growth = 16, per_channel = kDenseH * kDenseW * 4;
  const int layers = 4;
  auto g = dense_block(c0, growth, layers);
  auto ps = in_place(*g);
  ASSERT_EQ(static_cast<int>(ps.size()), count_ops(*g, "Concat"));
  const Value* root = g->find_value("block_cat");
  ASSERT_NE(root, nullptr);
  auto prefix = [&](const Value* v) -> int64_t {
    if (v->name == "stem") return 0;
    for (int j = 1; j <= layers; ++j)
      if (v->name == "layer" + std::to_string(j) + "_conv2") return c0 + growth * (j - 1);
    ADD_FAILURE() << "unexpected concat input " << v->name;
    return -1;
  };
  for (const auto& p : ps) {
    SCOPED_TRACE(p.concat->name);
    EXPECT_EQ(p.root, p.concat->outputs[0] == root ? nullptr : root);
    EXPECT_EQ(p.base, 0);  // every concat is a prefix of the root
    for (size_t i = 0; i < p.offsets.size(); ++i)
      EXPECT_EQ(p.base + p.offsets[i], prefix(p.concat->inputs[i]) * per_channel) << p.concat->inputs[i]->name;
  }
}

// The compiled dense block: every concat a view step under one root, which
// lives from x0's producer on; whole blocks of 16 and 32 channels, on both
// layouts and ISAs, against the interpreter.
TEST(ConcatInPlace, DenseBlockMatchesTheInterpreter) {
  auto one_root = [](const Executor& m) {
    const Plan& p = *m.last_plan();
    std::set<int> roots;
    for (const Step& st : p.steps)
      if (st.view) {
        const Slot& out = p.slots[static_cast<size_t>(st.outputs[0])];
        roots.insert(out.parent >= 0 ? out.parent : st.outputs[0]);
      }
    EXPECT_EQ(roots.size(), 1u);
  };
  for (auto [c0, growth] : {std::pair<int64_t, int64_t>{16, 16}, {32, 32}}) {
    SCOPED_TRACE("c0 " + std::to_string(c0) + ", growth " + std::to_string(growth));
    auto build = [c0 = c0, growth = growth] { return dense_block(c0, growth, 3); };
    const int concats = count_ops(*build(), "Concat");
    expect_runs_in_place(build, concats, concats, true, one_root);
    expect_runs_in_place(build, concats, concats, false, one_root);
  }
}

// Growth 24: on AVX-512 a layer's output fills one block and half of the
// next, so the concats reading it in the middle stay NCHW (over reorders);
// whatever each concat becomes, the block matches the interpreter and the
// compiled plan's views are the fusion plan's.
TEST(ConcatInPlace, DenseBlockWithPaddedGrowth) {
  expect_runs_in_place([] { return dense_block(16, 24, 3); }, -1, -1);
}

// With views, a layer's BatchNormalization and ReLU join its 1x1 conv (the
// concat before them is a stored buffer, not the previous conv's epilogue),
// and no concat shares a block.
TEST(ConcatInPlace, DenseBlockFusion) {
  auto g = dense_block(16, 16, 4);
  fusion::Partition p = fusion::partition_graph(*g);
  for (int k = 1; k <= 4; ++k) {
    const std::string l = "layer" + std::to_string(k);
    EXPECT_EQ(block_of(*g, p, l + "_norm1"), block_of(*g, p, l + "_conv1_conv")) << l << fusion::print_fusion(*g, p);
    EXPECT_EQ(block_of(*g, p, l + "_relu1"), block_of(*g, p, l + "_conv1_conv")) << l;
  }
  auto concats_alone = [](const Graph& graph, const fusion::Partition& part) {
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      if (graph.nodes()[i]->op_type == "Concat") {
        EXPECT_EQ(part.blocks[static_cast<size_t>(part.block_of[i])].nodes.size(), 1u)
            << graph.nodes()[i]->name << fusion::print_fusion(graph, part);
      }
    }
  };
  concats_alone(*g, p);
  EXPECT_EQ(static_cast<int>(p.concats_in_place.size()), count_ops(*g, "Concat"));
  for (ExecutorOptions o : host_isa_options()) {  // on the blocked graph too
    Executor m(dense_block(16, 16, 4), o);
    concats_alone(m.graph(), m.partition());
  }
}

// x [1, 8, 5, 5] and three conv + ReLU branches of 16 channels on it, u
// (1x1), v (3x3) and w (1x1), their constants drawn from `seed` on: the
// leaves of the concats below.
struct ThreeBranches {
  std::unique_ptr<Graph> g;
  Value *u, *v, *w;
};

ThreeBranches three_branches(uint32_t seed) {
  seed_ = seed;
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 8, 5, 5}, true});
  Value* u = conv_relu(*g, x, 16, 8, 1, "u", seed_);
  Value* v = conv_relu(*g, x, 16, 8, 3, "v", seed_);
  Value* w = conv_relu(*g, x, 16, 8, 1, "w", seed_);
  return {std::move(g), u, v, w};
}

// Two concats of the same leaves, the larger listed before or after the
// smaller: the same placements (the smaller a prefix of the larger) either way.
TEST(ConcatInPlace, PlacementsDoNotDependOnGraphOrder) {
  auto build = [](bool larger_first) {
    auto [g, u, v, w] = three_branches(80);
    Value *small = nullptr, *large = nullptr;
    if (larger_first) large = concat(*g, {u, v, w}, 1, "large");
    small = concat(*g, {u, v}, 1, "small");
    if (!larger_first) large = concat(*g, {u, v, w}, 1, "large");
    g->add_output(conv(*g, small, 4, 32, 1, "head_small", seed_));
    g->add_output(conv(*g, large, 4, 48, 1, "head_large", seed_));
    infer_graph(*g);
    return std::move(g);  // a structured binding: not moved implicitly
  };
  const int64_t per_channel = 5 * 5 * 4;
  for (bool larger_first : {true, false}) {
    SCOPED_TRACE(larger_first ? "larger first" : "smaller first");
    auto g = build(larger_first);
    auto ps = in_place(*g);
    ASSERT_EQ(ps.size(), 2u);
    const fusion::ConcatPlacement* small = placement(ps, "small");
    const fusion::ConcatPlacement* large = placement(ps, "large");
    ASSERT_TRUE(small && large);
    EXPECT_EQ(large->root, nullptr);
    EXPECT_EQ(small->root, g->find_value("large"));
    EXPECT_EQ(small->base, 0);
    EXPECT_EQ(small->offsets, (std::vector<int64_t>{0, 16 * per_channel}));
    EXPECT_EQ(large->offsets, (std::vector<int64_t>{0, 16 * per_channel, 32 * per_channel}));
    expect_runs_in_place([&] { return build(larger_first); }, 2, 2);
  }
}

// [u, v] and [v, w] overlap without one holding the other: v cannot sit at
// both places, so the first is a view and the second copies.
TEST(ConcatInPlace, OverlappingConcatsCopyOne) {
  auto build = [] {
    auto [g, u, v, w] = three_branches(90);
    g->add_output(conv(*g, concat(*g, {u, v}, 1, "uv"), 4, 32, 1, "head_uv", seed_));
    g->add_output(conv(*g, concat(*g, {v, w}, 1, "vw"), 4, 32, 1, "head_vw", seed_));
    infer_graph(*g);
    return std::move(g);
  };
  auto g = build();
  auto ps = in_place(*g);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].concat->name, "uv");
  EXPECT_EQ(ps[0].root, nullptr);
  expect_runs_in_place(build, 1, 1);
}

}  // namespace
}  // namespace tessera
