// RNN, GRU and LSTM on hand-computed cases (hidden and input size 1 so each
// step is a few scalar operations).
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute acts(std::vector<std::string> names) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(names);
  return a;
}
Attribute I(int64_t v) { return Attribute::of_int(v); }
Tensor i32(Dims d, std::vector<int32_t> v) { return Tensor::from<int32_t>(std::move(d), v); }
}  // namespace

// h_t = relu(x_t + 0.5 h_{t-1}) on x = (1, 2): 1, 2.5.
TEST(RNN, ForwardRelu) {
  auto out = run_op({.op = "RNN",
                     .inputs = {f32({2, 1, 1}, {1, 2}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0.5f})},
                     .attrs = {{"hidden_size", I(1)}, {"activations", acts({"Relu"})}},
                     .num_outputs = 2});
  expect_near(out[0], f32({2, 1, 1, 1}, {1, 2.5}));
  expect_near(out[1], f32({1, 1, 1}, {2.5}));
}

TEST(RNN, BiasReverseAndBidirectional) {
  Tensor x = f32({2, 1, 1}, {1, 2}), w = f32({1, 1, 1}, {1}), r = f32({1, 1, 1}, {0.5f});
  auto out = run_op({.op = "RNN", .inputs = {x, w, r, f32({1, 2}, {1, 0.5f})},
                     .attrs = {{"activations", acts({"Relu"})}}, .num_outputs = 2});
  expect_near(out[0], f32({2, 1, 1, 1}, {2.5, 4.75}));
  out = run_op({.op = "RNN", .inputs = {x, w, r},
                .attrs = {{"activations", acts({"Relu"})}, {"direction", Attribute::of_string("reverse")}},
                .num_outputs = 2});
  expect_near(out[0], f32({2, 1, 1, 1}, {2, 2}));
  out = run_op({.op = "RNN",
                .inputs = {x, f32({2, 1, 1}, {1, 1}), f32({2, 1, 1}, {0.5f, 0.5f})},
                .attrs = {{"activations", acts({"Relu", "Relu"})},
                          {"direction", Attribute::of_string("bidirectional")}},
                .num_outputs = 2});
  expect_near(out[0], f32({2, 2, 1, 1}, {1, 2, 2.5, 2}));
  expect_near(out[1], f32({2, 1, 1}, {2.5, 2}));
}

TEST(RNN, SequenceLensZeroPadAndKeepLastState) {
  auto out = run_op({.op = "RNN",
                     .inputs = {f32({2, 2, 1}, {1, 10, 2, 20}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0.5f}), Tensor(),
                                i32({2}, {2, 1})},
                     .attrs = {{"activations", acts({"Relu"})}},
                     .num_outputs = 2});
  expect_near(out[0], f32({2, 1, 2, 1}, {1, 10, 2.5, 0}));
  expect_near(out[1], f32({1, 2, 1}, {2.5, 10}));
}

TEST(RNN, BatchwiseLayoutAndClip) {
  auto out = run_op({.op = "RNN",
                     .inputs = {f32({1, 2, 1}, {5, 1}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0.5f})},
                     .attrs = {{"activations", acts({"Relu"})}, {"layout", I(1)}, {"clip", Attribute::of_float(1)}},
                     .num_outputs = 2,
                     .opset = 14});
  // clip(5) = 1; clip(1 + 0.5) = 1.
  expect_near(out[0], f32({1, 2, 1, 1}, {1, 1}));
  expect_near(out[1], f32({1, 1, 1}, {1}));
}

TEST(RNN, RejectsBadWeightShape) {
  EXPECT_THROW(run_op({.op = "RNN", .inputs = {f32({1, 1, 1}, {1}), f32({1, 2, 1}, {1, 1}), f32({1, 1, 1}, {1})},
                       .attrs = {{"hidden_size", I(1)}}}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "RNN", .inputs = {f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1})},
                       .attrs = {{"direction", Attribute::of_string("sideways")}}}),
               tessera::Error);
}

