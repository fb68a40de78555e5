// The graph simplifications (opt/simplify_graph.cpp): each rule fires where
// it applies, and the simplified graph gives the interpreter's outputs of
// the original one, bit for bit or within rounding; look-alikes that would
// change the result are left alone.
#include <gtest/gtest.h>

#include <cmath>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::random_f32;

Value* ints(Graph& g, const std::string& name, std::vector<int64_t> v) {
  Tensor t(DType::I64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return g.add_constant(name, std::move(t));
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

// Simplifies a clone of `g` and checks the rules applied and the outputs
// against the interpreter on the original graph.
void expect_simplified(const Graph& g, const std::map<std::string, int>& want_applied) {
  std::unique_ptr<Graph> s = g.clone();
  std::map<std::string, int> applied;
  simplify_graph(*s, &applied);
  EXPECT_EQ(applied, want_applied) << print_graph(*s);
  std::vector<Tensor> ins;
  uint32_t seed = 3;
  for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, seed++));
  std::vector<Tensor> want = interpret(g, ins), got = interpret(*s, ins);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims()) << "output " << i;
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      if (std::isnan(want[i].get_double(k))) {  // a negative base to a fractional power
        ASSERT_TRUE(std::isnan(got[i].get_double(k))) << "output " << i << " element " << k;
        continue;
      }
      ASSERT_NEAR(got[i].get_double(k), want[i].get_double(k), 1e-6 * (1 + std::fabs(want[i].get_double(k))))
          << "output " << i << " element " << k;
    }
  }
}

TEST(Simplify, PowOfTwoBecomesAMultiply) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {3, 7}, true});
  Value* y = g.add_node("Pow", {x, g.add_constant("two", Tensor::scalar<float>(2.0f))}, {"y"}, {}, "pow")->outputs[0];
  g.add_output(y);
  infer_graph(g);
  expect_simplified(g, {{"pow_square", 1}});
  std::unique_ptr<Graph> s = g.clone();
  simplify_graph(*s);
  EXPECT_EQ(count_op(*s, "Pow"), 0);
  EXPECT_EQ(s->outputs()[0]->name, "y");
}

TEST(Simplify, OtherPowersStayPow) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {3, 7}, true});
  Value* a = g.add_node("Pow", {x, g.add_constant("three", Tensor::scalar<float>(3.0f))}, {"a"}, {}, "cube")->outputs[0];
  Value* e = g.add_input("e", {DType::F32, {}, true});  // not a constant
  g.add_output(g.add_node("Pow", {a, e}, {"y"}, {}, "pow_input")->outputs[0]);
  infer_graph(g);
  expect_simplified(g, {});
}

TEST(Simplify, TransposeOfUnitAxesBecomesReshape) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {6, 1, 8}, true});
  AttrMap a;
  a["perm"] = Attribute::of_ints({1, 0, 2});  // [6,1,8] -> [1,6,8]: no element moves
  Value* t = g.add_node("Transpose", {x}, {"t"}, a, "t")->outputs[0];
  g.add_output(g.add_node("Relu", {t}, {"y"}, {}, "relu")->outputs[0]);
  infer_graph(g);
  expect_simplified(g, {{"unit_transpose", 1}});
}

TEST(Simplify, TransposeMovingLongAxesStays) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {6, 1, 8}, true});
  AttrMap a;
  a["perm"] = Attribute::of_ints({2, 1, 0});  // 6 and 8 swap
  g.add_output(g.add_node("Transpose", {x}, {"y"}, a, "t")->outputs[0]);
  infer_graph(g);
  expect_simplified(g, {});
}

// Attention's packed projection cut into Q, K, V by three Slices (one with
// a negative start, one with an end past the dimension, as exporters write
// them) becomes one Split; every piece keeps its name.
TEST(Simplify, SlicesTilingAnAxisBecomeOneSplit) {
  Graph g;
  g.opset = 13;
  Value* x = g.add_input("x", {DType::F32, {4, 1, 12}, true});
  Value* p = g.add_node("Relu", {x}, {"p"}, {}, "proj")->outputs[0];
  auto slice = [&](const std::string& name, int64_t s, int64_t e) {
    return g.add_node("Slice", {p, ints(g, name + "_s", {s}), ints(g, name + "_e", {e}), ints(g, name + "_a", {-1})},
                      {name}, {}, name)->outputs[0];
  };
  Value* k = slice("k", 4, 8);
  Value* q = slice("q", 0, 4);
  Value* v = slice("v", -4, 1000);
  g.add_output(g.add_node("Add", {q, k}, {"qk"}, {}, "add")->outputs[0]);
  g.add_output(v);
  infer_graph(g);
  expect_simplified(g, {{"slices_to_split", 1}});
  std::unique_ptr<Graph> s = g.clone();
  simplify_graph(*s);
  EXPECT_EQ(count_op(*s, "Slice"), 0);
  ASSERT_EQ(count_op(*s, "Split"), 1);
  EXPECT_EQ(s->outputs()[1]->name, "v");
  EXPECT_EQ(s->outputs()[1]->producer->op_type, "Split");
}

TEST(Simplify, SlicesWithAGapOrOverlapStay) {
  for (auto [s1, e1] : {std::pair<int64_t, int64_t>{5, 12}, {3, 12}}) {  // gap at 4, overlap at 3
    Graph g;
    g.opset = 13;
    Value* x = g.add_input("x", {DType::F32, {4, 12}, true});
    auto slice = [&](const std::string& name, int64_t s, int64_t e) {
      return g.add_node("Slice", {x, ints(g, name + "_s", {s}), ints(g, name + "_e", {e}), ints(g, name + "_a", {1})},
                        {name}, {}, name)->outputs[0];
    };
    g.add_output(slice("a", 0, 4));
    g.add_output(slice("b", s1, e1));
    infer_graph(g);
    expect_simplified(g, {});
  }
}

}  // namespace
}  // namespace tessera
