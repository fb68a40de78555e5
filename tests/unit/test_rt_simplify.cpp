// PET's R/T post-optimizations (opt/rt_simplify.cpp, forms in opt/rt_form.h):
// each rule fires where it applies and the rewritten graph gives the
// reference interpreter's outputs of the original bit for bit (the rewrites
// only move elements); look-alikes that cannot be rewritten exactly stay.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "opt/rt_form.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using tessera::testing::random_f32;

Value* ints(Graph& g, std::vector<int64_t> v) {
  Tensor t(DType::I64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return g.add_constant(g.unique_name("shape"), std::move(t));
}

Value* reshape(Graph& g, Value* x, const Dims& dims) {
  return g.add_node("Reshape", {x, ints(g, dims)}, {g.unique_name("r")}, {}, g.unique_name("reshape"))->outputs[0];
}

Value* transpose(Graph& g, Value* x, const std::vector<int64_t>& perm) {
  return g.add_node("Transpose", {x}, {g.unique_name("t")}, {{"perm", Attribute::of_ints(perm)}},
                    g.unique_name("transpose"))->outputs[0];
}

Value* unary(Graph& g, const std::string& op, Value* x, std::vector<Value*> more = {}) {
  more.insert(more.begin(), x);
  return g.add_node(op, more, {g.unique_name(op)}, {}, g.unique_name(op))->outputs[0];
}

// D2H's space to batch, [n,c,h,w] -> [4n,c,h/2,w/2] (bench/pet_handmade.py writes the same ops).
Value* s2b(Graph& g, Value* x, int64_t n, int64_t c, int64_t h, int64_t w) {
  return reshape(g, transpose(g, reshape(g, x, {n, c, h / 2, 2, w / 2, 2}), {3, 5, 0, 1, 2, 4}), {4 * n, c, h / 2, w / 2});
}

// Its inverse, [4n,c,h/2,w/2] -> [n,c,h,w].
Value* b2s(Graph& g, Value* x, int64_t n, int64_t c, int64_t h, int64_t w) {
  return reshape(g, transpose(g, reshape(g, x, {2, 2, n, c, h / 2, w / 2}), {2, 3, 4, 0, 5, 1}), {n, c, h, w});
}

Value* conv3x3(Graph& g, Value* x, int64_t cin, int64_t cout, uint32_t seed) {
  Value* w = g.add_constant(g.unique_name("w"), random_f32({cout, cin, 3, 3}, seed));
  AttrMap a{{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"kernel_shape", Attribute::of_ints({3, 3})}};
  return g.add_node("Conv", {x, w}, {g.unique_name("conv")}, a, g.unique_name("conv"))->outputs[0];
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

// Runs the pass on a clone of `g`; checks the rules it applied (when given),
// that the graph verifies, keeps its output names and gives the same outputs
// bit for bit. Returns the rewritten graph.
std::unique_ptr<Graph> expect_exact(const Graph& g, const std::map<std::string, int>* want_applied = nullptr) {
  std::unique_ptr<Graph> s = g.clone();
  std::map<std::string, int> applied;
  simplify_rt(*s, &applied);
  if (want_applied) {
    EXPECT_EQ(applied, *want_applied) << print_graph(*s);
  }
  EXPECT_NO_THROW(verify_graph(*s)) << print_graph(*s);
  std::vector<Tensor> ins;
  uint32_t seed = 11;
  for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, seed++));
  std::vector<Tensor> want = interpret(g, ins), got = interpret(*s, ins);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(s->outputs()[i]->name, g.outputs()[i]->name);
    EXPECT_EQ(got[i].dims(), want[i].dims()) << "output " << i;
    if (got[i].dims() != want[i].dims()) continue;
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), want[i].nbytes()), 0) << "output " << i << "\n" << print_graph(*s);
  }
  return s;
}

std::unique_ptr<Graph> expect_exact(const Graph& g, const std::map<std::string, int>& want_applied) {
  return expect_exact(g, &want_applied);
}

TEST(RtForm, SpaceToBatchAndItsInverseComposeToTheIdentity) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {2, 3, 8, 6}, true});
  g.add_output(b2s(g, s2b(g, x, 2, 3, 8, 6), 2, 3, 8, 6));
  infer_graph(g);
  std::optional<rt::Form> f;
  for (const auto& n : g.nodes()) {
    std::optional<rt::Form> one = rt::form_of(*n);
    ASSERT_TRUE(one) << n->describe();
    f = f ? rt::compose(*f, *one) : one;
    ASSERT_TRUE(f) << n->describe();
  }
  EXPECT_TRUE(f->is_identity());
  // Half of the chain is one Reshape-Transpose-Reshape that needs all three ops.
  std::optional<rt::Form> half;
  for (size_t i = 0; i < 3; ++i) half = half ? rt::compose(*half, *rt::form_of(*g.nodes()[i])) : rt::form_of(*g.nodes()[i]);
  EXPECT_EQ(half->op_count(), 3);
  EXPECT_EQ(rt::compose(*half, rt::inverse(*half))->op_count(), 0);
}

