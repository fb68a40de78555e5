// Pooling ops compiled and checked against the reference on seeded random
// shapes and attributes: MaxPool (values and Indices), AveragePool, LpPool,
// the global pools and MaxUnpool.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

using Ints = std::vector<int64_t>;

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

Dims cat(Dims a, const Dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Random pool attributes for `nsp` spatial dims; returns the input's spatial dims.
Dims random_pool(std::mt19937& rng, int nsp, AttrMap& attrs, bool dilations = true) {
  Dims in;
  Ints k, s, d, pads(static_cast<size_t>(2 * nsp));
  int64_t max_in = nsp == 1 ? 14 : nsp == 2 ? 8 : 4;
  for (int i = 0; i < nsp; ++i) {
    in.push_back(pick(rng, 2, max_in));
    k.push_back(pick(rng, 1, 3));
    s.push_back(pick(rng, 1, 3));
    d.push_back(dilations ? pick(rng, 1, 2) : 1);
  }
  int mode = static_cast<int>(pick(rng, 0, 5));
  for (int i = 0; i < nsp; ++i) {
    size_t u = static_cast<size_t>(i), v = u + static_cast<size_t>(nsp);
    int64_t ek = (k[u] - 1) * d[u] + 1;
    pads[u] = pick(rng, 0, std::min<int64_t>(2, k[u] - 1));
    pads[v] = pick(rng, 0, std::min<int64_t>(2, k[u] - 1));
    if (in[u] < ek) in[u] = ek;
  }
  attrs["kernel_shape"] = Attribute::of_ints(k);
  attrs["strides"] = Attribute::of_ints(s);
  if (dilations) attrs["dilations"] = Attribute::of_ints(d);
  if (mode == 1) attrs["auto_pad"] = Attribute::of_string("SAME_UPPER");
  else if (mode == 2) attrs["auto_pad"] = Attribute::of_string("SAME_LOWER");
  else if (mode == 3) attrs["auto_pad"] = Attribute::of_string("VALID");
  else attrs["pads"] = Attribute::of_ints(pads);
  if (pick(rng, 0, 2) == 0 && mode != 1 && mode != 2) attrs["ceil_mode"] = Attribute::of_int(1);
  return in;
}

TEST(CompiledNnPool, MaxPoolRandom) {
  std::mt19937 rng(301);
  for (int rep = 0; rep < 16; ++rep) {
    int nsp = 1 + rep % 3;
    AttrMap attrs;
    Dims in = random_pool(rng, nsp, attrs);
    bool indices = rep % 2;
    if (indices && rep % 4 == 3) attrs["storage_order"] = Attribute::of_int(1);
    OpCase c{"MaxPool", {random_tensor(DType::F32, cat({pick(rng, 1, 2), pick(rng, 1, 3)}, in), rng)}, attrs,
             indices ? 2 : 1};
    expect_compiled_matches(c);
  }
}

TEST(CompiledNnPool, MaxPoolDtypes) {
  std::mt19937 rng(302);
  int rep = 0;
  for (DType dt : {DType::F16, DType::BF16, DType::F64, DType::I8, DType::U8}) {
    for (int outs = 1; outs <= 2; ++outs, ++rep) {
      AttrMap attrs;
      Dims in = random_pool(rng, 2, attrs);
      double lo = dt == DType::U8 ? 0 : dt == DType::I8 ? -128 : -3, hi = is_float(dt) ? 3 : 127;
      expect_compiled_matches({"MaxPool", {random_tensor(dt, cat({1, 2}, in), rng, lo, hi)}, attrs, outs});
    }
  }
}

TEST(CompiledNnPool, MaxPoolNanAndInf) {
  // NaN propagates (the first NaN of a window wins), +inf and -inf compare, ties pick the first tap.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({1, 1, 2, 8}, {1, nan, 3, inf, -inf, 2, 2, nan, inf, 0, nan, 5, 5, -inf, -inf, 7});
  for (int outs = 1; outs <= 2; ++outs) {
    expect_compiled_matches({"MaxPool", {x}, {{"kernel_shape", Attribute::of_ints({2, 2})}}, outs});
    expect_compiled_matches({"MaxPool", {x}, {{"kernel_shape", Attribute::of_ints({1, 3})},
                                              {"pads", Attribute::of_ints({0, 1, 0, 1})}}, outs});
  }
  expect_compiled_matches({"GlobalMaxPool", {x}});
}

TEST(CompiledNnPool, MaxPoolWide) {
  // Output rows wider than a vector.
  std::mt19937 rng(303);
  for (int outs = 1; outs <= 2; ++outs)
    expect_compiled_matches({"MaxPool", {random_tensor(DType::F32, {1, 2, 3, 70}, rng)},
                             {{"kernel_shape", Attribute::of_ints({2, 3})}, {"pads", Attribute::of_ints({1, 1, 0, 1})}},
                             outs});
}

TEST(CompiledNnPool, AveragePoolRandom) {
  std::mt19937 rng(304);
  for (int rep = 0; rep < 14; ++rep) {
    int nsp = 1 + rep % 3;
    AttrMap attrs;
    Dims in = random_pool(rng, nsp, attrs);
    if (rep % 2) attrs["count_include_pad"] = Attribute::of_int(1);
    DType dt = rep == 12 ? DType::F16 : rep == 13 ? DType::F64 : DType::F32;
    OpCase c{"AveragePool", {random_tensor(dt, cat({1, pick(rng, 1, 3)}, in), rng)}, attrs, 1, 19};
    expect_compiled_matches(c, dt == DType::F16 ? Tolerance{1e-3, 1e-3} : Tolerance{});
  }
}

TEST(CompiledNnPool, LpPool) {
  std::mt19937 rng(305);
  for (int rep = 0; rep < 6; ++rep) {
    AttrMap attrs;
    Dims in = random_pool(rng, 1 + rep % 2, attrs, rep >= 3);
    if (rep % 3 == 1) attrs["p"] = Attribute::of_int(3);
    if (rep % 3 == 2) attrs["p"] = Attribute::of_int(1);
    DType dt = rep == 5 ? DType::F64 : DType::F32;
    expect_compiled_matches({"LpPool", {random_tensor(dt, cat({1, 2}, in), rng)}, attrs, 1, 18}, {1e-5, 1e-5});
  }
}

TEST(CompiledNnPool, GlobalPools) {
  std::mt19937 rng(306);
  int rep = 0;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    for (int r = 2; r <= 5; ++r, ++rep) {
      DType dt = rep % 4 == 1 ? DType::F16 : rep % 4 == 2 ? DType::F64 : DType::F32;
      OpCase c{op, {random_tensor(dt, random_dims(r, rng, r > 3 ? 4 : 9), rng)}};
      if (std::string(op) == "GlobalLpPool" && r == 3) c.attrs["p"] = Attribute::of_int(3);
      expect_compiled_matches(c, dt == DType::F16 ? Tolerance{1e-3, 1e-3} : Tolerance{1e-5, 1e-5});
    }
  }
}

