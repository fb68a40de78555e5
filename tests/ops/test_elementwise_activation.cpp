// Activation functions, PRelu and Clip on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Attribute af(float v) { return Attribute::of_float(v); }
Tensor act(const std::string& op, Tensor x, AttrMap attrs = {}, int64_t opset = 20) {
  return run_op({.op = op, .inputs = {std::move(x)}, .attrs = std::move(attrs), .opset = opset})[0];
}
}  // namespace

TEST(ElementwiseActivation, ReluOnIntegers) {
  expect_near(act("Relu", t<int32_t>({2}, {-3, 4})), t<int32_t>({2}, {0, 4}));
  expect_near(act("Relu", t<int8_t>({2}, {-128, 127})), t<int8_t>({2}, {0, 127}));
  EXPECT_THROW(act("Relu", t<uint8_t>({1}, {1})), Error);
}

TEST(ElementwiseActivation, LeakyReluEluSeluCelu) {
  expect_near(act("LeakyRelu", f32({2}, {-10, 5}), {{"alpha", af(0.1f)}}), f32({2}, {-1, 5}));
  expect_near(act("LeakyRelu", f32({1}, {-1})), f32({1}, {-0.01f}));
  // Elu(alpha=2): 2 * (e^-1 - 1) = 2 * (0.367879441 - 1).
  expect_near(act("Elu", f32({2}, {-1, 1}), {{"alpha", af(2)}}), f32({2}, {-1.264241118f, 1}));
  // Selu: gamma = 1.0507009874, gamma * alpha * (e^-1 - 1) = -1.1113307413.
  expect_near(act("Selu", f32({2}, {1, -1})), f32({2}, {1.0507009874f, -1.1113307413f}));
  expect_near(act("Celu", f32({2}, {-1, 2})), f32({2}, {-0.632120559f, 2}));
  expect_near(act("Celu", f32({1}, {-2}), {{"alpha", af(2)}}), f32({1}, {-1.264241118f}));
  EXPECT_THROW(act("Celu", f32({1}, {1}), {{"alpha", af(0)}}), Error);
}

TEST(ElementwiseActivation, ThresholdedHardSigmoidHardSwish) {
  expect_near(act("ThresholdedRelu", f32({3}, {1, 2, 3}), {{"alpha", af(2)}}), f32({3}, {0, 0, 3}));
  expect_near(act("HardSigmoid", f32({4}, {-3, 0, 1, 3})), f32({4}, {0, 0.5f, 0.7f, 1}));
  expect_near(act("HardSigmoid", f32({1}, {1}), {{"alpha", af(0.5f)}, {"beta", af(0)}}), f32({1}, {0.5f}));
  // x * clamp(x/6 + 1/2, 0, 1).
  expect_near(act("HardSwish", f32({5}, {-4, -1, 0, 1, 4})), f32({5}, {0, -1.0f / 3, 0, 2.0f / 3, 4}));
}

TEST(ElementwiseActivation, SmoothActivations) {
  // Softplus: log(2) = 0.693147181, log(1 + e) = 1.313261687; no overflow at 100.
  expect_near(act("Softplus", f32({3}, {0, 1, 100})), f32({3}, {0.693147181f, 1.313261687f, 100}));
  expect_near(act("Softsign", f32({2}, {1, -3})), f32({2}, {0.5f, -0.75f}));
  // Mish(1) = tanh(1.313261687) = 0.865098388.
  expect_near(act("Mish", f32({2}, {0, 1})), f32({2}, {0, 0.865098388f}));
  // Gelu(1) = (1 + erf(1/sqrt 2)) / 2 = 0.841344746.
  expect_near(act("Gelu", f32({2}, {1, -1})), f32({2}, {0.841344746f, -0.158655254f}));
  expect_near(act("Gelu", f32({2}, {1, -2}), {{"approximate", Attribute::of_string("tanh")}}),
              f32({2}, {0.841191991f, -0.045402306f}));
  EXPECT_THROW(act("Gelu", f32({1}, {1}), {{"approximate", Attribute::of_string("fast")}}), Error);
  EXPECT_THROW(act("Gelu", f32({1}, {1}), {}, 19), Error);  // Gelu is new in opset 20
  // Swish(1) = sigmoid(1) = 0.731058579; alpha scales the sigmoid's argument.
  expect_near(act("Swish", f32({2}, {0, 1}), {}, 24), f32({2}, {0, 0.731058579f}));
  expect_near(act("Swish", f32({1}, {2}), {{"alpha", af(0.5f)}}, 24), f32({1}, {1.462117157f}));
}

