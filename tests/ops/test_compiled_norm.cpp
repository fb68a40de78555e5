// Softmax family and normalizations compiled and checked against the reference.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Tolerance tol_for(DType t) {
  if (t == DType::F16 || t == DType::BF16) return {1e-2, 1e-2};
  if (t == DType::F64) return {1e-9, 1e-12};
  return {1e-5, 1e-6};
}

TEST(CompiledNorm, SoftmaxFamily) {
  std::mt19937 rng(21);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (int rep = 0; rep < 8; ++rep) {
      int rank = 1 + rep % 4;
      Dims d = random_dims(rank, rng, 6);
      DType t = rep == 5 ? DType::F16 : rep == 6 ? DType::F64 : DType::F32;
      Tensor x = random_tensor(t, d, rng, -4, 4);
      if (std::string(op) == "Hardmax" && rep % 2) x = x.cast(DType::I32).cast(t);  // ties
      OpCase c{op, {x}};
      c.opset = rep % 3 == 0 ? 11 : 13;
      int64_t axis = static_cast<int64_t>(rng() % static_cast<unsigned>(rank));
      if (rep % 2) axis -= rank;
      if (rep != 7) c.attrs["axis"] = Attribute::of_int(axis);
      expect_compiled_matches(c, tol_for(t));
    }
}

TEST(CompiledNorm, SoftmaxEdges) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({4, 4}, {1, nan, 3, 2, -inf, -inf, -inf, -inf, 2, 2, -inf, 2, inf, 1, inf, 0});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    expect_compiled_matches({op, {x}});
    // Opset 11 with axis == rank: rows of one element.
    expect_compiled_matches({op, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"axis", Attribute::of_int(2)}}, 1, 11});
    expect_compiled_matches({op, {f32({}, {2.5f})}});
  }
  std::mt19937 rng(22);
  expect_compiled_matches({"Softmax", {random_tensor(DType::F32, {4, 256}, rng, -10, 10)}});
  expect_compiled_matches({"Softmax", {random_tensor(DType::F32, {2, 64, 3}, rng, -10, 10)}, {{"axis", Attribute::of_int(1)}}});
  // Big enough for parallel loops.
  expect_compiled_matches({"Softmax", {random_tensor(DType::F32, {64, 520}, rng, -10, 10)}});
  expect_compiled_matches({"LogSoftmax", {random_tensor(DType::F32, {520, 64}, rng, -10, 10)}, {{"axis", Attribute::of_int(0)}}});
}

// Softmax, and LayerNormalization, over rows of odd lengths (1, lanes - 1,
// ViT's 197, thousands; 5000 past the f32 sum's limit), of values of every
// scale: spread around 0, large with a small spread (exp overflows f32 unless
// the maximum is subtracted first; a mean far from 0), huge and spread, tiny.
// Tolerances relative to each element: a row of 3000 holds values near 3e-4.
Tensor scaled_rows(int64_t n, int kind, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(3 * n));
  for (double& e : v) {
    const double r = u(rng);
    e = kind == 0 ? 8 * r : kind == 1 ? 100 + 4 * r : kind == 2 ? 1e6 * r : 1e-30 * r;
  }
  return Tensor::from<double>({3, n}, v).cast(DType::F32);
}

TEST(CompiledNorm, SoftmaxRowLengthsAndScales) {
  std::mt19937 rng(27);
  for (int64_t n : {1, 15, 197, 3000, 5000})
    for (int kind = 0; kind < 4; ++kind)
      expect_compiled_matches({"Softmax", {scaled_rows(n, kind, rng)}}, {1e-5, 1e-10});
  for (DType t : {DType::F16, DType::F64})
    expect_compiled_matches({"Softmax", {random_tensor(t, {2, 197}, rng, -8, 8)}}, tol_for(t));
}

