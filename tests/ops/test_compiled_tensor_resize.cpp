// Resize and Upsample compiled and checked against the reference: every
// coordinate transformation mode, nearest mode, linear / cubic with
// antialias and exclude_outside, crop-and-resize extrapolation, axes, sizes
// with aspect-ratio policies, integer and half dtypes, and the legacy opsets.
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute F(float v) { return Attribute::of_float(v); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }
Tensor floats(std::vector<float> v) { return f32({static_cast<int64_t>(v.size())}, v); }
Tensor none() { return f32({0}, {}); }

const char* kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                         "asymmetric", "tf_half_pixel_for_nn"};

// Resize-19 with scales.
OpCase scaled(Tensor x, std::vector<float> scales, AttrMap attrs) {
  return {.op = "Resize", .inputs = {std::move(x), none(), floats(std::move(scales))}, .attrs = std::move(attrs),
          .opset = 19, .constant_inputs = {1, 2}};
}

TEST(CompiledTensorResize, Nearest) {
  std::mt19937 rng(41);
  int rep = 0;
  for (const char* coord : kCoords)
    for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      float sh = rep % 3 == 0 ? 0.6f : rep % 3 == 1 ? 2.0f : 1.5f, sw = rep % 2 ? 1.75f : 0.8f;
      Tensor x = random_tensor(rep % 4 == 3 ? DType::I32 : DType::F32, {1, 2, 4, 5}, rng);
      expect_compiled_matches(scaled(x, {1, 1, sh, sw},
                                     {{"mode", S("nearest")}, {"coordinate_transformation_mode", S(coord)},
                                      {"nearest_mode", S(nm)}}));
      ++rep;
    }
}

TEST(CompiledTensorResize, LinearAndCubic) {
  std::mt19937 rng(42);
  int rep = 0;
  for (const char* mode : {"linear", "cubic"})
    for (const char* coord : kCoords) {
      float sh = rep % 2 ? 1.7f : 0.7f, sw = rep % 3 ? 2.0f : 0.5f;
      AttrMap attrs = {{"mode", S(mode)}, {"coordinate_transformation_mode", S(coord)}};
      if (rep % 4 == 1) attrs["exclude_outside"] = I(1);
      if (rep % 5 == 2) attrs["cubic_coeff_a"] = F(-0.5f);
      expect_compiled_matches(scaled(random_tensor(DType::F32, {2, 1, 5, 4}, rng), {1, 1, sh, sw}, attrs));
      ++rep;
    }
}

TEST(CompiledTensorResize, Antialias) {
  std::mt19937 rng(43);
  for (const char* mode : {"linear", "cubic"})
    for (float s : {0.5f, 0.3f, 1.5f})
      expect_compiled_matches(scaled(random_tensor(DType::F32, {1, 1, 9, 7}, rng), {1, 1, s, 0.6f},
                                     {{"mode", S(mode)}, {"antialias", I(1)}}));
}

TEST(CompiledTensorResize, CropAndResize) {
  std::mt19937 rng(44);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    Tensor roi = floats({0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f});
    expect_compiled_matches({.op = "Resize",
                             .inputs = {random_tensor(DType::F32, {1, 2, 4, 5}, rng), roi, floats({1, 1, 1.5f, 0.8f})},
                             .attrs = {{"mode", S(mode)},
                                       {"coordinate_transformation_mode", S("tf_crop_and_resize")},
                                       {"extrapolation_value", F(-7.5f)}},
                             .opset = 19, .constant_inputs = {1, 2}});
  }
  // Roi over the resized axes only; an output axis of length 1.
  expect_compiled_matches({.op = "Resize",
                           .inputs = {random_tensor(DType::F32, {3, 6}, rng), floats({0.2f, 0.7f}), floats({0.2f})},
                           .attrs = {{"mode", S("linear")}, {"axes", Attribute::of_ints({1})},
                                     {"coordinate_transformation_mode", S("tf_crop_and_resize")}},
                           .opset = 19, .constant_inputs = {1, 2}});
}

