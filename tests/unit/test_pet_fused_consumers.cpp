// PET's fused consumers (pet/fused_consumers.h): which elementwise consumers
// of a subprogram's outputs are measured with its candidates, that the
// measured graph computes what the model does there (reference interpreter),
// and that their hash tells structures apart but not weights.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "pet/fused_consumers.h"
#include "pet/subprogram.h"
#include "graph_test_util.h"
#include "pet_test_util.h"

namespace tessera::pet {
namespace {

using testing::count_ops;
using testing::pet::expect_same_outputs;
using testing::pet::max_scaled_diff;
using testing::pet::ModelBuilder;
using testing::pet::random_inputs;

Value* scalar(ModelBuilder& b, const std::string& name, float v) {
  return b.g->add_constant(name, Tensor::from<float>({1}, {v}));
}

// BERT's feed-forward block, `layers` times: x @ W1 + b1, GELU as the exporter
// writes it (h * 0.5 * (1 + erf(h / 1.414))), or Relu when `relu`, then @ W2.
// Each layer's activation is a model output too.
std::unique_ptr<Graph> ffn(int layers, bool relu = false) {
  ModelBuilder b;
  Value* x = b.input("x", {16, 32});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    Value* h = b.op("Add", {b.op("MatMul", {x, b.weight(p + "w1", {32, 24})}, p + "mm1"), b.weight(p + "b1", {24})},
                    p + "bias1");
    Value* y;
    if (relu) {
      y = b.relu(h, p + "relu");
    } else {
      Value* e = b.op("Erf", {b.op("Div", {h, scalar(b, p + "s", 1.414f)}, p + "div")}, p + "erf");
      Value* a = b.op("Add", {e, scalar(b, p + "one", 1.f)}, p + "add1");
      y = b.op("Mul", {b.op("Mul", {h, scalar(b, p + "half", 0.5f)}, p + "mul"), a}, p + "mul1");
    }
    b.g->add_output(y);
    x = b.op("MatMul", {y, b.weight(p + "w2", {24, 32})}, p + "mm2");
  }
  b.g->add_output(x);
  infer_graph(*b.g);
  return std::move(b.g);
}

Node* node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name) return n.get();
  ADD_FAILURE() << "no node " << name;
  return nullptr;
}

TEST(PetFusedConsumers, TheGeluAfterAProductIsMeasuredWithItAndComputesAsTheModel) {
  std::unique_ptr<Graph> g = ffn(1);
  Subprogram sp = make_subprogram(*g, {node(*g, "l0/mm1"), node(*g, "l0/bias1")});
  find_fused_consumers(*g, sp, 0);
  std::vector<std::string> names;
  for (const Node* n : sp.fused_consumers) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"l0/div", "l0/erf", "l0/add1", "l0/mul", "l0/mul1"}));
  EXPECT_NE(sp.consumers_hash, 0u);
  std::unique_ptr<Graph> measured = sp.graph->clone();
  add_fused_consumers(*measured, *g, sp);
  verify_graph(*measured);
  EXPECT_EQ(count_ops(*measured, "Erf"), 1);
  EXPECT_EQ(measured->inputs().size(), sp.graph->inputs().size()) << "every value read is the subprogram's or constant";
  ASSERT_EQ(measured->outputs().size(), 1u) << "only the GELU's output is read beyond it";
  // Its output is the model's first output (the GELU's), on the same input.
  std::vector<Tensor> x = random_inputs(*g, 3);
  std::vector<Tensor> ins{x[0]};
  for (const Tensor& w : sp.weight_tensors) ins.push_back(w);
  const std::vector<Tensor> want = interpret(*g, x);
  const std::vector<Tensor> got = interpret(*measured, ins);
  ASSERT_EQ(got[0].dims(), want[0].dims());
  EXPECT_LE(max_scaled_diff(got[0], want[0]), 1e-6);
  // Outputs the layout context takes care of are left alone.
  find_fused_consumers(*g, sp, 1);
  EXPECT_TRUE(sp.fused_consumers.empty());
  EXPECT_EQ(sp.consumers_hash, 0u);
}

// Repeated blocks (other weights, other constants' values) share the hash;
// another consumer op does not; at most max_nodes are taken.
TEST(PetFusedConsumers, TheHashTellsStructuresApartButNotWeights) {
  std::unique_ptr<Graph> g = ffn(2), r = ffn(1, true);
  Subprogram a = make_subprogram(*g, {node(*g, "l0/mm1"), node(*g, "l0/bias1")});
  Subprogram b = make_subprogram(*g, {node(*g, "l1/mm1"), node(*g, "l1/bias1")});
  Subprogram c = make_subprogram(*r, {node(*r, "l0/mm1"), node(*r, "l0/bias1")});
  find_fused_consumers(*g, a, 0);
  find_fused_consumers(*g, b, 0);
  find_fused_consumers(*r, c, 0);
  EXPECT_EQ(a.consumers_hash, b.consumers_hash);
  EXPECT_NE(a.consumers_hash, c.consumers_hash);
  ASSERT_EQ(c.fused_consumers.size(), 1u);
  EXPECT_EQ(c.fused_consumers[0]->op_type, "Relu");
  find_fused_consumers(*g, a, 0, 2);
  EXPECT_EQ(a.fused_consumers.size(), 2u);
}

}  // namespace
}  // namespace tessera::pet