TEST(CompiledNnPool, MaxUnpool) {
  std::mt19937 rng(307);
  for (int rep = 0; rep < 5; ++rep) {
    int nsp = 1 + rep % 2;
    Ints k, s;
    Dims in, full;
    for (int i = 0; i < nsp; ++i) {
      k.push_back(pick(rng, 1, 3));
      s.push_back(pick(rng, 1, 2));
      in.push_back(pick(rng, 2, 5));
      full.push_back((in.back() - 1) * s.back() + k.back());
    }
    Dims xd = cat({1, 2}, in), yd = cat({1, 2}, full);
    // Indices into the default-shaped result (repeats allowed: the last write wins).
    std::vector<int64_t> idx(static_cast<size_t>(numel_of(xd)));
    for (auto& v : idx) v = pick(rng, 0, numel_of(yd) - 1);
    OpCase c{"MaxUnpool", {random_tensor(DType::F32, xd, rng), Tensor::from<int64_t>(xd, idx)},
             {{"kernel_shape", Attribute::of_ints(k)}, {"strides", Attribute::of_ints(s)}}};
    if (rep >= 3) {  // an explicit output_shape, cropping or extending
      Ints os = yd;
      for (size_t i = 2; i < os.size(); ++i) os[i] += rep == 3 ? -1 : 2;
      c.inputs.push_back(Tensor::from<int64_t>({static_cast<int64_t>(os.size())}, os));
      c.constant_inputs = {2};
    }
    expect_compiled_matches(c);
  }
  // f16 values.
  Tensor x = random_tensor(DType::F16, {1, 1, 2, 2}, rng);
  expect_compiled_matches({"MaxUnpool", {x, i64({1, 1, 2, 2}, {0, 3, 9, 15})},
                           {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}}});
}

}  // namespace
}  // namespace tessera::testing
