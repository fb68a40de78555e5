// Resize / Upsample on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute S(const char* s) { return Attribute::of_string(s); }
Tensor f32s(std::vector<float> v) { return f32({static_cast<int64_t>(v.size())}, v); }
}  // namespace

TEST(Resize, NearestHalfPixelUpsample) {
  OpCase c{.op = "Resize",
           .inputs = {f32({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor(), f32s({1, 1, 2, 2})},
           .opset = 19,
           .constant_inputs = {2}};
  EXPECT_EQ(infer_op(c)[0].to_string(), "f32[1x1x4x4]");
  auto out = run_op(c);
  expect_near(out[0], f32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(Resize, LinearHalfPixelClampsAtEdges) {
  auto out = run_op({.op = "Resize", .inputs = {f32({1, 1, 1, 2}, {0, 4}), Tensor(), f32s({1, 1, 1, 2})},
                     .attrs = {{"mode", S("linear")}}, .opset = 19});
  expect_near(out[0], f32({1, 1, 1, 4}, {0, 1, 3, 4}));
}

TEST(Resize, LinearAlignCornersWithSizes) {
  auto out = run_op({.op = "Resize",
                     .inputs = {f32({1, 1, 1, 2}, {0, 3}), Tensor(), Tensor(), i64({4}, {1, 1, 1, 4})},
                     .attrs = {{"mode", S("linear")}, {"coordinate_transformation_mode", S("align_corners")}},
                     .opset = 13});
  expect_near(out[0], f32({1, 1, 1, 4}, {0, 1, 2, 3}));
}

TEST(Resize, CubicAsymmetric) {
  // Weights at t = 0.5 with A = -0.75: (-0.09375, 0.59375, 0.59375, -0.09375), edges clamped.
  auto out = run_op({.op = "Resize", .inputs = {f32({1, 1, 1, 4}, {1, 2, 4, 8}), Tensor(), f32s({1, 1, 1, 2})},
                     .attrs = {{"mode", S("cubic")}, {"coordinate_transformation_mode", S("asymmetric")}},
                     .opset = 13});
  expect_near(out[0], f32({1, 1, 1, 8}, {1, 1.3125, 2, 2.71875, 4, 6.1875, 8, 8.375}));
}

TEST(Resize, LinearAntialiasDownsample) {
  // Triangle filter stretched by 1/scale = 2: weights (1, 3, 3, 1) / 8.
  auto out = run_op({.op = "Resize", .inputs = {f32({1, 1, 1, 4}, {0, 4, 8, 12}), Tensor(), f32s({1, 1, 1, 0.5f})},
                     .attrs = {{"mode", S("linear")}, {"antialias", Attribute::of_int(1)}},
                     .opset = 18});
  expect_near(out[0], f32({1, 1, 1, 2}, {2.5, 9.5}));
}

TEST(Resize, TfCropAndResizeExtrapolatesWithAxes) {
  auto out = run_op({.op = "Resize",
                     .inputs = {f32({1, 1, 1, 4}, {0, 1, 2, 3}), f32s({0.5f, 1.5f}), Tensor(), i64({1}, {3})},
                     .attrs = {{"mode", S("linear")},
                               {"coordinate_transformation_mode", S("tf_crop_and_resize")},
                               {"axes", Attribute::of_ints({3})},
                               {"extrapolation_value", Attribute::of_float(9)}},
                     .opset = 19});
  expect_near(out[0], f32({1, 1, 1, 3}, {1.5, 3, 9}));
}

TEST(Resize, KeepAspectRatioPolicies) {
  Tensor x = f32({1, 1, 2, 4}, std::vector<float>(8, 1));
  auto shape = [&](const char* policy) {
    return infer_op({.op = "Resize",
                     .inputs = {x, Tensor(), Tensor(), i64({2}, {4, 4})},
                     .attrs = {{"keep_aspect_ratio_policy", S(policy)}, {"axes", Attribute::of_ints({2, 3})}},
                     .opset = 19,
                     .constant_inputs = {3}})[0]
        .to_string();
  };
  EXPECT_EQ(shape("stretch"), "f32[1x1x4x4]");
  EXPECT_EQ(shape("not_larger"), "f32[1x1x2x4]");
  EXPECT_EQ(shape("not_smaller"), "f32[1x1x4x8]");
}

TEST(Resize, UnknownScalesGiveUnknownDims) {
  auto t = infer_op({.op = "Resize", .inputs = {f32({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor(), f32s({1, 1, 2, 2})},
                     .opset = 19});
  EXPECT_EQ(t[0].to_string(), "f32[?x?x?x?]");
}

TEST(Resize, NearestCopiesIntegers) {
  auto out = run_op({.op = "Resize",
                     .inputs = {Tensor::from<uint8_t>({1, 2}, {7, 200}), Tensor(), f32s({1, 2})},
                     .attrs = {{"coordinate_transformation_mode", S("asymmetric")}},
                     .opset = 13});
  ASSERT_EQ(out[0].dtype(), DType::U8);
  std::vector<int64_t> want = {7, 7, 200, 200};
  EXPECT_EQ(out[0].to_int_vector(), want);
}

TEST(Resize, HugeAndNanCoordinatesStayInBounds) {
  // A tiny scale maps outputs far outside the input; a NaN roi gives NaN coordinates.
  auto out = run_op({.op = "Resize", .inputs = {f32({1, 2}, {1, 2}), Tensor(), f32s({1, 1e-30f})},
                     .attrs = {{"coordinate_transformation_mode", S("asymmetric")}}, .opset = 13});
  EXPECT_EQ(dims_to_string(out[0].dims()), "1x0");
  out = run_op({.op = "Resize",
                .inputs = {f32({1, 2}, {1, 2}), f32s({0, NAN, 1, 1}), Tensor(), i64({2}, {1, 3})},
                .attrs = {{"coordinate_transformation_mode", S("tf_crop_and_resize")}, {"mode", S("linear")}},
                .opset = 13});
  EXPECT_EQ(dims_to_string(out[0].dims()), "1x3");
}

TEST(Resize, RejectsScalesAndSizesTogether) {
  EXPECT_THROW(run_op({.op = "Resize",
                       .inputs = {f32({1, 2}, {1, 2}), Tensor(), f32s({1, 2}), i64({2}, {1, 4})},
                       .opset = 13}),
               tessera::Error);
}

TEST(Resize, RejectsWrongScalesLength) {
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {f32({1, 2}, {1, 2}), Tensor(), f32s({2})}, .opset = 13}),
               tessera::Error);
}

TEST(Upsample, NearestInputScalesRepeat) {
  auto out = run_op({.op = "Upsample", .inputs = {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32s({1, 1, 2, 3})},
                     .opset = 9});
  expect_near(out[0], f32({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                         3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Upsample, LinearAttributeScalesAsymmetric) {
  auto out = run_op({.op = "Upsample", .inputs = {f32({1, 2}, {0, 4})},
                     .attrs = {{"mode", S("linear")}, {"scales", Attribute::of_floats({1, 2})}},
                     .opset = 7});
  expect_near(out[0], f32({1, 4}, {0, 2, 4, 4}));
}

}  // namespace tessera::testing