TEST(CompiledNorm, LayerNormRowLengthsAndScales) {
  std::mt19937 rng(28);
  for (int64_t n : {1, 15, 197, 3000})
    for (int kind = 0; kind < 4; ++kind) {
      Tensor x = scaled_rows(n, kind, rng);
      Tensor s = random_tensor(DType::F32, {n}, rng), b = random_tensor(DType::F32, {n}, rng);
      OpCase c{"LayerNormalization", {x, s, b}};
      c.opset = 17;
      c.attrs["axis"] = Attribute::of_int(-1);
      c.attrs["epsilon"] = Attribute::of_float(kind == 3 ? 1e-12f : 1e-5f);
      expect_compiled_matches(c);
    }
}

TEST(CompiledNorm, LayerAndRms) {
  std::mt19937 rng(23);
  for (int rep = 0; rep < 10; ++rep) {
    int rank = 1 + rep % 4;
    Dims d = random_dims(rank, rng, 6);
    DType t = rep == 7 ? DType::F16 : rep == 8 ? DType::F64 : DType::F32;
    int64_t axis = static_cast<int64_t>(rng() % static_cast<unsigned>(rank));
    Dims pd(d.begin() + axis, d.end());
    if (rep % 3 == 1 && !pd.empty()) pd.erase(pd.begin());  // lower-rank scale, broadcast
    Tensor x = random_tensor(t, d, rng), s = random_tensor(t, pd, rng), b = random_tensor(t, pd, rng);
    OpCase ln{"LayerNormalization", {x, s}, {}, 1 + rep % 3};
    if (rep % 2 == 0) ln.inputs.push_back(b);
    ln.attrs["axis"] = Attribute::of_int(rep % 2 ? axis - rank : axis);
    if (rep % 4 == 3) ln.attrs["epsilon"] = Attribute::of_float(0.1f);
    if (rep == 5) ln.attrs["stash_type"] = Attribute::of_int(static_cast<int64_t>(DType::F64));
    expect_compiled_matches(ln, tol_for(t));
    OpCase rms{"RMSNormalization", {x, s}};
    rms.opset = 23;
    rms.attrs["axis"] = Attribute::of_int(axis);
    expect_compiled_matches(rms, tol_for(t));
  }
  // A BERT-like row.
  Tensor x = random_tensor(DType::F32, {2, 3, 128}, rng);
  expect_compiled_matches({"LayerNormalization", {x, random_tensor(DType::F32, {128}, rng),
                                                  random_tensor(DType::F32, {128}, rng)}, {}, 3});
}

TEST(CompiledNorm, BatchNorm) {
  std::mt19937 rng(24);
  for (int rep = 0; rep < 8; ++rep) {
    Dims d = random_dims(2 + rep % 3, rng, 5);
    int64_t C = d[1];
    DType t = rep == 6 ? DType::F16 : rep == 7 ? DType::F64 : DType::F32;
    Tensor x = random_tensor(t, d, rng), s = random_tensor(t, {C}, rng), b = random_tensor(t, {C}, rng),
           m = random_tensor(t, {C}, rng), v = random_tensor(t, {C}, rng, 0.1, 2);
    OpCase c{"BatchNormalization", {x, s, b, m, v}};
    if (rep % 3 == 1) c.attrs["epsilon"] = Attribute::of_float(0.01f);
    if (rep % 4 == 2) {  // training mode: batch statistics and running outputs
      c.num_outputs = 3;
      c.attrs["training_mode"] = Attribute::of_int(1);
      c.attrs["momentum"] = Attribute::of_float(0.8f);
    }
    expect_compiled_matches(c, tol_for(t));
  }
  // Opset 9 with the saved statistics (training by output count).
  Tensor x = random_tensor(DType::F32, {2, 3, 4}, rng);
  auto p = [&](double lo) { return random_tensor(DType::F32, {3}, rng, lo, 2); };
  expect_compiled_matches({"BatchNormalization", {x, p(-2), p(-2), p(-2), p(0.1)}, {}, 5, 9});
  // Opset 7 with spatial = 0: one parameter per (channel, position).
  auto q = [&](double lo) { return random_tensor(DType::F32, {3, 4}, rng, lo, 2); };
  expect_compiled_matches({"BatchNormalization", {x, q(-2), q(-2), q(-2), q(0.1)}, {{"spatial", Attribute::of_int(0)}}, 1, 7});
  // Opset 6 inference with is_test and extra outputs (copies).
  expect_compiled_matches({"BatchNormalization", {x, p(-2), p(-2), p(-2), p(0.1)}, {{"is_test", Attribute::of_int(1)}}, 5, 6});
}

