// GridSample, AffineGrid, RoiAlign, Col2Im and DeformConv on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute S(const char* s) { return Attribute::of_string(s); }
Attribute I(int64_t v) { return Attribute::of_int(v); }
const Tensor kImg = f32({1, 1, 2, 2}, {1, 2, 3, 4});
}  // namespace

TEST(GridSample, BilinearAlignCorners) {
  // (x, y) pairs: corners, centre, top-right.
  auto out = run_op({.op = "GridSample",
                     .inputs = {kImg, f32({1, 1, 4, 2}, {-1, -1, 1, 1, 0, 0, 1, -1})},
                     .attrs = {{"align_corners", I(1)}},
                     .opset = 20});
  expect_near(out[0], f32({1, 1, 1, 4}, {1, 4, 2.5, 2}));
}

TEST(GridSample, NearestRoundsHalfToEven) {
  // align_corners=0: grid 0 -> pixel 0.5 -> 0; grid 0.5 -> pixel 1.
  auto out = run_op({.op = "GridSample", .inputs = {kImg, f32({1, 1, 2, 2}, {0, 0, 0.5f, 0.5f})},
                     .attrs = {{"mode", S("nearest")}}, .opset = 20});
  expect_near(out[0], f32({1, 1, 1, 2}, {1, 4}));
}

TEST(GridSample, PaddingModes) {
  // x = -3 lies two widths left of the image; y = 0 is between the rows.
  Tensor grid = f32({1, 1, 1, 2}, {-3, 0});
  auto run = [&](const char* pad) {
    return run_op({.op = "GridSample", .inputs = {kImg, grid},
                   .attrs = {{"align_corners", I(1)}, {"padding_mode", S(pad)}}, .opset = 16})[0];
  };
  expect_near(run("zeros"), f32({1, 1, 1, 1}, {0}));
  expect_near(run("border"), f32({1, 1, 1, 1}, {2}));
  expect_near(run("reflection"), f32({1, 1, 1, 1}, {3}));
}

TEST(GridSample, IntegerImageAndNanGrid) {
  auto out = run_op({.op = "GridSample",
                     .inputs = {Tensor::from<uint8_t>({1, 1, 1, 2}, {10, 200}), f32({1, 1, 1, 2}, {1, 0})},
                     .attrs = {{"mode", S("nearest")}, {"align_corners", I(1)}}, .opset = 20});
  ASSERT_EQ(out[0].dtype(), DType::U8);
  EXPECT_EQ(out[0].get_int(0), 200);
  out = run_op({.op = "GridSample", .inputs = {kImg, f32({1, 1, 1, 2}, {NAN, 1e30f})}, .opset = 20});
  EXPECT_TRUE(std::isnan(out[0].get_double(0)));
}

TEST(GridSample, RejectsBadGrid) {
  EXPECT_THROW(run_op({.op = "GridSample", .inputs = {kImg, f32({1, 1, 1, 3}, {0, 0, 0})}, .opset = 20}),
               tessera::Error);
}

TEST(AffineGrid, IdentityAndTranslation) {
  Tensor size = i64({4}, {1, 1, 2, 2});
  auto out = run_op({.op = "AffineGrid", .inputs = {f32({1, 2, 3}, {1, 0, 0, 0, 1, 0}), size}, .opset = 20,
                     .constant_inputs = {1}});
  expect_near(out[0], f32({1, 2, 2, 2}, {-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5}));
  out = run_op({.op = "AffineGrid", .inputs = {f32({1, 2, 3}, {1, 0, 0.5f, 0, 1, 0}), size},
                .attrs = {{"align_corners", I(1)}}, .opset = 20});
  expect_near(out[0], f32({1, 2, 2, 2}, {-0.5, -1, 1.5, -1, -0.5, 1, 1.5, 1}));
}