TEST(ElementwiseActivation, Shrink) {
  Tensor x = f32({5}, {-2, -1, 0, 1, 2});
  expect_near(act("Shrink", x, {{"lambd", af(1.5f)}}), f32({5}, {-2, 0, 0, 0, 2}));
  expect_near(act("Shrink", x, {{"lambd", af(1.5f)}, {"bias", af(1.5f)}}), f32({5}, {-0.5f, 0, 0, 0, 0.5f}));
  expect_near(act("Shrink", t<int32_t>({3}, {-5, 0, 5}), {{"lambd", af(1)}, {"bias", af(2)}}),
              t<int32_t>({3}, {-3, 0, 3}));
}

TEST(ElementwiseActivation, PReluBroadcastsSlope) {
  auto out = run_op({.op = "PRelu", .inputs = {f32({2, 3}, {-1, 2, -3, 4, -5, 6}), f32({3}, {0.1f, 0.2f, 0.3f})}});
  expect_near(out[0], f32({2, 3}, {-0.1f, 2, -0.9f, 4, -1.0f, 6}));
  auto ints = run_op({.op = "PRelu", .inputs = {t<int32_t>({2}, {-4, 4}), t<int32_t>({1}, {3})}});
  expect_near(ints[0], t<int32_t>({2}, {-12, 4}));
  EXPECT_THROW(run_op({.op = "PRelu", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}}), Error);
  EXPECT_THROW(run_op({.op = "PRelu", .inputs = {f32({3}, {1, 2, 3}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}}), Error);
}

TEST(ElementwiseActivation, ClipWithInputs) {
  Tensor x = f32({4}, {-2, 0, 0.5f, 5});
  auto both = run_op({.op = "Clip", .inputs = {x, f32({}, {-1}), f32({}, {1})}, .opset = 13});
  expect_near(both[0], f32({4}, {-1, 0, 0.5f, 1}));
  auto max_only = run_op({.op = "Clip", .inputs = {x, Tensor(), f32({}, {0.25f})}, .opset = 13});
  expect_near(max_only[0], f32({4}, {-2, 0, 0.25f, 0.25f}));
  auto none = run_op({.op = "Clip", .inputs = {x}, .opset = 13});
  expect_near(none[0], x);
  // min > max: everything becomes max.
  auto inverted = run_op({.op = "Clip", .inputs = {x, f32({}, {2}), f32({}, {1})}, .opset = 13});
  expect_near(inverted[0], f32({4}, {1, 1, 1, 1}));
  auto i8 = run_op({.op = "Clip", .inputs = {t<int8_t>({3}, {-128, 0, 127}), t<int8_t>({}, {-5})}, .opset = 13});
  expect_near(i8[0], t<int8_t>({3}, {-5, 0, 127}));
  EXPECT_THROW(run_op({.op = "Clip", .inputs = {x, f32({2}, {0, 1})}, .opset = 13}), Error);
  EXPECT_THROW(run_op({.op = "Clip", .inputs = {x, i64({}, {0})}, .opset = 13}), Error);
}

TEST(ElementwiseActivation, ClipWithAttributesBeforeOpset11) {
  Tensor x = f32({3}, {-2, 0, 5});
  auto out = run_op({.op = "Clip", .inputs = {x}, .attrs = {{"min", af(-1)}, {"max", af(1)}}, .opset = 7});
  expect_near(out[0], f32({3}, {-1, 0, 1}));
  auto lo = run_op({.op = "Clip", .inputs = {x}, .attrs = {{"min", af(0)}}, .opset = 7});
  expect_near(lo[0], f32({3}, {0, 0, 5}));
}

}  // namespace tessera::testing
