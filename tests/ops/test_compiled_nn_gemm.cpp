// Matrix products compiled and checked against the reference on seeded random
// shapes: MatMul, Gemm, MatMulInteger, QLinearMatMul.
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

Tensor q8(DType dt, const Dims& d, std::mt19937& rng) {
  return dt == DType::U8 ? random_tensor(dt, d, rng, 0, 255) : random_tensor(dt, d, rng, -128, 127);
}

// Random MatMul operand shapes: batched with broadcasting, 1-D operands.
std::pair<Dims, Dims> matmul_dims(std::mt19937& rng, int rep) {
  int64_t M = pick(rng, 1, 7), K = pick(rng, 1, 9), N = pick(rng, 1, 20);
  Dims a{M, K}, b{K, N};
  int batch = rep % 4;
  for (int i = 0; i < batch && i < 2; ++i) {
    int64_t d = pick(rng, 1, 3);
    a.insert(a.begin(), rng() % 3 == 0 ? 1 : d);
    b.insert(b.begin(), rng() % 3 == 0 ? 1 : d);
  }
  if (batch == 3) b.erase(b.begin());  // B with fewer batch dims
  if (rep % 7 == 5) a = {K};
  if (rep % 7 == 6) b = {K};
  return {a, b};
}

TEST(CompiledNnGemm, MatMulF32) {
  std::mt19937 rng(201);
  for (int rep = 0; rep < 14; ++rep) {
    auto [a, b] = matmul_dims(rng, rep);
    expect_compiled_matches({"MatMul", {random_tensor(DType::F32, a, rng), random_tensor(DType::F32, b, rng)}},
                            {1e-5, 1e-5});
  }
}

TEST(CompiledNnGemm, MatMulDtypes) {
  std::mt19937 rng(202);
  int rep = 0;
  for (DType dt : {DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64, DType::I8, DType::U8, DType::U32}) {
    auto [a, b] = matmul_dims(rng, rep++);
    double lo = is_float(dt) ? -3 : dt == DType::U8 || dt == DType::U32 ? 0 : -100, hi = is_float(dt) ? 3 : 100;
    Tolerance tol = dt == DType::F16 || dt == DType::BF16 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-12, 1e-12};
    expect_compiled_matches({"MatMul", {random_tensor(dt, a, rng, lo, hi), random_tensor(dt, b, rng, lo, hi)}}, tol);
  }
}

TEST(CompiledNnGemm, GemmF32) {
  std::mt19937 rng(203);
  for (int rep = 0; rep < 12; ++rep) {
    int64_t M = pick(rng, 1, 6), K = pick(rng, 1, 8), N = pick(rng, 1, 20);
    bool ta = rep & 1, tb = rep & 2;
    AttrMap attrs;
    if (ta) attrs["transA"] = Attribute::of_int(1);
    if (tb) attrs["transB"] = Attribute::of_int(1);
    if (rep % 3 == 1) attrs["alpha"] = Attribute::of_float(0.75f);
    if (rep % 5 == 2) attrs["beta"] = Attribute::of_float(-1.5f);
    if (rep == 11) attrs["beta"] = Attribute::of_float(0.0f);
    OpCase c{"Gemm", {random_tensor(DType::F32, ta ? Dims{K, M} : Dims{M, K}, rng),
                      random_tensor(DType::F32, tb ? Dims{N, K} : Dims{K, N}, rng)}, attrs};
    int cm = rep % 4;
    if (cm == 1) c.inputs.push_back(random_tensor(DType::F32, {M, N}, rng));
    else if (cm == 2) c.inputs.push_back(random_tensor(DType::F32, {N}, rng));
    else if (cm == 3) c.inputs.push_back(random_tensor(DType::F32, rep % 8 == 3 ? Dims{M, 1} : Dims{}, rng));
    expect_compiled_matches(c, {1e-5, 1e-5});
  }
}

TEST(CompiledNnGemm, GemmDtypes) {
  std::mt19937 rng(204);
  int rep = 0;
  for (DType dt : {DType::F16, DType::F64, DType::I32, DType::I64, DType::U8}) {
    for (int v = 0; v < 2; ++v, ++rep) {
      int64_t M = pick(rng, 1, 5), K = pick(rng, 1, 6), N = pick(rng, 1, 9);
      AttrMap attrs{{"transB", Attribute::of_int(v)}};
      if (v) attrs["alpha"] = Attribute::of_float(2.5f);
      if (v && rep % 4 == 1) attrs["beta"] = Attribute::of_float(0.5f);
      // Integers small enough that alpha * acc + beta * c fits the type (the
      // reference's double -> integer conversion is undefined beyond it).
      double lo = is_float(dt) ? -3 : dt == DType::U8 ? 0 : -50, hi = is_float(dt) ? 3 : dt == DType::U8 ? 3 : 50;
      OpCase c{"Gemm", {random_tensor(dt, {M, K}, rng, lo, hi), random_tensor(dt, v ? Dims{N, K} : Dims{K, N}, rng, lo, hi),
                        random_tensor(dt, {1, N}, rng, lo, hi)}, attrs};
      Tolerance tol = dt == DType::F16 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-12, 1e-12};
      expect_compiled_matches(c, tol);
    }
  }
}

TEST(CompiledNnGemm, MatMulInteger) {
  std::mt19937 rng(205);
  for (int rep = 0; rep < 7; ++rep) {
    auto [a, b] = matmul_dims(rng, rep);
    DType at = rep % 2 ? DType::I8 : DType::U8, bt = rep % 3 ? DType::U8 : DType::I8;
    int64_t M = a.size() == 1 ? 1 : a[a.size() - 2], N = b.size() == 1 ? 1 : b.back();
    OpCase c{"MatMulInteger", {q8(at, a, rng), q8(bt, b, rng)}};
    if (rep > 0) c.inputs.push_back(rep % 2 && a.size() > 1 ? q8(at, {M}, rng) : q8(at, {}, rng));
    if (rep > 1) c.inputs.push_back(rep % 3 == 0 ? q8(bt, {N}, rng) : q8(bt, {}, rng));
    expect_compiled_matches(c);
  }
}

TEST(CompiledNnGemm, QLinearMatMul) {
  std::mt19937 rng(206);
  for (int rep = 0; rep < 7; ++rep) {
    auto [a, b] = matmul_dims(rng, rep);
    DType at = rep % 2 ? DType::I8 : DType::U8, bt = rep % 3 ? DType::U8 : DType::I8,
          yt = rep % 4 < 2 ? DType::I8 : DType::U8;
    int64_t M = a.size() == 1 ? 1 : a[a.size() - 2], N = b.size() == 1 ? 1 : b.back();
    bool per_row = rep % 2 && a.size() > 1, per_col = rep % 3 == 0;
    OpCase c{"QLinearMatMul",
             {q8(at, a, rng), random_tensor(DType::F32, per_row ? Dims{M} : Dims{}, rng, 0.01, 0.1),
              per_row ? q8(at, {M}, rng) : q8(at, {}, rng), q8(bt, b, rng),
              random_tensor(DType::F32, per_col ? Dims{N} : Dims{}, rng, 0.01, 0.1),
              per_col ? q8(bt, {N}, rng) : q8(bt, {}, rng), random_tensor(DType::F32, {}, rng, 0.05, 0.5), q8(yt, {}, rng)}};
    expect_compiled_matches(c);
  }
}

}  // namespace
}  // namespace tessera::testing
