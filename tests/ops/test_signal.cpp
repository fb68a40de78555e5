// Window functions, DFT, STFT and MelWeightMatrix on hand-computed cases.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute I(int64_t v) { return Attribute::of_int(v); }
// x = (1, 2, 3, 4) as a real signal [1, 4, 1]; its spectrum is
// (10, -2+2i, -2, -2-2i).
const Tensor kSignal = f32({1, 4, 1}, {1, 2, 3, 4});
const Tensor kSpectrum = f32({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
}  // namespace

TEST(Windows, HannHammingBlackman) {
  Tensor four = i64({}, {4});
  expect_near(run_op({.op = "HannWindow", .inputs = {four}, .opset = 17})[0], f32({4}, {0, 0.5, 1, 0.5}));
  expect_near(run_op({.op = "HannWindow", .inputs = {i64({}, {3})}, .attrs = {{"periodic", I(0)}}, .opset = 17})[0],
              f32({3}, {0, 1, 0}));
  expect_near(run_op({.op = "HammingWindow", .inputs = {four}, .opset = 17})[0],
              f32({4}, {4.0f / 46, 25.0f / 46, 1, 25.0f / 46}));
  expect_near(run_op({.op = "BlackmanWindow", .inputs = {four}, .opset = 17})[0], f32({4}, {0, 0.34f, 1, 0.34f}),
              1e-5, 1e-6);
}

TEST(Windows, OutputDatatypeAndShapeInference) {
  OpCase c{.op = "HannWindow", .inputs = {i64({}, {2})}, .attrs = {{"output_datatype", I(11)}}, .opset = 17,
           .constant_inputs = {0}};
  EXPECT_EQ(infer_op(c)[0].to_string(), "f64[2]");
  auto out = run_op(c);
  expect_near(out[0], Tensor::from<double>({2}, {0, 1}));
  EXPECT_THROW(run_op({.op = "HannWindow", .inputs = {i64({}, {-1})}, .opset = 17}), tessera::Error);
}

TEST(DFT, ForwardOnesidedAndInverse) {
  expect_near(run_op({.op = "DFT", .inputs = {kSignal}, .opset = 17})[0], kSpectrum, 1e-5, 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {kSignal}, .attrs = {{"onesided", I(1)}}, .opset = 17})[0],
              f32({1, 3, 2}, {10, 0, -2, 2, -2, 0}), 1e-5, 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {kSpectrum}, .attrs = {{"inverse", I(1)}}, .opset = 17})[0],
              f32({1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}), 1e-5, 1e-5);
}

TEST(DFT, RealInverseOfHalfSpectrum) {
  auto out = run_op({.op = "DFT", .inputs = {f32({1, 3, 2}, {10, 0, -2, 2, -2, 0})},
                     .attrs = {{"inverse", I(1)}, {"onesided", I(1)}}, .opset = 17});
  expect_near(out[0], f32({1, 4, 1}, {1, 2, 3, 4}), 1e-5, 1e-5);
}

TEST(DFT, AxisInputAndLength) {
  // Opset 20: axis is an input (default -2); dft_length 2 truncates to (1, 2).
  OpCase c{.op = "DFT", .inputs = {kSignal, i64({}, {2}), i64({}, {-2})}, .opset = 20, .constant_inputs = {1, 2}};
  EXPECT_EQ(infer_op(c)[0].to_string(), "f32[1x2x2]");
  expect_near(run_op(c)[0], f32({1, 2, 2}, {3, 0, -1, 0}), 1e-5, 1e-5);
  EXPECT_THROW(run_op({.op = "DFT", .inputs = {kSignal, Tensor(), i64({}, {2})}, .opset = 20}), tessera::Error);
}

TEST(STFT, FramesWithAndWithoutWindow) {
  Tensor step = i64({}, {2});
  auto out = run_op({.op = "STFT", .inputs = {kSignal, step, Tensor(), i64({}, {2})}, .opset = 17});
  expect_near(out[0], f32({1, 2, 2, 2}, {3, 0, -1, 0, 7, 0, -1, 0}), 1e-5, 1e-5);
  out = run_op({.op = "STFT", .inputs = {kSignal, step, f32({2}, {1, 0})}, .opset = 17});
  expect_near(out[0], f32({1, 2, 2, 2}, {1, 0, 1, 0, 3, 0, 3, 0}), 1e-5, 1e-5);
  EXPECT_THROW(run_op({.op = "STFT", .inputs = {kSignal, step}, .opset = 17}), tessera::Error);
}

TEST(MelWeightMatrix, TriangularFilters) {
  // 2 mel bins over 0..2000 Hz, dft 16 at 8 kHz: bin edges land on spectrogram bins (0, 0, 1, 2).
  auto out = run_op({.op = "MelWeightMatrix",
                     .inputs = {Tensor::from<int32_t>({}, {2}), Tensor::from<int32_t>({}, {16}),
                                Tensor::from<int32_t>({}, {8000}), f32({}, {0}), f32({}, {2000})},
                     .opset = 17});
  std::vector<float> want(18, 0);
  want[0] = 1;  // bin 0 peaks at spectrogram bin 0
  want[3] = 1;  // bin 1 peaks at spectrogram bin 1
  expect_near(out[0], f32({9, 2}, want));
}

}  // namespace tessera::testing