// z = r = sigmoid(0) = 0.5 everywhere; candidate uses Relu.
TEST(GRU, UpdateGateMixesStates) {
  auto out = run_op({.op = "GRU",
                     .inputs = {f32({2, 1, 1}, {2, 4}), f32({1, 3, 1}, {0, 0, 1}), f32({1, 3, 1}, {0, 0, 0})},
                     .attrs = {{"hidden_size", I(1)}, {"activations", acts({"Sigmoid", "Relu"})}},
                     .num_outputs = 2});
  expect_near(out[0], f32({2, 1, 1, 1}, {1, 2.5}));
  expect_near(out[1], f32({1, 1, 1}, {2.5}));
}

TEST(GRU, LinearBeforeReset) {
  // h0 = 2, R_h = 1, Rb_h = 1, x = 0: candidate relu(r*h*R_h + Rb_h) = 2 vs relu(r*(R_h*h + Rb_h)) = 1.5.
  auto run = [](int64_t lbr) {
    return run_op({.op = "GRU",
                   .inputs = {f32({1, 1, 1}, {0}), f32({1, 3, 1}, {0, 0, 1}), f32({1, 3, 1}, {0, 0, 1}),
                              f32({1, 6}, {0, 0, 0, 0, 0, 1}), Tensor(), f32({1, 1, 1}, {2})},
                   .attrs = {{"activations", acts({"Sigmoid", "Relu"})}, {"linear_before_reset", I(lbr)}},
                   .num_outputs = 2})[1];
  };
  expect_near(run(0), f32({1, 1, 1}, {2}));
  expect_near(run(1), f32({1, 1, 1}, {1.75}));
}

// Gates i, o, f = sigmoid(0) = 0.5; cell candidate relu(x).
TEST(LSTM, CellAndHiddenStates) {
  auto out = run_op({.op = "LSTM",
                     .inputs = {f32({2, 1, 1}, {2, 4}), f32({1, 4, 1}, {0, 0, 0, 1}), f32({1, 4, 1}, {0, 0, 0, 0})},
                     .attrs = {{"hidden_size", I(1)}, {"activations", acts({"Sigmoid", "Relu", "Relu"})}},
                     .num_outputs = 3});
  expect_near(out[0], f32({2, 1, 1, 1}, {0.5, 1.25}));
  expect_near(out[1], f32({1, 1, 1}, {1.25}));
  expect_near(out[2], f32({1, 1, 1}, {2.5}));
}

TEST(LSTM, PeepholeOpensForgetGate) {
  // HardSigmoid(0) = 0.5, HardSigmoid(Pf * c0 = 5) = 1: c stays 2, h = 0.5 * 2.
  auto run = [](float pf) {
    return run_op({.op = "LSTM",
                   .inputs = {f32({1, 1, 1}, {0}), f32({1, 4, 1}, {0, 0, 0, 1}), f32({1, 4, 1}, {0, 0, 0, 0}),
                              Tensor(), Tensor(), Tensor(), f32({1, 1, 1}, {2}), f32({1, 3}, {0, 0, pf})},
                   .attrs = {{"activations", acts({"HardSigmoid", "Relu", "Relu"})}},
                   .num_outputs = 3});
  };
  auto with = run(2.5f), without = run(0);
  expect_near(with[1], f32({1, 1, 1}, {1}));
  expect_near(with[2], f32({1, 1, 1}, {2}));
  expect_near(without[1], f32({1, 1, 1}, {0.5}));
  expect_near(without[2], f32({1, 1, 1}, {1}));
}

TEST(LSTM, InfersBatchwiseShapes) {
  auto t = infer_op({.op = "LSTM",
                     .inputs = {f32({3, 5, 2}, std::vector<float>(30)), f32({2, 28, 2}, std::vector<float>(112)),
                                f32({2, 28, 7}, std::vector<float>(392))},
                     .attrs = {{"layout", I(1)}, {"direction", Attribute::of_string("bidirectional")}},
                     .num_outputs = 3,
                     .opset = 14});
  EXPECT_EQ(t[0].to_string(), "f32[3x5x2x7]");
  EXPECT_EQ(t[1].to_string(), "f32[3x2x7]");
  EXPECT_EQ(t[2].to_string(), "f32[3x2x7]");
}

}  // namespace tessera::testing