TEST(RtSimplify, InversePairVanishes) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 4, 6, 8}, true});
  g.add_output(unary(g, "Relu", b2s(g, s2b(g, x, 1, 4, 6, 8), 1, 4, 6, 8)));
  infer_graph(g);
  auto s = expect_exact(g, {{"merge_rt", 1}});
  EXPECT_EQ(count_op(*s, "Reshape") + count_op(*s, "Transpose"), 0) << print_graph(*s);
}

TEST(RtSimplify, ConsecutiveTransposesBecomeOne) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {2, 3, 4, 5}, true});
  g.add_output(transpose(g, transpose(g, x, {0, 2, 3, 1}), {3, 1, 0, 2}));
  infer_graph(g);
  auto s = expect_exact(g, {{"merge_rt", 1}});
  EXPECT_EQ(count_op(*s, "Transpose"), 1);
  EXPECT_EQ(count_op(*s, "Reshape"), 0);
}

TEST(RtSimplify, ReshapeChainBecomesOneReshape) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {2, 3, 4}, true});
  g.add_output(unary(g, "Neg", reshape(g, reshape(g, reshape(g, x, {6, 4}), {24}), {4, 6})));
  infer_graph(g);
  auto s = expect_exact(g, {{"merge_rt", 1}, {"move_rt", 1}});
  EXPECT_EQ(count_op(*s, "Reshape"), 1);
  EXPECT_EQ(s->outputs()[0]->producer->op_type, "Reshape");  // moved after the Neg
}

// An inverse pair that ends at a graph output keeps one (no-op) node, so the output keeps its name.
TEST(RtSimplify, IdentityChainAtAnOutputKeepsOneNode) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {3, 4}, true});
  Value* r = unary(g, "Relu", x);
  g.add_output(transpose(g, transpose(g, r, {1, 0}), {1, 0}));
  infer_graph(g);
  auto s = expect_exact(g, {{"merge_rt", 1}});
  EXPECT_EQ(count_op(*s, "Transpose") + count_op(*s, "Reshape"), 1);
}

// [2,3] -> [3,2] (a real transpose) read as [2,3] again: no single R/T expresses the pair.
TEST(RtSimplify, ChainsWithoutACommonFactorizationStay) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {2, 3}, true});
  g.add_output(reshape(g, transpose(g, x, {1, 0}), {2, 3}));
  infer_graph(g);
  auto s = expect_exact(g, {});
  EXPECT_EQ(count_op(*s, "Transpose"), 1);
}

// A value read by something else besides the next R/T is not merged through.
TEST(RtSimplify, SharedIntermediatesStay) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {4, 6}, true});
  Value* t = transpose(g, x, {1, 0});
  g.add_output(transpose(g, t, {1, 0}));
  g.add_output(unary(g, "Exp", t));
  infer_graph(g);
  auto s = expect_exact(g, {});
  EXPECT_EQ(count_op(*s, "Transpose"), 2);
}

TEST(RtSimplify, MovesAcrossUnaryOpsAndClipWithScalarBounds) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {2, 6, 4}, true});
  Value* lo = g.add_constant("lo", Tensor::scalar<float>(-0.5f));
  Value* hi = g.add_constant("hi", Tensor::scalar<float>(1.0f));
  Value* t = transpose(g, x, {2, 0, 1});
  g.add_output(unary(g, "Clip", unary(g, "Sigmoid", t), {lo, hi}));
  infer_graph(g);
  auto s = expect_exact(g, {{"move_rt", 2}});
  EXPECT_EQ(s->outputs()[0]->producer->op_type, "Transpose");
  EXPECT_EQ(s->nodes()[0]->op_type, "Sigmoid");
}

