// Compiled GridSample, AffineGrid and RoiAlign against the reference on
// seeded random shapes and attributes.
#include <cmath>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute F(float v) { return Attribute::of_float(v); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }

TEST(CompiledMiscVision, GridSample2D) {
  std::mt19937 rng(21);
  const char* modes[] = {"nearest", "linear", "cubic"};
  const char* pads[] = {"zeros", "border", "reflection"};
  int rep = 0;
  for (const char* mode : modes)
    for (const char* pad : pads)
      for (int align = 0; align < 2; ++align, ++rep) {
        int64_t N = 1 + rep % 2, C = 1 + static_cast<int64_t>(rng() % 3);
        int64_t H = 1 + static_cast<int64_t>(rng() % 5), W = 1 + static_cast<int64_t>(rng() % 6);
        int64_t OH = 1 + static_cast<int64_t>(rng() % 4), OW = 1 + static_cast<int64_t>(rng() % 5);
        DType d = rep % 6 == 5 ? DType::F64 : DType::F32;
        Tensor x = random_tensor(d, {N, C, H, W}, rng);
        Tensor g = random_tensor(d, {N, OH, OW, 2}, rng, -1.6, 1.6);
        if (rep % 4 == 0) {  // far outside, NaN and infinities
          Tensor gd = g.cast(DType::F64);
          double* p = gd.data<double>();
          p[0] = NAN;
          if (gd.numel() > 2) p[2] = INFINITY;
          if (gd.numel() > 3) p[3] = -7.5;
          g = gd.cast(d);
        }
        std::string m = mode;
        int64_t opset = rep % 3 == 0 ? 16 : 20;
        if (opset == 16 && m != "nearest") m = m == "linear" ? "bilinear" : "bicubic";
        expect_compiled_matches({.op = "GridSample", .inputs = {x, g},
                                 .attrs = {{"mode", S(m)}, {"padding_mode", S(pad)}, {"align_corners", I(align)}},
                                 .opset = opset},
                                {1e-6, 1e-6});
      }
}

TEST(CompiledMiscVision, GridSample1DAnd3DAndTypes) {
  std::mt19937 rng(22);
  const char* modes[] = {"nearest", "linear", "cubic"};
  const char* pads[] = {"zeros", "border", "reflection"};
  for (int rep = 0; rep < 9; ++rep) {
    bool three = rep % 3 != 0;
    Dims xd = three ? Dims{1, 2, 3, 2, 4} : Dims{2, 2, 7};
    Dims gd = three ? Dims{1, 2, 2, 3, 3} : Dims{2, 5, 1};
    DType d = rep == 4 ? DType::F16 : rep == 7 ? DType::I32 : DType::F32;
    Tensor x = random_tensor(d, xd, rng, -5, 5);
    Tensor g = random_tensor(DType::F32, gd, rng, -1.4, 1.4);
    Tolerance tol = d == DType::F16 ? Tolerance{2e-3, 2e-3} : Tolerance{1e-6, 1e-6};
    expect_compiled_matches({.op = "GridSample", .inputs = {x, g},
                             .attrs = {{"mode", S(modes[rep % 3])}, {"padding_mode", S(pads[(rep / 3) % 3])},
                                       {"align_corners", I(rep % 2)}},
                             .opset = 20},
                            tol);
  }
}

TEST(CompiledMiscVision, AffineGrid) {
  std::mt19937 rng(23);
  for (int rep = 0; rep < 8; ++rep) {
    bool three = rep % 2 == 1;
    int64_t N = 1 + static_cast<int64_t>(rng() % 2);
    std::vector<int64_t> size = {N, 3};
    for (int d = 0; d < (three ? 3 : 2); ++d) size.push_back(1 + static_cast<int64_t>(rng() % 5));
    int64_t r = three ? 3 : 2;
    DType dt = rep == 6 ? DType::F64 : DType::F32;
    Tensor theta = random_tensor(dt, {N, r, r + 1}, rng);
    expect_compiled_matches({.op = "AffineGrid", .inputs = {theta, i64({static_cast<int64_t>(size.size())}, size)},
                             .attrs = {{"align_corners", I(rep / 2 % 2)}}, .opset = 20, .constant_inputs = {1}});
  }
}

TEST(CompiledMiscVision, RoiAlign) {
  std::mt19937 rng(24);
  for (int rep = 0; rep < 12; ++rep) {
    int64_t N = 1 + rep % 2, C = 1 + static_cast<int64_t>(rng() % 3);
    int64_t H = 2 + static_cast<int64_t>(rng() % 6), W = 2 + static_cast<int64_t>(rng() % 6);
    int64_t R = 1 + static_cast<int64_t>(rng() % 3);
    DType d = rep % 5 == 4 ? DType::F64 : DType::F32;
    Tensor x = random_tensor(d, {N, C, H, W}, rng);
    std::uniform_real_distribution<double> u(-2, 10);
    std::vector<double> roi;
    std::vector<int64_t> bi;
    for (int64_t k = 0; k < R; ++k) {
      double x1 = u(rng), y1 = u(rng), x2 = x1 + std::fabs(u(rng)) / 2, y2 = y1 + std::fabs(u(rng)) / 2;
      roi.insert(roi.end(), {x1, y1, x2, y2});
      bi.push_back(static_cast<int64_t>(rng() % static_cast<unsigned>(N)));
    }
    Tensor rois = Tensor::from<double>({R, 4}, roi).cast(d);
    AttrMap attrs = {{"output_height", I(1 + rep % 3)}, {"output_width", I(1 + rep % 4)},
                     {"mode", S(rep % 2 ? "max" : "avg")}, {"spatial_scale", F(rep % 3 == 0 ? 0.5f : 1.0f)}};
    if (rep % 3 != 1) attrs["sampling_ratio"] = I(rep % 3 == 0 ? 2 : 1);
    int64_t opset = rep % 4 == 0 ? 10 : 16;
    if (opset == 16 && rep % 4 == 1) attrs["coordinate_transformation_mode"] = S("output_half_pixel");
    Tensor bt = rep % 2 ? Tensor::from<int64_t>({R}, bi) : Tensor::from<int64_t>({R}, bi).cast(DType::I32);
    expect_compiled_matches({.op = "RoiAlign", .inputs = {x, rois, bt}, .attrs = attrs, .opset = opset}, {1e-6, 1e-6});
  }
}

}  // namespace
}  // namespace tessera::testing
