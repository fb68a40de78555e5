// Graph IR: building, verification, printing, hashing, cloning, extraction and
// the rewrite helpers (values trading producers among them).
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/producer_swap.h"
#include "support/error.h"

namespace tessera {
namespace {

// x -> Relu -> a ; a + w -> b ; output b
std::unique_ptr<Graph> small_graph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->add_input("x", {DType::F32, {2, 3}, true});
  Value* w = g->add_constant("w", Tensor::from<float>({3}, {1, 2, 3}));
  Node* relu = g->add_node("Relu", {x}, {"a"}, {}, "relu");
  Node* add = g->add_node("Add", {relu->outputs[0], w}, {"b"}, {}, "add");
  g->add_output(add->outputs[0]);
  return g;
}

TEST(Graph, BuildsAndVerifies) {
  auto g = small_graph();
  EXPECT_NO_THROW(verify_graph(*g));
  EXPECT_EQ(g->nodes().size(), 2u);
  Value* a = g->find_value("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->producer->op_type, "Relu");
  ASSERT_EQ(a->uses.size(), 1u);
  EXPECT_EQ(a->uses[0].node->op_type, "Add");
  EXPECT_EQ(a->uses[0].input_index, 0);
}

TEST(Graph, DuplicateValueNameIsAnError) {
  Graph g;
  g.add_input("x", {DType::F32, {1}, true});
  EXPECT_THROW(g.add_input("x", {DType::F32, {1}, true}), Error);
}

TEST(Graph, PrinterShowsNodesTypesAndAttributes) {
  auto g = small_graph();
  g->nodes()[0]->attrs["alpha"] = Attribute::of_float(0.5f);
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("input  %x : f32[2x3]"), std::string::npos) << text;
  EXPECT_NE(text.find("= Relu(%x) {alpha=0.5}"), std::string::npos) << text;
  EXPECT_NE(text.find("= Add(%a, $w)"), std::string::npos) << text;
  EXPECT_NE(text.find("return %b"), std::string::npos) << text;
}

TEST(Graph, StructuralHashIgnoresNamesButNotStructure) {
  auto g1 = small_graph();
  auto g2 = small_graph();
  EXPECT_EQ(structural_hash(*g1), structural_hash(*g2));
  // Renaming values and nodes keeps the hash.
  g2->find_value("a")->name = "renamed";
  g2->nodes()[1]->name = "other";
  EXPECT_EQ(structural_hash(*g1), structural_hash(*g2));
  // A different op, attribute or constant value changes it.
  auto g3 = small_graph();
  g3->nodes()[0]->op_type = "Sigmoid";
  EXPECT_NE(structural_hash(*g1), structural_hash(*g3));
  auto g4 = small_graph();
  g4->nodes()[1]->attrs["x"] = Attribute::of_int(1);
  EXPECT_NE(structural_hash(*g1), structural_hash(*g4));
  auto g5 = small_graph();
  g5->find_value("w")->constant->data<float>()[0] = 7;
  EXPECT_NE(structural_hash(*g1), structural_hash(*g5));
}

TEST(Graph, CloneIsDeepAndEqual) {
  auto g = small_graph();
  auto c = g->clone();
  EXPECT_EQ(structural_hash(*g), structural_hash(*c));
  EXPECT_NO_THROW(verify_graph(*c));
  EXPECT_NE(c->find_value("a"), g->find_value("a"));
  EXPECT_EQ(c->find_value("a")->producer, c->nodes()[0].get());
  // Changing the clone leaves the original alone.
  c->nodes()[0]->op_type = "Tanh";
  EXPECT_EQ(g->nodes()[0]->op_type, "Relu");
}

TEST(Graph, ExtractMakesStandaloneSubgraph) {
  auto g = small_graph();
  auto sub = g->extract({g->nodes()[1].get()});
  EXPECT_NO_THROW(verify_graph(*sub));
  ASSERT_EQ(sub->inputs().size(), 1u);
  EXPECT_EQ(sub->inputs()[0]->name, "a");  // produced outside the selection
  ASSERT_EQ(sub->outputs().size(), 1u);
  EXPECT_EQ(sub->outputs()[0]->name, "b");
  EXPECT_TRUE(sub->find_value("w")->is_constant());
}

TEST(Graph, ReplaceAllUsesRewiresNodesAndOutputs) {
  auto g = small_graph();
  Value* x = g->find_value("x");
  Value* a = g->find_value("a");
  Value* b = g->find_value("b");
  g->replace_all_uses(a, x);  // bypass the Relu
  EXPECT_TRUE(a->uses.empty());
  EXPECT_EQ(g->nodes()[1]->inputs[0], x);
  EXPECT_EQ(g->remove_dead_nodes(), 1);
  EXPECT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->find_value("a"), nullptr);
  g->replace_all_uses(b, x);
  EXPECT_EQ(g->outputs()[0], x);
  EXPECT_NO_THROW(verify_graph(*g));
}

