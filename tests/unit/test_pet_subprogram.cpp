// PET's multi-linear subprograms (pet/subprogram.h): the splits at ReLU,
// softmax and LayerNorm on small models (a ResNet block, an Inception-like
// block, a BERT attention block, a dilated chain), the groups of parallel
// branches, the standalone graphs' inputs (activations, then weights), and
// splice's round trip checked by the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "opt/passes.h"
#include "pet/subprogram.h"
#include "pet_test_util.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

using testing::pet::expect_same_outputs;
using testing::pet::ModelBuilder;
using testing::pet::random_inputs;

std::set<std::string> names(const Subprogram& s) {
  std::set<std::string> out;
  for (const Node* n : s.nodes) out.insert(n->name);
  return out;
}

const Subprogram* find(const std::vector<Subprogram>& subs, const std::set<std::string>& want) {
  for (const auto& s : subs)
    if (names(s) == want) return &s;
  return nullptr;
}

// x -> conv1 -> relu -> conv2 -> add(., x) -> relu.
std::unique_ptr<Graph> resnet_block() {
  ModelBuilder m;
  Value* x = m.input("x", {1, 8, 6, 6});
  Value* a = m.relu(m.conv(x, 8, 3, 3, {1, 1, 1, 1}, "conv1"), "relu1");
  Value* b = m.conv(a, 8, 3, 3, {1, 1, 1, 1}, "conv2");
  m.g->add_output(m.relu(m.op("Add", {b, x}, "add"), "relu2"));
  return std::move(m.g);
}

TEST(PetSubprogram, ResNetBlockSplitsAtRelu) {
  auto g = resnet_block();
  SubprogramReport rep;
  auto subs = find_subprograms(*g, {}, &rep);
  EXPECT_EQ(rep.regions, 2);
  ASSERT_EQ(subs.size(), 2u);
  ASSERT_TRUE(find(subs, {"conv1"}));
  const Subprogram* s = find(subs, {"conv2", "add"});
  ASSERT_TRUE(s);
  // Activations first (relu1's output, then x), then the weights.
  ASSERT_EQ(s->num_activations, 2u);
  EXPECT_EQ(s->activations[0]->name, "relu1");
  EXPECT_EQ(s->activations[1]->name, "x");
  ASSERT_EQ(s->weights.size(), 2u);
  EXPECT_EQ(s->weights[0]->name, "conv2.w");
  EXPECT_EQ(s->weights[1]->name, "conv2.b");
  EXPECT_EQ(s->graph->inputs().size(), 4u);
  EXPECT_EQ(s->graph->inputs()[2]->type.dims, (Dims{8, 8, 3, 3}));
  ASSERT_EQ(s->outputs.size(), 1u);
  EXPECT_EQ(s->outputs[0]->name, "add");
  EXPECT_EQ(s->weight_tensors[0].dims(), (Dims{8, 8, 3, 3}));
}

TEST(PetSubprogram, HashIgnoresWeightContentsButNotShapes) {
  auto g1 = resnet_block();
  ModelBuilder m;  // the same block with other weights (another seed)
  m.seed = 99;
  Value* x = m.input("x", {1, 8, 6, 6});
  Value* a = m.relu(m.conv(x, 8, 3, 3, {1, 1, 1, 1}, "conv1"), "relu1");
  Value* b = m.conv(a, 8, 3, 3, {1, 1, 1, 1}, "conv2");
  m.g->add_output(m.relu(m.op("Add", {b, x}, "add"), "relu2"));
  auto s1 = find_subprograms(*g1), s2 = find_subprograms(*m.g);
  EXPECT_EQ(s1[0].hash, s2[0].hash);
  EXPECT_EQ(s1[1].hash, s2[1].hash);
  EXPECT_NE(s1[0].hash, s1[1].hash);
}

// Inception-like: four branches of one input (three 1x1 convs and an average
// pool followed by a 1x1 conv), each ending in ReLU, concatenated.
std::unique_ptr<Graph> inception_block() {
  ModelBuilder m;
  Value* x = m.relu(m.input("x", {1, 8, 7, 7}), "in_relu");
  Value* a = m.relu(m.conv(x, 4, 1, 1, {0, 0, 0, 0}, "a"), "a_relu");
  Value* b = m.relu(m.conv(x, 6, 1, 1, {0, 0, 0, 0}, "b"), "b_relu");
  Value* b3 = m.relu(m.conv(b, 4, 3, 3, {1, 1, 1, 1}, "b3"), "b3_relu");
  Value* c = m.relu(m.conv(x, 4, 1, 1, {0, 0, 0, 0}, "c"), "c_relu");
  AttrMap pa;
  pa["kernel_shape"] = Attribute::of_ints({3, 3});
  pa["pads"] = Attribute::of_ints({1, 1, 1, 1});
  pa["strides"] = Attribute::of_ints({1, 1});
  Value* p = m.op("AveragePool", {x}, "pool", pa);
  Value* d = m.relu(m.conv(p, 4, 1, 1, {0, 0, 0, 0}, "d"), "d_relu");
  m.g->add_output(m.op("Concat", {a, b3, c, d}, "cat", {{"axis", Attribute::of_int(1)}}));
  return std::move(m.g);
}

