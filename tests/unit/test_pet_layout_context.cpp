// PET's layout context (pet/layout_context.h): which inputs and outputs of a
// subprogram the model holds blocked, that the neighbours added for a
// measurement change nothing it computes (reference interpreter), that the
// target then runs the original blocked end to end, and that the search keys
// its database and its sharing by the context.
#include <gtest/gtest.h>

#include <bit>

#include "opt/passes.h"
#include "pet/layout_context.h"
#include "pet/search.h"
#include "pet/subprogram.h"
#include "graph_test_util.h"
#include "pet_test_util.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

using testing::count_ops;
using testing::pet::dilation_averse;
using testing::pet::expect_same_outputs;
using testing::pet::ModelBuilder;
using testing::pet::random_inputs;

// conv c1 (dilation 2) -> relu r1 -> conv c2 (dilation 2) -> relu r2: two
// subprogams of one structure, c1 reading the model's input, c2 a map between
// convolutions.
std::unique_ptr<Graph> two_convs() {
  ModelBuilder b;
  Value* x = b.input("x", {1, 8, 10, 10});
  Value* y = b.relu(b.conv(x, 8, 3, 3, {2, 2, 2, 2}, "c1", 1, 2), "r1");
  b.g->add_output(b.relu(b.conv(y, 8, 3, 3, {2, 2, 2, 2}, "c2", 1, 2), "r2"));
  infer_graph(*b.g);
  return std::move(b.g);
}

const Subprogram& subprogram_of(const std::vector<Subprogram>& sps, const std::string& conv) {
  for (const Subprogram& sp : sps)
    if (sp.nodes.size() == 1 && sp.nodes[0]->name == conv) return sp;
  TESSERA_FAIL("no subprogram of ", conv);
}

TEST(PetLayoutContext, NamesTheInputsAndOutputsTheModelHoldsBlocked) {
  std::unique_ptr<Graph> g = two_convs();
  std::vector<Subprogram> sps = find_subprograms(*g);
  const Subprogram& c1 = subprogram_of(sps, "c1");
  const Subprogram& c2 = subprogram_of(sps, "c2");
  // The relu's output (c2's input) and the convs' outputs held blocked; x not.
  const std::set<std::string> blocked{"r1", "c1", "c2"};
  EXPECT_EQ(layout_context(c1, blocked), uint64_t{1} << 32);
  EXPECT_EQ(layout_context(c2, blocked), (uint64_t{1} << 32) | 1);
  EXPECT_EQ(layout_context(c2, {}), 0u);
  EXPECT_EQ(hash_with_context(c2.hash, 0), c2.hash);
  EXPECT_NE(hash_with_context(c2.hash, 1), hash_with_context(c2.hash, uint64_t{1} << 32));
  EXPECT_NE(hash_with_context(c2.hash, 1), c2.hash);
}

// The neighbours pass values through unchanged: the graph's signature and
// outputs are those of the graph without them.
TEST(PetLayoutContext, NeighboursChangeNothingTheGraphComputes) {
  ModelBuilder b;
  Value* x = b.input("x", {1, 8, 6, 6});
  Value* y = b.input("y", {1, 8, 6, 6});
  Value* c = b.conv(x, 8, 3, 3, {1, 1, 1, 1}, "c");
  b.g->add_output(b.op("Add", {c, y}, "a"));
  b.g->add_output(c);
  infer_graph(*b.g);
  for (uint64_t context : {uint64_t{1}, uint64_t{2}, uint64_t{3} | (uint64_t{1} << 33), (uint64_t{3} << 32) | 3}) {
    SCOPED_TRACE(context);
    std::unique_ptr<Graph> w = b.g->clone();
    add_layout_context(*w, context);
    verify_graph(*w);
    ASSERT_EQ(w->inputs().size(), 2u);
    ASSERT_EQ(w->outputs().size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(w->inputs()[i]->type, b.g->inputs()[i]->type);
      EXPECT_EQ(w->outputs()[i]->type, b.g->outputs()[i]->type);
    }
    const int added = std::popcount(context);
    EXPECT_EQ(count_ops(*w, "Conv"), 1 + added);
    expect_same_outputs(*b.g, *w, random_inputs(*b.g, 7), 1e-6);
  }
}

// With its neighbours, the target holds the original conv's input and output
// blocked as in the model: values change layout only at the graph's edges.
TEST(PetLayoutContext, TheTargetRunsTheOriginalBlockedBetweenItsNeighbours) {
  // A candidate as the search measures it: weights constant, the activation an input.
  ModelBuilder b;
  b.g->add_output(b.conv(b.input("x", {1, 8, 10, 10}), 8, 3, 3, {2, 2, 2, 2}, "c", 1, 2));
  infer_graph(*b.g);
  std::unique_ptr<Graph> alone = b.g->clone();
  std::unique_ptr<Graph> beside = b.g->clone();
  add_layout_context(*beside, (uint64_t{1} << 32) | 1);
  ASSERT_EQ(to_blocked_layout(*alone, 16), 1);
  ASSERT_EQ(to_blocked_layout(*beside, 16), 3) << print_graph(*beside);
  EXPECT_EQ(count_ops(*beside, "ReorderToBlocked"), 1) << print_graph(*beside);
  EXPECT_EQ(count_ops(*beside, "ReorderFromBlocked"), 1) << print_graph(*beside);
  int convs = 0;
  for (const auto& n : beside->nodes())
    if (n->op_type == "ConvBlocked") {
      ++convs;
      EXPECT_EQ(n->inputs[0]->producer->op_type, "DepthwiseConvBlocked") << print_graph(*beside);
    }
  EXPECT_EQ(convs, 1) << print_graph(*beside);
  expect_same_outputs(*b.g, *beside, random_inputs(*b.g, 5), 1e-5);
}

// The search measures candidates with their neighbours and keys them by the
// context: c1 and c2 share a structure but not their neighbours' layout, so
// neither's result answers for the other.
TEST(PetLayoutContext, TheSearchSharesSubprogramsOnlyWithOneContext) {
  for (bool with_context : {false, true}) {
    SCOPED_TRACE(with_context ? "c2's input blocked" : "no context");
    std::unique_ptr<Graph> g = two_convs();
    std::unique_ptr<Graph> original = g->clone();
    SearchOptions o;
    o.rounds = 2;
    o.max_estimate_ratio = 0;
    o.min_model_gain = -1;
    if (with_context) o.blocked_values = {"r1"};
    int with_neighbours = 0;
    CostFn cost = [&](const Graph& c) {
      with_neighbours += count_ops(c, "Conv") > 0 && c.nodes().front()->name.rfind("pet_context", 0) == 0;
      return dilation_averse(c);
    };
    PetDb db;
    SearchReport r = optimize_program(*g, o, cost, db, "test");
    EXPECT_EQ(r.subprograms, 2);
    EXPECT_EQ(r.shared, with_context ? 0 : 1);
    EXPECT_EQ(with_neighbours > 0, with_context);
    EXPECT_EQ(r.applied, 2);
    fold_constants(*g);
    expect_same_outputs(*original, *g, random_inputs(*original, 3), 1e-5);
  }
}

}  // namespace
}  // namespace tessera::pet
