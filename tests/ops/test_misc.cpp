// NonMaxSuppression on the ONNX documentation's box sets, and the random ops
// by shape, dtype, reproducibility and simple statistics.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {

// Six unit boxes [y1, x1, y2, x2]: 0-2 overlap heavily, 3-4 overlap, 5 is alone.
Tensor corner_boxes() {
  return f32({1, 6, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101});
}
Tensor six_scores() { return f32({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}); }

std::vector<Tensor> nms(Tensor boxes, Tensor scores, int64_t max_out, float iou, float score, AttrMap attrs = {}) {
  return run_op({.op = "NonMaxSuppression",
                 .inputs = {std::move(boxes), std::move(scores), i64({1}, {max_out}), f32({1}, {iou}), f32({1}, {score})},
                 .attrs = std::move(attrs),
                 .opset = 11});
}

double mean_of(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.get_double(i);
  return s / static_cast<double>(t.numel());
}

}  // namespace

TEST(NonMaxSuppression, SuppressByIou) {
  // By score: 3 (kept), 0 (kept), 1 and 2 (IoU with 0 ~0.82), 4 (IoU with 3), 5 (kept).
  auto out = nms(corner_boxes(), six_scores(), 3, 0.5f, 0.0f);
  expect_near(out[0], i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(NonMaxSuppression, CenterPointFormat) {
  Tensor boxes = f32({1, 6, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 0.4f, 1, 1, 0.5f, 10.5f, 1, 1,
                                 0.5f, 10.6f, 1, 1, 0.5f, 100.5f, 1, 1});
  auto out = nms(boxes, six_scores(), 3, 0.5f, 0.0f, {{"center_point_box", Attribute::of_int(1)}});
  expect_near(out[0], i64({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
}

TEST(NonMaxSuppression, ScoreThresholdLimitAndClasses) {
  auto thr = nms(corner_boxes(), six_scores(), 3, 0.5f, 0.4f);
  expect_near(thr[0], i64({2, 3}, {0, 0, 3, 0, 0, 0}));
  auto lim = nms(corner_boxes(), six_scores(), 2, 0.5f, 0.0f);
  expect_near(lim[0], i64({2, 3}, {0, 0, 3, 0, 0, 0}));
  auto none = run_op({.op = "NonMaxSuppression", .inputs = {corner_boxes(), six_scores()}, .opset = 11});
  EXPECT_EQ(none[0].dims(), (Dims{0, 3}));
  // Two classes with the same scores: each class selects independently.
  Tensor two = f32({1, 2, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f, 0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
  auto cls = nms(corner_boxes(), two, 2, 0.5f, 0.0f);
  expect_near(cls[0], i64({4, 3}, {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}));
}

TEST(NonMaxSuppression, BadBoxesThrow) {
  EXPECT_THROW(nms(f32({1, 2, 3}, {0, 0, 1, 0, 0, 1}), f32({1, 1, 2}, {1, 1}), 1, 0.5f, 0), tessera::Error);
}

TEST(Random, UniformShapeRangeAndSeed) {
  AttrMap a = {{"shape", Attribute::of_ints({4000})}, {"low", Attribute::of_float(2)},
               {"high", Attribute::of_float(4)}, {"seed", Attribute::of_float(7)}};
  auto u = run_op({.op = "RandomUniform", .attrs = a});
  ASSERT_EQ(u[0].dims(), (Dims{4000}));
  ASSERT_EQ(u[0].dtype(), DType::F32);
  for (int64_t i = 0; i < u[0].numel(); ++i) {
    double v = u[0].get_double(i);
    ASSERT_TRUE(v >= 2 && v <= 4) << v;
  }
  EXPECT_NEAR(mean_of(u[0]), 3.0, 0.06);
  auto again = run_op({.op = "RandomUniform", .attrs = a});
  expect_near(again[0], u[0], 0, 0);  // same seed, same values
}

TEST(Random, NormalMeanAndScale) {
  AttrMap a = {{"shape", Attribute::of_ints({100, 50})}, {"mean", Attribute::of_float(5)},
               {"scale", Attribute::of_float(2)}, {"seed", Attribute::of_float(1)},
               {"dtype", Attribute::of_int(static_cast<int64_t>(DType::F64))}};
  auto n = run_op({.op = "RandomNormal", .attrs = a});
  ASSERT_EQ(n[0].dtype(), DType::F64);
  double m = mean_of(n[0]), var = 0;
  for (int64_t i = 0; i < n[0].numel(); ++i) var += (n[0].get_double(i) - m) * (n[0].get_double(i) - m);
  var /= static_cast<double>(n[0].numel());
  EXPECT_NEAR(m, 5.0, 0.15);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.15);
}

TEST(Random, LikeVariantsFollowTheInput) {
  Tensor x(DType::F16, {3, 4});
  auto n = run_op({.op = "RandomNormalLike", .inputs = {x}});
  EXPECT_EQ(n[0].dtype(), DType::F16);
  EXPECT_EQ(n[0].dims(), (Dims{3, 4}));
  auto u = run_op({.op = "RandomUniformLike", .inputs = {x},
                   .attrs = {{"dtype", Attribute::of_int(static_cast<int64_t>(DType::F32))}}});
  EXPECT_EQ(u[0].dtype(), DType::F32);
  EXPECT_THROW(run_op({.op = "RandomUniformLike", .inputs = {i64({2}, {1, 2})}}), tessera::Error);
  EXPECT_THROW(run_op({.op = "RandomNormal"}), tessera::Error);  // shape is required
}

TEST(Random, BernoulliExtremesAndRate) {
  auto b = run_op({.op = "Bernoulli", .inputs = {f32({4}, {0, 1, 0, 1})}, .attrs = {{"seed", Attribute::of_float(3)}}});
  expect_near(b[0], f32({4}, {0, 1, 0, 1}), 0, 0);
  auto bi = run_op({.op = "Bernoulli", .inputs = {f32({2}, {1, 0})},
                    .attrs = {{"dtype", Attribute::of_int(static_cast<int64_t>(DType::I32))}}});
  EXPECT_EQ(bi[0].dtype(), DType::I32);
  EXPECT_EQ(bi[0].get_int(0), 1);
  EXPECT_EQ(bi[0].get_int(1), 0);
  auto half = run_op({.op = "Bernoulli", .inputs = {f32({4000}, std::vector<float>(4000, 0.25f))}});
  EXPECT_NEAR(mean_of(half[0]), 0.25, 0.04);
  EXPECT_THROW(run_op({.op = "Bernoulli", .inputs = {f32({1}, {1.5f})}}), tessera::Error);
}

TEST(Random, MultinomialSamplesFromLogits) {
  // log-probabilities: row 0 puts all mass on class 1; row 1 is 1:3 between classes 0 and 2.
  Tensor logits = f32({2, 3}, {-1000, 0, -1000, std::log(1.0f), -1000, std::log(3.0f)});
  auto s = run_op({.op = "Multinomial", .inputs = {logits},
                   .attrs = {{"sample_size", Attribute::of_int(2000)}, {"seed", Attribute::of_float(5)}}});
  ASSERT_EQ(s[0].dtype(), DType::I32);
  ASSERT_EQ(s[0].dims(), (Dims{2, 2000}));
  int64_t twos = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    EXPECT_EQ(s[0].get_int(i), 1);
    int64_t v = s[0].get_int(2000 + i);
    ASSERT_TRUE(v == 0 || v == 2) << v;
    twos += v == 2;
  }
  EXPECT_NEAR(static_cast<double>(twos) / 2000.0, 0.75, 0.04);
}

}  // namespace tessera::testing