TEST(CompiledNorm, InstanceAndGroup) {
  std::mt19937 rng(25);
  for (int rep = 0; rep < 6; ++rep) {
    Dims d = random_dims(3 + rep % 2, rng, 5);
    int64_t C = d[1];
    DType t = rep == 4 ? DType::F16 : rep == 5 ? DType::F64 : DType::F32;
    expect_compiled_matches({"InstanceNormalization", {random_tensor(t, d, rng), random_tensor(t, {C}, rng),
                                                       random_tensor(t, {C}, rng)}}, tol_for(t));
  }
  for (int rep = 0; rep < 6; ++rep) {
    int64_t G = 1 + rep % 3, C = G * (1 + rep % 2);
    Dims d{2, C, 3, 1 + rep};
    if (rep == 5) d = {2, C};
    DType t = rep == 4 ? DType::BF16 : DType::F32;
    int64_t ns = rep % 2 ? G : C;  // opset 18 per-group or 21 per-channel parameters
    OpCase c{"GroupNormalization", {random_tensor(t, d, rng), random_tensor(t, {ns}, rng), random_tensor(t, {ns}, rng)}};
    c.opset = rep % 2 ? 18 : 21;
    c.attrs["num_groups"] = Attribute::of_int(G);
    if (rep == 2) c.attrs["epsilon"] = Attribute::of_float(0.5f);
    expect_compiled_matches(c, tol_for(t));
  }
}

TEST(CompiledNorm, MvnLpLrn) {
  std::mt19937 rng(26);
  for (int rep = 0; rep < 5; ++rep) {
    DType t = rep == 4 ? DType::F64 : DType::F32;
    Tensor x = random_tensor(t, {2, 3, 2, 4}, rng);
    OpCase c{"MeanVarianceNormalization", {x}};
    if (rep == 1) c.attrs["axes"] = Attribute::of_ints({1});
    if (rep == 2) c.attrs["axes"] = Attribute::of_ints({-1, 0, -1});
    if (rep == 3) c.attrs["axes"] = Attribute::of_ints({0, 1, 2, 3});
    expect_compiled_matches(c, tol_for(t));
  }
  for (int rep = 0; rep < 6; ++rep) {
    int rank = 1 + rep % 3;
    Dims d = random_dims(rank, rng, 6);
    DType t = rep == 5 ? DType::F16 : DType::F32;
    Tensor x = random_tensor(t, d, rng);
    OpCase c{"LpNormalization", {x}};
    c.attrs["p"] = Attribute::of_int(1 + rep % 2);
    c.attrs["axis"] = Attribute::of_int(static_cast<int64_t>(rng() % static_cast<unsigned>(rank)));
    expect_compiled_matches(c, tol_for(t));
  }
  expect_compiled_matches({"LpNormalization", {f32({2, 3}, {0, 0, 0, 1, 2, 3})}});
  for (int rep = 0; rep < 5; ++rep) {
    Dims d = {2, 2 + rep, 3, 2};
    if (rep == 4) d = {1, 7};
    OpCase c{"LRN", {random_tensor(rep == 3 ? DType::F64 : DType::F32, d, rng)}};
    c.attrs["size"] = Attribute::of_int(1 + rep);
    if (rep % 2) {
      c.attrs["alpha"] = Attribute::of_float(0.01f);
      c.attrs["beta"] = Attribute::of_float(0.5f);
      c.attrs["bias"] = Attribute::of_float(2.0f);
    }
    expect_compiled_matches(c, {1e-5, 1e-6});
  }
}

}  // namespace
}  // namespace tessera::testing