TEST(PetSubprogram, InceptionBranchesAndTheirGroup) {
  auto g = inception_block();
  SubprogramReport rep;
  auto subs = find_subprograms(*g, {}, &rep);
  EXPECT_TRUE(find(subs, {"a"}));
  EXPECT_TRUE(find(subs, {"b"}));
  EXPECT_TRUE(find(subs, {"b3"}));
  EXPECT_TRUE(find(subs, {"c"}));
  EXPECT_TRUE(find(subs, {"pool", "d"}));
  EXPECT_EQ(rep.without_compute, 1);  // the Concat of ReLUs
  const Subprogram* grp = find(subs, {"a", "b", "c", "pool"});
  ASSERT_TRUE(grp);
  EXPECT_EQ(grp->kind, Subprogram::Kind::Group);
  EXPECT_EQ(grp->num_activations, 1u);
  EXPECT_EQ(grp->activations[0]->name, "in_relu");
  EXPECT_EQ(grp->weights.size(), 6u);  // a, b, c: weight and bias each
  EXPECT_EQ(grp->outputs.size(), 4u);
  EXPECT_EQ(rep.groups, 1);
}

// One attention block: Q/K/V projections of x (MatMul + bias, heads split),
// scores scaled and softmaxed, the context projected and added to x, then
// LayerNorm.
std::unique_ptr<Graph> attention_block() {
  ModelBuilder m;
  const int64_t S = 8, D = 16, Hh = 2, Dh = 8;
  Value* x = m.input("x", {1, S, D});
  auto proj = [&](const std::string& n, std::vector<int64_t> perm) {
    Value* y = m.op("MatMul", {x, m.weight(n + ".w", {D, D})}, n + "_mm");
    y = m.op("Add", {y, m.weight(n + ".b", {D})}, n + "_bias");
    y = m.op("Reshape", {y, m.ints(n + ".shape", {1, S, Hh, Dh})}, n + "_heads");
    return m.op("Transpose", {y}, n + "_t", {{"perm", Attribute::of_ints(perm)}});
  };
  Value* q = proj("q", {0, 2, 1, 3});
  Value* k = proj("k", {0, 2, 3, 1});
  Value* v = proj("v", {0, 2, 1, 3});
  Value* s = m.op("MatMul", {q, k}, "scores");
  s = m.op("Mul", {s, m.g->add_constant("scale", Tensor::scalar<float>(0.35f))}, "scaled");
  Value* p = m.op("Softmax", {s}, "softmax", {{"axis", Attribute::of_int(-1)}});
  Value* c = m.op("MatMul", {p, v}, "context");
  c = m.op("Transpose", {c}, "ctx_t", {{"perm", Attribute::of_ints({0, 2, 1, 3})}});
  c = m.op("Reshape", {c, m.ints("ctx.shape", {1, S, D})}, "ctx_merge");
  c = m.op("MatMul", {c, m.weight("o.w", {D, D})}, "o_mm");
  c = m.op("Add", {c, m.weight("o.b", {D})}, "o_bias");
  c = m.op("Add", {c, x}, "residual");
  Value* ln = m.op("LayerNormalization", {c, m.weight("ln.g", {D}), m.weight("ln.b", {D})}, "ln",
                   {{"axis", Attribute::of_int(-1)}});
  m.g->add_output(ln);
  return std::move(m.g);
}

TEST(PetSubprogram, AttentionSplitsAtSoftmaxAndLayerNorm) {
  auto g = attention_block();
  SubprogramReport rep;
  auto subs = find_subprograms(*g, {}, &rep);
  const Subprogram* q = find(subs, {"q_mm", "q_bias", "q_heads", "q_t"});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->num_activations, 1u);
  ASSERT_EQ(q->weights.size(), 2u);  // the reshape's shape stays a constant inside
  EXPECT_EQ(q->weights[0]->name, "q.w");
  bool shape_inside = false;
  for (const auto& v : q->graph->values()) shape_inside |= v->is_constant() && v->type.dtype == DType::I64;
  EXPECT_TRUE(shape_inside);
  // The product of two activations starts its own region; softmax ends it.
  const Subprogram* sc = find(subs, {"scores", "scaled"});
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->num_activations, 2u);
  ASSERT_EQ(sc->weights.size(), 1u);
  EXPECT_EQ(sc->weights[0]->name, "scale");
  // context .. residual is 6 nodes: offered as connected subsets of <= 4,
  // none crossing the LayerNorm.
  EXPECT_GT(rep.subsets, 0);
  for (const auto& s : subs) {
    EXPECT_LE(s.nodes.size(), 4u) << s.describe();
    for (const Node* n : s.nodes) {
      EXPECT_NE(n->op_type, "Softmax");
      EXPECT_NE(n->op_type, "LayerNormalization");
    }
  }
  EXPECT_TRUE(find(subs, {"o_mm", "o_bias", "residual"}));
  EXPECT_TRUE(find(subs, {"context", "ctx_t", "ctx_merge", "o_mm"}));
  // Q/K/V products of x: one group.
  const Subprogram* grp = find(subs, {"q_mm", "k_mm", "v_mm"});
  ASSERT_TRUE(grp);
  EXPECT_EQ(grp->kind, Subprogram::Kind::Group);
  EXPECT_EQ(grp->graph->outputs().size(), 3u);
}

