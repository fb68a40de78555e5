// FlexAttention (ai.onnx.preview) with hand-built score_mod / prob_mod graphs.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
const float kLn3 = std::log(3.0f);
using GraphPtr = std::shared_ptr<Graph>;

// A graph (Q, K, V [, extra inputs]) -> FlexAttention(Q, K, V) in the preview domain.
std::vector<Tensor> run_flex(const Tensor& q, const Tensor& k, const Tensor& v, AttrMap attrs = {},
                             std::vector<std::pair<std::string, Tensor>> extra = {}) {
  Graph g;
  g.opset = 26;
  g.extra_opsets["ai.onnx.preview"] = 1;
  std::vector<Tensor> feed = {q, k, v};
  Value* qi = g.add_input("Q", {q.dtype(), q.dims(), true});
  Value* ki = g.add_input("K", {k.dtype(), k.dims(), true});
  Value* vi = g.add_input("V", {v.dtype(), v.dims(), true});
  for (auto& [name, t] : extra) {
    g.add_input(name, {t.dtype(), t.dims(), true});
    feed.push_back(t);
  }
  Node* n = g.add_node("FlexAttention", {qi, ki, vi}, {"Y"}, std::move(attrs), "flex");
  n->domain = "ai.onnx.preview";
  g.add_output(n->outputs[0]);
  infer_graph(g);
  return interpret(g, feed);
}

// A hook graph x -> op(x, other) where `other` is a constant or, when
// capture_name is set, a value of the enclosing graph.
GraphPtr hook(const char* op, const Tensor& other, const std::string& capture_name = "") {
  auto b = std::make_shared<Graph>();
  Value* x = b->add_input("x", {DType::F32, {-1, -1, -1, -1}, true});
  Value* o;
  if (capture_name.empty()) {
    o = b->add_constant("c", other);
  } else {
    o = b->add_value(capture_name);
    o->type.rank_known = false;
    b->captures.push_back(o);
  }
  Value* y = b->add_node(op, {x, o}, {"y"})->outputs[0];
  y->type.rank_known = false;
  b->add_output(y);
  return b;
}

// Q [1,1,1,1] = 1, K scores (0, ln 3) with scale 1 -> probabilities (1/4, 3/4); V = (4, 8).
Tensor q1() { return f32({1, 1, 1, 1}, {1}); }
Tensor k2() { return f32({1, 1, 2, 1}, {0, kLn3}); }
Tensor v2() { return f32({1, 1, 2, 1}, {4, 8}); }
Attribute one() { return Attribute::of_float(1); }
}  // namespace

TEST(FlexAttention, SoftmaxWeightedValues) {
  auto y = run_flex(q1(), k2(), v2(), {{"scale", one()}});
  expect_near(y[0], f32({1, 1, 1, 1}, {7}));
}

TEST(FlexAttention, DefaultScaleIsInverseSqrtHeadSize) {
  // Head size 4: q.k1 = 4, scaled 2 vs 0 -> p1 = e^2 / (1 + e^2); V = (0, 1).
  auto y = run_flex(f32({1, 1, 1, 4}, {1, 1, 1, 1}), f32({1, 1, 2, 4}, {0, 0, 0, 0, 1, 1, 1, 1}),
                    f32({1, 1, 2, 1}, {0, 1}));
  expect_near(y[0], f32({1, 1, 1, 1}, {static_cast<float>(std::exp(2.0) / (1 + std::exp(2.0)))}));
}

TEST(FlexAttention, GroupedQueryHeadsShareKV) {
  // Two query heads on one KV head; head 1 has q = 0 -> equal weights -> 6.
  auto y = run_flex(f32({1, 2, 1, 1}, {1, 0}), k2(), v2(), {{"scale", one()}});
  expect_near(y[0], f32({1, 2, 1, 1}, {7, 6}));
}

TEST(FlexAttention, ValueHeadSizeMayDiffer) {
  auto y = run_flex(q1(), k2(), f32({1, 1, 2, 2}, {4, 0, 8, 4}), {{"scale", one()}});
  expect_near(y[0], f32({1, 1, 1, 2}, {7, 3}));
}

TEST(FlexAttention, ScoreModAddsBias) {
  // q = 0 gives zero scores; the hook adds (0, ln 3).
  auto y = run_flex(f32({1, 1, 1, 1}, {0}), k2(), v2(),
                    {{"score_mod", Attribute::of_graph(hook("Add", f32({2}, {0, kLn3})))}});
  expect_near(y[0], f32({1, 1, 1, 1}, {7}));
  // A -inf bias masks the second key.
  auto m = run_flex(q1(), k2(), v2(),
                    {{"scale", one()}, {"score_mod", Attribute::of_graph(hook("Add", f32({2}, {0, -INFINITY})))}});
  expect_near(m[0], f32({1, 1, 1, 1}, {4}));
}

TEST(FlexAttention, HooksReadTheEnclosingScope) {
  auto y = run_flex(f32({1, 1, 1, 1}, {0}), k2(), v2(),
                    {{"score_mod", Attribute::of_graph(hook("Add", Tensor(), "bias"))}},
                    {{"bias", f32({2}, {0, kLn3})}});
  expect_near(y[0], f32({1, 1, 1, 1}, {7}));
}

TEST(FlexAttention, ProbModScalesProbabilities) {
  auto y = run_flex(q1(), k2(), v2(),
                    {{"scale", one()}, {"prob_mod", Attribute::of_graph(hook("Mul", f32({}, {2})))}});
  expect_near(y[0], f32({1, 1, 1, 1}, {14}));
}

TEST(FlexAttention, DoubleAndHalf) {
  auto d = run_flex(Tensor::from<double>({1, 1, 1, 1}, {1}), Tensor::from<double>({1, 1, 2, 1}, {0, std::log(3.0)}),
                    Tensor::from<double>({1, 1, 2, 1}, {4, 8}), {{"scale", one()}});
  EXPECT_NEAR(d[0].data<double>()[0], 7.0, 1e-12);
  auto h = run_flex(Tensor::from<Half>({1, 1, 1, 1}, {Half(0.0f)}),
                    Tensor::from<Half>({1, 1, 2, 1}, {Half(1.0f), Half(2.0f)}),
                    Tensor::from<Half>({1, 1, 2, 1}, {Half(2.0f), Half(4.0f)}));
  ASSERT_EQ(h[0].dtype(), DType::F16);
  EXPECT_EQ(static_cast<float>(h[0].data<Half>()[0]), 3.0f);
}

TEST(FlexAttention, Errors) {
  EXPECT_THROW(run_flex(f32({1, 1, 1}, {1}), f32({1, 2, 1}, {0, 0}), f32({1, 2, 1}, {0, 0})), tessera::Error);
  // Three query heads over two KV heads.
  EXPECT_THROW(run_flex(f32({1, 3, 1, 1}, {0, 0, 0}), f32({1, 2, 1, 1}, {0, 0}), f32({1, 2, 1, 1}, {0, 0})),
               tessera::Error);
  // Q and K head sizes differ.
  EXPECT_THROW(run_flex(f32({1, 1, 1, 2}, {0, 0}), k2(), v2()), tessera::Error);
  // A hook must take exactly one input.
  auto bad = std::make_shared<Graph>();
  Value* a = bad->add_input("a", {DType::F32, {}, false});
  bad->add_input("b", {DType::F32, {}, false});
  bad->add_output(a);
  EXPECT_THROW(run_flex(q1(), k2(), v2(), {{"score_mod", Attribute::of_graph(bad)}}), tessera::Error);
}

}  // namespace tessera::testing