// Segmentation heads' upsampling (DeepLab: a 1/16 map to the image, sizes
// given): float linear / cubic over two axes runs one pass per axis; rows of
// several vectors and a tail, every coordinate mode, and one axis up while
// the other goes down; a NaN in the input reaches only the outputs whose
// taps weigh it.
TEST(CompiledTensorResize, TwoAxisUpsamplingByPasses) {
  std::mt19937 rng(47);
  for (const char* mode : {"linear", "cubic"})
    for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"})
      for (const std::vector<int64_t>& size : {std::vector<int64_t>{1, 3, 72, 88}, std::vector<int64_t>{1, 3, 40, 5}})
        expect_compiled_matches({.op = "Resize",
                                 .inputs = {random_tensor(DType::F32, {1, 3, 9, 11}, rng), none(), none(),
                                            i64({4}, size)},
                                 .attrs = {{"mode", S(mode)}, {"coordinate_transformation_mode", S(coord)}},
                                 .opset = 13, .constant_inputs = {1, 2, 3}});
  Tensor x = random_tensor(DType::F32, {1, 1, 6, 7}, rng);
  x.data<float>()[2 * 7 + 3] = std::numeric_limits<float>::quiet_NaN();
  expect_compiled_matches(scaled(x, {1, 1, 4, 4}, {{"mode", S("linear")}, {"coordinate_transformation_mode",
                                                                            S("align_corners")}}));
}

TEST(CompiledTensorResize, SizesAxesAndDtypes) {
  std::mt19937 rng(45);
  for (const char* policy : {"stretch", "not_larger", "not_smaller"})
    for (const char* mode : {"nearest", "linear"})
      expect_compiled_matches({.op = "Resize",
                               .inputs = {random_tensor(DType::F32, {1, 1, 4, 6}, rng), none(), none(),
                                          i64({2}, {7, 5})},
                               .attrs = {{"mode", S(mode)}, {"axes", Attribute::of_ints({2, -1})},
                                         {"keep_aspect_ratio_policy", S(policy)}},
                               .opset = 19, .constant_inputs = {1, 2, 3}});
  // Opset 11 and 13: sizes for every axis, scales absent.
  expect_compiled_matches({.op = "Resize",
                           .inputs = {random_tensor(DType::F32, {2, 3, 5}, rng), none(), none(), i64({3}, {2, 3, 8})},
                           .attrs = {{"mode", S("linear")}}, .opset = 11, .constant_inputs = {1, 2, 3}});
  expect_compiled_matches({.op = "Resize",
                           .inputs = {random_tensor(DType::F32, {2, 3, 5}, rng), Tensor(), floats({1, 2, 0.6f})},
                           .attrs = {{"mode", S("cubic")}}, .opset = 13, .constant_inputs = {2}});
  // Integer, half and double data.
  for (DType dt : {DType::U8, DType::I32, DType::F16, DType::BF16, DType::F64, DType::I64})
    for (const char* mode : {"nearest", "linear", "cubic"})
      expect_compiled_matches(scaled(random_tensor(dt, {1, 2, 3, 4}, rng, 0, 50), {1, 1, 1.5f, 0.75f},
                                     {{"mode", S(mode)}}),
                              {1e-3, 1e-3});
  // Unchanged axes only: a copy.
  expect_compiled_matches(scaled(random_tensor(DType::F32, {2, 3}, rng), {1, 1}, {{"mode", S("linear")}}));
}

TEST(CompiledTensorResize, LegacyOpsets) {
  std::mt19937 rng(46);
  for (const char* mode : {"nearest", "linear"}) {
    // Resize-10: asymmetric, scales input 1.
    expect_compiled_matches({.op = "Resize",
                             .inputs = {random_tensor(DType::F32, {1, 2, 3, 4}, rng), floats({1, 1, 2.5f, 0.5f})},
                             .attrs = {{"mode", S(mode)}}, .opset = 10, .constant_inputs = {1}});
    // Upsample-9: scales input; Upsample-7: scales attribute.
    expect_compiled_matches({.op = "Upsample",
                             .inputs = {random_tensor(DType::F32, {1, 1, 3, 4}, rng), floats({1, 1, 2, 3})},
                             .attrs = {{"mode", S(mode)}}, .opset = 9, .constant_inputs = {1}});
    expect_compiled_matches({.op = "Upsample", .inputs = {random_tensor(DType::I32, {2, 3}, rng)},
                             .attrs = {{"mode", S(mode)}, {"scales", Attribute::of_floats({2, 1.5f})}}, .opset = 7});
  }
  expect_compiled_matches({.op = "Upsample", .inputs = {random_tensor(DType::F32, {1, 1, 2, 3}, rng)},
                           .attrs = {{"mode", S("bilinear")}, {"scales", Attribute::of_floats({1, 1, 2, 2})}},
                           .opset = 7});
}

}  // namespace
}  // namespace tessera::testing