// A per-channel bias added in the batch form of D2H is per channel in the
// original form too: the Add moves before the R/T, then the pair vanishes.
TEST(RtSimplify, PerChannelBiasMovesAndThePairVanishes) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 4, 6, 6}, true});
  Value* bias = g.add_constant("bias", random_f32({4, 1, 1}, 5));
  Value* a = g.add_node("Add", {s2b(g, x, 1, 4, 6, 6), bias}, {"a"}, {}, "add")->outputs[0];
  g.add_output(unary(g, "Relu", b2s(g, a, 1, 4, 6, 6)));
  infer_graph(g);
  auto s = expect_exact(g, {{"move_rt", 1}, {"merge_rt", 1}});
  ASSERT_EQ(s->nodes().size(), 2u) << print_graph(*s);
  EXPECT_EQ(s->nodes()[0]->op_type, "Add");
  EXPECT_EQ(s->nodes()[0]->inputs[1]->type.dims, (Dims{1, 4, 1, 1}));
}

// A constant that varies by phase of D2H's batch would be a full map in the
// original form: larger than it is, so the Add stays where it is.
TEST(RtSimplify, ConstantsThatWouldGrowStay) {
  Graph g;
  Value* x = g.add_input("x", {DType::F32, {1, 4, 6, 6}, true});
  Value* per_phase = g.add_constant("per_phase", random_f32({4, 1, 1, 1}, 6));
  Value* m = g.add_node("Mul", {per_phase, s2b(g, x, 1, 4, 6, 6)}, {"m"}, {}, "mul")->outputs[0];
  g.add_output(b2s(g, m, 1, 4, 6, 6));
  infer_graph(g);
  auto s = expect_exact(g, {});
  EXPECT_EQ(count_op(*s, "Transpose"), 2);
}

// The CSRNet back end after D2H on every conv (R/T, conv, relu, inverse R/T,
// R/T, conv, relu, inverse R/T), and with the inverse before the Relu as
// bench/pet_handmade.py's per-conv mode writes it: one R/T at each end.
TEST(RtSimplify, CsrnetLikeChainKeepsOneRtAtEachEnd) {
  for (bool relu_after_inverse : {false, true}) {
    SCOPED_TRACE(relu_after_inverse ? "conv, inverse, relu" : "conv, relu, inverse");
    Graph g;
    Value* x = g.add_input("x", {DType::F32, {1, 3, 8, 10}, true});
    Value* v = x;
    int64_t c = 3;
    for (int64_t k : {5, 4}) {
      Value* y = conv3x3(g, s2b(g, v, 1, c, 8, 10), c, k, static_cast<uint32_t>(k));
      v = relu_after_inverse ? unary(g, "Relu", b2s(g, y, 1, k, 8, 10)) : b2s(g, unary(g, "Relu", y), 1, k, 8, 10);
      c = k;
    }
    g.add_output(v);
    infer_graph(g);
    auto s = expect_exact(g);
    EXPECT_EQ(count_op(*s, "Transpose"), 2) << print_graph(*s);
    EXPECT_EQ(count_op(*s, "Reshape"), 4) << print_graph(*s);
    EXPECT_EQ(count_op(*s, "Conv"), 2);
    // the convs stay in the batch form: batch 4
    for (const auto& n : s->nodes()) {
      if (n->op_type == "Conv") {
        EXPECT_EQ(n->inputs[0]->type.dims[0], 4);
      }
    }
  }
}

// Random chains of reshapes and transposes: the rewritten chain never has
// more ops and moves every element where the original did.
TEST(RtSimplify, RandomChainsStayExact) {
  std::mt19937 rng(7);
  const std::vector<int64_t> primes = {2, 2, 3, 2, 5};  // 120 elements, factored at random
  auto random_dims = [&] {
    std::vector<int64_t> f = primes;
    std::shuffle(f.begin(), f.end(), rng);
    Dims d;
    for (int64_t p : f) {
      if (!d.empty() && rng() % 2) d.back() *= p;
      else d.push_back(p);
    }
    if (rng() % 3 == 0) d.insert(d.begin() + static_cast<std::ptrdiff_t>(rng() % (d.size() + 1)), 1);
    return d;
  };
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Graph g;
    Value* v = g.add_input("x", {DType::F32, random_dims(), true});
    infer_graph(g);
    const int ops = 2 + static_cast<int>(rng() % 4);
    for (int i = 0; i < ops; ++i) {
      if (rng() % 2) {
        v = reshape(g, v, random_dims());
      } else {
        std::vector<int64_t> perm(v->type.dims.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        v = transpose(g, v, perm);
      }
      infer_graph(g);
    }
    g.add_output(unary(g, "Relu", v));
    infer_graph(g);
    auto s = expect_exact(g);
    EXPECT_LE(count_op(*s, "Reshape") + count_op(*s, "Transpose"), ops);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace tessera