TEST(RoiAlign, AverageAndMax) {
  Tensor rois = f32({1, 4}, {0, 0, 1, 1});
  Tensor idx = i64({1}, {0});
  AttrMap a = {{"sampling_ratio", I(1)}, {"coordinate_transformation_mode", S("output_half_pixel")}};
  // One sample at (0.5, 0.5): bilinear mean of the four pixels.
  expect_near(run_op({.op = "RoiAlign", .inputs = {kImg, rois, idx}, .attrs = a, .opset = 16})[0],
              f32({1, 1, 1, 1}, {2.5}));
  a["mode"] = S("max");  // max of the weighted corners 0.25 * (1, 2, 3, 4)
  expect_near(run_op({.op = "RoiAlign", .inputs = {kImg, rois, idx}, .attrs = a, .opset = 16})[0],
              f32({1, 1, 1, 1}, {1}));
  // half_pixel shifts the roi by -0.5: the sample lands on pixel (0, 0).
  expect_near(run_op({.op = "RoiAlign", .inputs = {kImg, rois, idx}, .attrs = {{"sampling_ratio", I(1)}},
                      .opset = 16})[0],
              f32({1, 1, 1, 1}, {1}));
}

TEST(RoiAlign, RejectsBadBatchIndex) {
  EXPECT_THROW(run_op({.op = "RoiAlign", .inputs = {kImg, f32({1, 4}, {0, 0, 1, 1}), i64({1}, {3})}, .opset = 16}),
               tessera::Error);
}

TEST(Col2Im, SingleBlockAndOverlap) {
  auto out = run_op({.op = "Col2Im", .inputs = {f32({1, 4, 1}, {1, 2, 3, 4}), i64({2}, {2, 2}), i64({2}, {2, 2})},
                     .opset = 18, .constant_inputs = {1, 2}});
  expect_near(out[0], f32({1, 1, 2, 2}, {1, 2, 3, 4}));
  // Two 1x2 blocks on a 1x3 image overlap in the middle column.
  out = run_op({.op = "Col2Im", .inputs = {f32({1, 2, 2}, {1, 2, 10, 20}), i64({2}, {1, 3}), i64({2}, {1, 2})},
                .opset = 18});
  expect_near(out[0], f32({1, 1, 1, 3}, {1, 12, 20}));
}

TEST(Col2Im, RejectsBlockCountMismatch) {
  EXPECT_THROW(run_op({.op = "Col2Im", .inputs = {f32({1, 2, 3}, std::vector<float>(6)), i64({2}, {1, 3}),
                                                  i64({2}, {1, 2})},
                       .opset = 18}),
               tessera::Error);
}

TEST(DeformConv, OffsetsSampleBilinearly) {
  Tensor w = f32({1, 1, 1, 1}, {1});
  auto out = run_op({.op = "DeformConv", .inputs = {kImg, w, f32({1, 2, 2, 2}, std::vector<float>(8, 0))},
                     .opset = 19});
  expect_near(out[0], kImg);
  // Offset (0.5, 0.5) everywhere; pixels beyond the image read 0.
  Tensor off = f32({1, 2, 2, 2}, std::vector<float>(8, 0.5f));
  out = run_op({.op = "DeformConv", .inputs = {kImg, w, off}, .opset = 19});
  expect_near(out[0], f32({1, 1, 2, 2}, {2.5, 1.5, 1.75, 1}));
  out = run_op({.op = "DeformConv",
                .inputs = {kImg, w, off, f32({1}, {1}), f32({1, 1, 2, 2}, std::vector<float>(4, 0.5f))},
                .opset = 19});
  expect_near(out[0], f32({1, 1, 2, 2}, {2.25, 1.75, 1.875, 1.5}));
}

TEST(DeformConv, RejectsBadOffsetShape) {
  EXPECT_THROW(run_op({.op = "DeformConv",
                       .inputs = {kImg, f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 2}, std::vector<float>(4))},
                       .opset = 19}),
               tessera::Error);
}

}  // namespace tessera::testing
