// Compiled DFT, STFT and MelWeightMatrix against the reference on seeded
// random shapes and attributes.
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }

Tolerance tol_for(DType d, int64_t n) {
  if (d == DType::F16) return {2e-2, 2e-2 * static_cast<double>(n)};
  if (d == DType::BF16) return {5e-2, 1e-1 * static_cast<double>(n)};
  if (d == DType::F64) return {1e-9, 1e-9};
  return {1e-5, 1e-5};
}

TEST(CompiledMiscSignal, DftOpset17) {
  std::mt19937 rng(11);
  const DType types[] = {DType::F32, DType::F64, DType::F16};
  for (int rep = 0; rep < 18; ++rep) {
    DType d = types[rep % 3];
    int rank = 3 + rep % 2;  // [batch, n, (m,) 1|2]
    Dims dims = random_dims(rank - 1, rng, 6);
    dims.push_back(rep % 4 < 2 ? 1 : 2);
    int64_t axis = 1 + static_cast<int64_t>(rng() % static_cast<unsigned>(rank - 2));
    bool inverse = rep % 3 == 1, onesided = rep % 5 >= 3;
    if (inverse && onesided && dims[static_cast<size_t>(axis)] < 2) dims[static_cast<size_t>(axis)] = 2;
    AttrMap attrs = {{"axis", I(rep % 2 ? axis : axis - rank)}, {"inverse", I(inverse)}, {"onesided", I(onesided)}};
    std::vector<Tensor> ins = {random_tensor(d, dims, rng)};
    std::vector<int> consts;
    if (rep % 4 == 3) {
      ins.push_back(i64({}, {1 + static_cast<int64_t>(rng() % 8)}));
      consts.push_back(1);
    }
    expect_compiled_matches({.op = "DFT", .inputs = ins, .attrs = attrs, .opset = 17, .constant_inputs = consts},
                            tol_for(d, 8));
  }
}

TEST(CompiledMiscSignal, DftOpset20AxisInput) {
  std::mt19937 rng(12);
  for (int rep = 0; rep < 10; ++rep) {
    Dims dims = random_dims(3, rng, 5);
    dims.push_back(1 + rep % 2);
    int64_t axis = rep % 3 == 0 ? 2 : 1;
    bool inverse = rep % 2 == 0, onesided = rep % 3 == 1;
    if (inverse && onesided && dims[static_cast<size_t>(axis)] < 2) dims[static_cast<size_t>(axis)] = 2;
    std::vector<Tensor> ins = {random_tensor(DType::F32, dims, rng)};
    std::vector<int> consts;
    if (rep % 2) {
      ins.push_back(i64({}, {2 + static_cast<int64_t>(rng() % 6)}));
      consts.push_back(1);
    } else {
      ins.push_back(Tensor());
    }
    if (rep % 4 != 3) {
      ins.push_back(i64({}, {rep % 2 ? axis : axis - 4}));
      consts.push_back(2);
    }
    if (rep % 4 == 3) axis = 2;  // default -2
    expect_compiled_matches({.op = "DFT", .inputs = ins, .attrs = {{"inverse", I(inverse)}, {"onesided", I(onesided)}},
                             .opset = 20, .constant_inputs = consts},
                            tol_for(DType::F32, 8));
  }
}

TEST(CompiledMiscSignal, Stft) {
  std::mt19937 rng(13);
  for (int rep = 0; rep < 12; ++rep) {
    DType d = rep % 4 == 3 ? DType::F64 : DType::F32;
    int64_t B = 1 + static_cast<int64_t>(rng() % 2), len = 4 + static_cast<int64_t>(rng() % 12);
    int64_t fl = 1 + static_cast<int64_t>(rng() % std::min<int64_t>(len, 8));
    int64_t step = 1 + static_cast<int64_t>(rng() % 4);
    Tensor sig = random_tensor(d, {B, len, rep % 3 == 2 ? 2 : 1}, rng);
    std::vector<Tensor> ins = {sig, i64({}, {step})};
    std::vector<int> consts = {1};
    if (rep % 2) {
      ins.push_back(random_tensor(d, {fl}, rng, 0, 1));
      if (rep % 4 == 1) {
        ins.push_back(i64({}, {fl}));
        consts.push_back(3);
      }
    } else {
      ins.push_back(Tensor());
      ins.push_back(i64({}, {fl}));
      consts.push_back(3);
    }
    expect_compiled_matches({.op = "STFT", .inputs = ins, .attrs = {{"onesided", I(rep % 3 == 0 ? 0 : 1)}},
                             .opset = 17, .constant_inputs = consts},
                            tol_for(d, fl));
  }
}

TEST(CompiledMiscSignal, MelWeightMatrix) {
  struct Cfg {
    int64_t mel, dft, rate;
    float lo, hi;
    int64_t dtype;
  };
  const Cfg cfgs[] = {{8, 64, 16000, 0, 8000, 1},   {4, 32, 8000, 100, 3000, 11}, {10, 128, 22050, 20, 11000, 1},
                      {3, 16, 1000, 0, 500, 7},     {6, 50, 4000, 300, 1900, 10}};
  for (const Cfg& c : cfgs) {
    AttrMap attrs;
    if (c.dtype != 1) attrs["output_datatype"] = I(c.dtype);
    expect_compiled_matches({.op = "MelWeightMatrix",
                             .inputs = {i64({}, {c.mel}), i64({}, {c.dft}), i64({}, {c.rate}), f32({}, {c.lo}),
                                        f32({}, {c.hi})},
                             .attrs = attrs, .opset = 17, .constant_inputs = {0, 1, 2, 3, 4}});
  }
}

}  // namespace
}  // namespace tessera::testing
