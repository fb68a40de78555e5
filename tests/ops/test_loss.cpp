// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute S(const char* s) { return Attribute::of_string(s); }
Tensor scalar(float v) { return f32({}, {v}); }
const Tensor kInput = f32({2, 3}, {-1, -2, -3, -4, -5, -6});
}  // namespace

TEST(NllLoss, Reductions) {
  Tensor t = i64({2}, {0, 2});  // losses 1 and 6
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t}, .opset = 13})[0], scalar(3.5));
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t}, .attrs = {{"reduction", S("sum")}},
                      .opset = 13})[0],
              scalar(7));
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t}, .attrs = {{"reduction", S("none")}},
                      .opset = 13})[0],
              f32({2}, {1, 6}));
}

TEST(NllLoss, WeightsAndIgnoreIndex) {
  Tensor t = i64({2}, {0, 2});
  Tensor w = f32({3}, {1, 1, 2});
  // Weighted losses 1 and 12; mean divides by the weight sum 3.
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t, w}, .opset = 13})[0],
              scalar(13.0f / 3));
  auto ii = Attribute::of_int(2);
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t},
                      .attrs = {{"ignore_index", ii}, {"reduction", S("none")}}, .opset = 13})[0],
              f32({2}, {1, 0}));
  expect_near(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, t}, .attrs = {{"ignore_index", ii}},
                      .opset = 13})[0],
              scalar(1));
}

TEST(NllLoss, SpatialDims) {
  // input[0, c, d]: c=0 -> (-1, -2), c=1 -> (-3, -4); targets (1, 0) pick 3 and 2.
  auto out = run_op({.op = "NegativeLogLikelihoodLoss",
                     .inputs = {f32({1, 2, 2}, {-1, -2, -3, -4}), i64({1, 2}, {1, 0})},
                     .attrs = {{"reduction", S("none")}},
                     .opset = 13});
  expect_near(out[0], f32({1, 2}, {3, 2}));
}

TEST(NllLoss, RejectsOutOfRangeTarget) {
  EXPECT_THROW(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, i64({2}, {0, 3})}, .opset = 13}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {kInput, i64({3}, {0, 1, 2})}, .opset = 13}),
               tessera::Error);
}

TEST(SoftmaxCrossEntropyLoss, LossAndLogProb) {
  // log_softmax(0, ln 3) = (ln 1/4, ln 3/4).
  float l3 = std::log(3.0f);
  auto out = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {f32({1, 2}, {0, l3}), i64({1}, {1})},
                     .num_outputs = 2, .opset = 13});
  expect_near(out[0], scalar(-std::log(0.75f)));
  expect_near(out[1], f32({1, 2}, {std::log(0.25f), std::log(0.75f)}));
}

TEST(SoftmaxCrossEntropyLoss, SumOfUniformScores) {
  auto out = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {f32({2, 2}, {0, 0, 5, 5}), i64({2}, {0, 1})},
                     .attrs = {{"reduction", S("sum")}}, .opset = 13});
  expect_near(out[0], scalar(2 * std::log(2.0f)));
}

TEST(SoftmaxCrossEntropyLoss, InfersNoneShape) {
  auto t = infer_op({.op = "SoftmaxCrossEntropyLoss",
                     .inputs = {f32({2, 3, 4}, std::vector<float>(24)), i64({2, 4}, std::vector<int64_t>(8))},
                     .attrs = {{"reduction", S("none")}}, .num_outputs = 2, .opset = 13});
  EXPECT_EQ(t[0].to_string(), "f32[2x4]");
  EXPECT_EQ(t[1].to_string(), "f32[2x3x4]");
}

}  // namespace tessera::testing