TEST(PetSubprogram, DilatedChainSplitsAtRelu) {
  ModelBuilder m;
  Value* x = m.input("x", {1, 4, 12, 12});
  Value* a = m.conv(x, 4, 3, 3, {2, 2, 2, 2}, "d1", 1, 2);
  Value* b = m.relu(m.conv(a, 4, 3, 3, {2, 2, 2, 2}, "d2", 1, 2), "r");
  m.g->add_output(m.conv(b, 4, 3, 3, {2, 2, 2, 2}, "d3", 1, 2));
  auto subs = find_subprograms(*m.g);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(names(subs[0]), (std::set<std::string>{"d1", "d2"}));
  EXPECT_EQ(names(subs[1]), (std::set<std::string>{"d3"}));
  EXPECT_EQ(subs[0].num_activations, 1u);
  EXPECT_EQ(subs[0].weights.size(), 4u);
}

// a = conv(x); add(a, relu(a)): the region {conv, add} is left through the
// ReLU and re-entered, so only its convex subset {conv} is offered.
TEST(PetSubprogram, NonConvexRegionOffersConvexSubsets) {
  ModelBuilder m;
  Value* x = m.input("x", {1, 4, 5, 5});
  Value* a = m.conv(x, 4, 3, 3, {1, 1, 1, 1}, "a");
  m.g->add_output(m.op("Add", {a, m.relu(a, "r")}, "sum"));
  auto subs = find_subprograms(*m.g);
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(names(subs[0]), (std::set<std::string>{"a"}));
  EXPECT_EQ(subs[0].kind, Subprogram::Kind::Subset);
}

TEST(PetSubprogram, NotMultilinearNodeIsNamed) {
  auto g = resnet_block();
  Node* relu = nullptr;
  for (const auto& n : g->nodes())
    if (n->op_type == "Relu" && !relu) relu = n.get();
  try {
    make_subprogram(*g, {relu});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Relu node 'relu1'"), std::string::npos) << e.what();
  }
}

// Splicing the subprogram's own graph back gives the same outputs; a
// rewritten but equal program (the residual Add's operands swapped) too; the
// old output keeps its name and the new nodes are marked.
TEST(PetSubprogram, SpliceRoundTrip) {
  auto ref = resnet_block();
  const auto ins = random_inputs(*ref, 5);
  const auto want = interpret(*ref, ins);
  {
    auto g = resnet_block();
    auto subs = find_subprograms(*g);
    const Subprogram s = subs[1];
    auto added = splice(*g, s, *s.graph->clone());
    EXPECT_EQ(added.size(), 2u);
    for (Node* n : added) EXPECT_EQ(n->name.rfind(kPetNodePrefix, 0), 0u) << n->name;
    EXPECT_TRUE(g->find_value("add"));
    EXPECT_EQ(g->nodes().size(), 5u);
    expect_same_outputs(*g, *ref, ins, 0);
  }
  {
    auto g = resnet_block();
    auto subs = find_subprograms(*g);
    const Subprogram s = subs[1];
    auto rep = s.graph->clone();
    for (const auto& n : rep->nodes())
      if (n->op_type == "Add") std::swap(n->inputs[0], n->inputs[1]);
    for (auto& v : rep->values()) v->uses.clear();
    for (const auto& n : rep->nodes())
      for (size_t i = 0; i < n->inputs.size(); ++i) n->inputs[i]->uses.push_back({n.get(), static_cast<int>(i)});
    splice(*g, s, *rep);
    expect_same_outputs(*g, *ref, ins, 1e-6);
  }
  {
    // The subprogram's output is the model's output: the name survives.
    ModelBuilder m;
    Value* x = m.input("x", {1, 4, 5, 5});
    m.g->add_output(m.conv(m.relu(x, "r"), 4, 3, 3, {1, 1, 1, 1}, "last"));
    auto copy = m.g->clone();
    auto subs = find_subprograms(*m.g);
    splice(*m.g, subs[0], *subs[0].graph->clone());
    EXPECT_EQ(m.g->outputs()[0]->name, "last");
    auto in2 = random_inputs(*copy, 9);
    expect_same_outputs(*m.g, *copy, in2, 0);
  }
}

TEST(PetSubprogram, SpliceRejectsAnotherSignature) {
  auto g = resnet_block();
  auto subs = find_subprograms(*g);
  try {
    splice(*g, subs[1], *subs[0].graph);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PET splice"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::pet
