// LinearAttention recurrences on scalar-sized heads, worked by hand.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute S(const char* s) { return Attribute::of_string(s); }

// One head, dk = dv = 1, T = 2: q = (1, 2), k = (1, 1), v = (3, 4).
std::vector<Tensor> run_rule(const char* rule, Tensor past = Tensor(), Tensor decay = Tensor(), Tensor beta = Tensor(),
                             AttrMap extra = {}) {
  AttrMap attrs = {{"q_num_heads", I(1)}, {"kv_num_heads", I(1)}};
  if (rule) attrs["update_rule"] = S(rule);
  for (auto& [k, v] : extra) attrs[k] = v;
  return run_op({.op = "LinearAttention",
                 .inputs = {f32({1, 2, 1}, {1, 2}), f32({1, 2, 1}, {1, 1}), f32({1, 2, 1}, {3, 4}), past, decay, beta},
                 .attrs = attrs,
                 .num_outputs = 2,
                 .opset = 27});
}
const float kLnHalf = std::log(0.5f);
}  // namespace

TEST(LinearAttention, LinearRule) {
  // S = 3 -> o = 1*3; S = 7 -> o = 2*7.
  auto y = run_rule("linear");
  expect_near(y[0], f32({1, 2, 1}, {3, 14}));
  expect_near(y[1], f32({1, 1, 1, 1}, {7}));
  // With a past state of 10 and scale 0.5: S = 13, 17.
  auto p = run_rule("linear", f32({1, 1, 1, 1}, {10}), Tensor(), Tensor(), {{"scale", Attribute::of_float(0.5f)}});
  expect_near(p[0], f32({1, 2, 1}, {6.5f, 17}));
  expect_near(p[1], f32({1, 1, 1, 1}, {17}));
}

TEST(LinearAttention, GatedRule) {
  // S = 3; S = 0.5*3 + 4 = 5.5 -> o = 11.
  auto y = run_rule("gated", Tensor(), f32({1, 2, 1}, {0, kLnHalf}));
  expect_near(y[0], f32({1, 2, 1}, {3, 11}));
  expect_near(y[1], f32({1, 1, 1, 1}, {5.5f}));
}

TEST(LinearAttention, DeltaRule) {
  // S = 0.5*(3 - 0) = 1.5; S = 1.5 + 1*(4 - 1.5) = 4 -> o = 8.
  auto y = run_rule("delta", Tensor(), Tensor(), f32({1, 2, 1}, {0.5f, 1}));
  expect_near(y[0], f32({1, 2, 1}, {1.5f, 8}));
  expect_near(y[1], f32({1, 1, 1, 1}, {4}));
}

TEST(LinearAttention, GatedDeltaIsTheDefault) {
  // S = 1.5; decayed 0.75, S = 0.75 + 0.5*(4 - 0.75) = 2.375 -> o = 4.75.
  auto y = run_rule(nullptr, Tensor(), f32({1, 2, 1}, {0, kLnHalf}), f32({1, 2, 1}, {0.5f, 0.5f}));
  expect_near(y[0], f32({1, 2, 1}, {1.5f, 4.75f}));
  expect_near(y[1], f32({1, 1, 1, 1}, {2.375f}));
}

TEST(LinearAttention, GroupedQueryHeadsShareTheState) {
  // Hq = 2, Hkv = 1, dk = 2, dv = 1: S = k v^T = [3, 6]; head 0 q = (1, 1) -> 9, head 1 q = (1, 0) -> 3.
  auto y = run_op({.op = "LinearAttention",
                   .inputs = {f32({1, 1, 4}, {1, 1, 1, 0}), f32({1, 1, 2}, {1, 2}), f32({1, 1, 1}, {3})},
                   .attrs = {{"q_num_heads", I(2)}, {"kv_num_heads", I(1)}, {"update_rule", S("linear")},
                             {"scale", Attribute::of_float(1)}},
                   .num_outputs = 2,
                   .opset = 27});
  expect_near(y[0], f32({1, 1, 2}, {9, 3}));
  expect_near(y[1], f32({1, 1, 2, 1}, {3, 6}));
  // Default scale is 1/sqrt(dk) = 1/sqrt(2).
  auto d = run_op({.op = "LinearAttention",
                   .inputs = {f32({1, 1, 2}, {1, 1}), f32({1, 1, 2}, {1, 1}), f32({1, 1, 1}, {1})},
                   .attrs = {{"q_num_heads", I(1)}, {"kv_num_heads", I(1)}, {"update_rule", S("linear")}},
                   .num_outputs = 2,
                   .opset = 27});
  expect_near(d[0], f32({1, 1, 1}, {std::sqrt(2.0f)}));
}

TEST(LinearAttention, PerKeyRowDecay) {
  // dk = 2: decay (ln 0.5, 0) scales state rows 0.5 and 1; k = 0 adds nothing: S = [0.5, 1] -> o = 1.5.
  auto y = run_op({.op = "LinearAttention",
                   .inputs = {f32({1, 1, 2}, {1, 1}), f32({1, 1, 2}, {0, 0}), f32({1, 1, 1}, {0}),
                              f32({1, 1, 2, 1}, {1, 1}), f32({1, 1, 2}, {kLnHalf, 0})},
                   .attrs = {{"q_num_heads", I(1)}, {"kv_num_heads", I(1)}, {"update_rule", S("gated")},
                             {"scale", Attribute::of_float(1)}},
                   .num_outputs = 2,
                   .opset = 27});
  expect_near(y[0], f32({1, 1, 1}, {1.5f}));
  expect_near(y[1], f32({1, 1, 2, 1}, {0.5f, 1}));
}

TEST(LinearAttention, InferencePropagatesUnknownDims) {
  Graph g;
  g.opset = 27;
  Value* q = g.add_input("q", {DType::F32, {-1, -1, 64}, true});
  Value* k = g.add_input("k", {DType::F32, {-1, -1, 32}, true});
  Value* v = g.add_input("v", {DType::F32, {-1, -1, 16}, true});
  Node* n = g.add_node("LinearAttention", {q, k, v}, {"o", "s"},
                       {{"q_num_heads", I(8)}, {"kv_num_heads", I(4)}, {"update_rule", S("linear")}}, "la");
  infer_graph(g);
  EXPECT_EQ(n->outputs[0]->type.to_string(), "f32[?x?x32]");
  EXPECT_EQ(n->outputs[1]->type.to_string(), "f32[?x4x8x4]");
}

TEST(LinearAttention, Errors) {
  EXPECT_THROW(run_rule("gated"), tessera::Error);          // no decay
  EXPECT_THROW(run_rule("delta"), tessera::Error);          // no beta
  EXPECT_THROW(run_rule("softmax"), tessera::Error);        // unknown rule
  EXPECT_THROW(run_op({.op = "LinearAttention",
                       .inputs = {f32({1, 1, 3}, {1, 1, 1}), f32({1, 1, 2}, {1, 1}), f32({1, 1, 2}, {1, 1})},
                       .attrs = {{"q_num_heads", I(3)}, {"kv_num_heads", I(2)}, {"update_rule", S("linear")}},
                       .opset = 27}),
               tessera::Error);  // 3 query heads over 2 KV heads
  EXPECT_THROW(run_op({.op = "LinearAttention",
                       .inputs = {f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1})},
                       .attrs = {{"update_rule", S("linear")}},
                       .opset = 27}),
               tessera::Error);  // head counts are required
}

}  // namespace tessera::testing