// A node built to replace another takes over its output value: readers and
// the graph-output slot stay with the value, the old node writes the fresh one.
TEST(Graph, SwapProducersTradesOutputSlots) {
  auto g = small_graph();
  Value* a = g->find_value("a");
  Value* w = g->find_value("w");
  Value* b = g->find_value("b");
  Node* add = b->producer;
  Node* sub = g->insert_node_before(add, "Sub", {a, w}, {"b2"}, {}, "sub");
  Value* b2 = sub->outputs[0];
  swap_producers(b, b2);
  EXPECT_EQ(b->producer, sub);
  EXPECT_EQ(b->producer_output, 0);
  EXPECT_EQ(sub->outputs[0], b);
  EXPECT_EQ(b2->producer, add);
  EXPECT_EQ(add->outputs[0], b2);
  EXPECT_EQ(g->outputs()[0], b);
  g->erase_node(add);  // b2 is unread
  EXPECT_NO_THROW(verify_graph(*g));
  EXPECT_EQ(g->nodes().size(), 2u);

  // A later output of a multi-output node: positions travel with the values.
  Graph h;
  Value* x = h.add_input("x", {DType::F32, {4}, true});
  Node* split = h.add_node("Split", {x}, {"s0", "s1"}, {}, "split");
  Node* relu = h.add_node("Relu", {x}, {"r"}, {}, "relu");
  Value* s1 = split->outputs[1];
  Value* r = relu->outputs[0];
  Node* neg = h.add_node("Neg", {s1}, {"n"}, {}, "neg");
  h.add_output(neg->outputs[0]);
  h.add_output(split->outputs[0]);
  swap_producers(s1, r);
  EXPECT_EQ(split->outputs[1], r);
  EXPECT_EQ(r->producer, split);
  EXPECT_EQ(r->producer_output, 1);
  EXPECT_EQ(relu->outputs[0], s1);
  EXPECT_EQ(s1->producer, relu);
  EXPECT_EQ(s1->producer_output, 0);
  ASSERT_EQ(s1->uses.size(), 1u);
  EXPECT_EQ(s1->uses[0].node, neg);
  EXPECT_NO_THROW(verify_graph(h));

  // A graph input has no producer to trade.
  EXPECT_THROW(swap_producers(x, r), Error);
}

TEST(Graph, EraseRefusesUsedNodesAndInsertKeepsOrder) {
  auto g = small_graph();
  Node* relu = g->nodes()[0].get();
  EXPECT_THROW(g->erase_node(relu), Error);
  Node* add = g->nodes()[1].get();
  Node* neg = g->insert_node_before(add, "Neg", {relu->outputs[0]}, {"n"}, {}, "neg");
  g->set_input(add, 0, neg->outputs[0]);
  EXPECT_EQ(g->nodes()[1]->op_type, "Neg");
  EXPECT_NO_THROW(verify_graph(*g));
  EXPECT_EQ(relu->outputs[0]->uses.size(), 1u);
}

TEST(Graph, VerifierCatchesUseBeforeDefinitionAndTopoSortFixesIt) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1}, true});
  Value* later = g.add_value("later");
  Node* first = g.add_node("Relu", {later}, {"y"}, {}, "first");
  Node* second = g.add_node("Neg", {x}, {}, {}, "second");
  // Wire `later` as second's output by hand: produced after its use.
  second->outputs.push_back(later);
  later->producer = second;
  g.add_output(first->outputs[0]);
  EXPECT_THROW(verify_graph(g), Error);
  g.topo_sort();
  EXPECT_NO_THROW(verify_graph(g));
  EXPECT_EQ(g.nodes()[0]->name, "second");
}

TEST(Graph, TopoSortReportsCycles) {
  Graph g;
  Value* p = g.add_value("p");
  Node* a = g.add_node("Relu", {p}, {"q"}, {}, "a");
  Node* b = g.add_node("Relu", {a->outputs[0]}, {}, {}, "b");
  b->outputs.push_back(p);
  p->producer = b;
  g.add_output(a->outputs[0]);
  try {
    g.topo_sort();
    FAIL() << "cycle not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
