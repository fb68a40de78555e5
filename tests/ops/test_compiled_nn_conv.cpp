// Convolutions compiled and checked against the reference on seeded random
// shapes and attributes: Conv, ConvTranspose, ConvInteger, QLinearConv,
// DeformConv, Col2Im.
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

using Ints = std::vector<int64_t>;

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// A random forward-window geometry: input spatial dims, attributes, with the
// window fitting the (padded) input.
struct Geo {
  Dims in;
  AttrMap attrs;
  Ints k;
};

Geo random_geo(std::mt19937& rng, int nsp, bool allow_auto = true) {
  Geo g;
  int64_t max_in = nsp == 1 ? 12 : nsp == 2 ? 7 : 4;
  Ints s, d, pads(static_cast<size_t>(2 * nsp));
  for (int i = 0; i < nsp; ++i) {
    g.in.push_back(pick(rng, 2, max_in));
    g.k.push_back(pick(rng, 1, 3));
    s.push_back(pick(rng, 1, 2));
    d.push_back(pick(rng, 1, 2));
  }
  int mode = allow_auto ? static_cast<int>(pick(rng, 0, 5)) : 0;
  for (int i = 0; i < nsp; ++i) {
    size_t u = static_cast<size_t>(i);
    int64_t ek = (g.k[u] - 1) * d[u] + 1;
    pads[u] = pick(rng, 0, std::min<int64_t>(2, ek - 1));
    pads[u + static_cast<size_t>(nsp)] = pick(rng, 0, std::min<int64_t>(2, ek - 1));
    // The window must fit the padded input (VALID: the input itself).
    int64_t room = g.in[u] + (mode == 3 ? 0 : pads[u] + pads[u + static_cast<size_t>(nsp)]);
    if (ek > room) d[u] = 1;
    ek = (g.k[u] - 1) * d[u] + 1;
    if (ek > room) g.in[u] += ek - room;
  }
  g.attrs["strides"] = Attribute::of_ints(s);
  if (pick(rng, 0, 1)) g.attrs["dilations"] = Attribute::of_ints(d);
  else
    for (int i = 0; i < nsp; ++i) {
      size_t u = static_cast<size_t>(i);
      d[u] = 1;
      int64_t room = g.in[u] + (mode == 3 ? 0 : pads[u] + pads[u + static_cast<size_t>(nsp)]);
      if (g.k[u] > room) g.in[u] += g.k[u] - room;
    }
  if (mode == 1) g.attrs["auto_pad"] = Attribute::of_string("SAME_UPPER");
  else if (mode == 2) g.attrs["auto_pad"] = Attribute::of_string("SAME_LOWER");
  else if (mode == 3) g.attrs["auto_pad"] = Attribute::of_string("VALID");
  else g.attrs["pads"] = Attribute::of_ints(pads);
  return g;
}

Dims cat(Dims a, const Dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CompiledNnConv, ConvRandom) {
  std::mt19937 rng(101);
  for (int rep = 0; rep < 18; ++rep) {
    int nsp = 1 + rep % 3;
    Geo g = random_geo(rng, nsp);
    int64_t group = rep % 4 == 1 ? 2 : 1;
    int64_t C = group * pick(rng, 1, 3), M = group * pick(rng, 1, 3), N = pick(rng, 1, 2);
    if (rep % 4 == 3) {  // depthwise, with a channel multiplier
      C = pick(rng, 2, 4);
      group = C;
      M = C * pick(rng, 1, 2);
    }
    g.attrs["group"] = Attribute::of_int(group);
    if (rep % 2) g.attrs["kernel_shape"] = Attribute::of_ints(g.k);
    OpCase oc{"Conv", {random_tensor(DType::F32, cat({N, C}, g.in), rng), random_tensor(DType::F32, cat({M, C / group}, g.k), rng)},
              g.attrs};
    if (rep % 3 != 2) oc.inputs.push_back(random_tensor(DType::F32, {M}, rng));
    expect_compiled_matches(oc, {1e-4, 1e-4});
  }
}

TEST(CompiledNnConv, ConvDtypes) {
  std::mt19937 rng(102);
  for (DType dt : {DType::F16, DType::BF16, DType::F64}) {
    for (int rep = 0; rep < 2; ++rep) {
      Geo g = random_geo(rng, 2);
      int64_t C = pick(rng, 1, 3), M = pick(rng, 1, 3);
      OpCase oc{"Conv", {random_tensor(dt, cat({1, C}, g.in), rng), random_tensor(dt, cat({M, C}, g.k), rng)}, g.attrs};
      if (rep) oc.inputs.push_back(random_tensor(dt, {M}, rng));
      Tolerance tol = dt == DType::F64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-2, 1e-2};
      expect_compiled_matches(oc, tol);
    }
  }
}

TEST(CompiledNnConv, ConvWideOutput) {
  // An output row wider than a vector, 1x1 kernel and a strided 3x3.
  std::mt19937 rng(103);
  expect_compiled_matches({"Conv", {random_tensor(DType::F32, {1, 3, 4, 37}, rng), random_tensor(DType::F32, {4, 3, 1, 1}, rng)}},
                          {1e-4, 1e-4});
  expect_compiled_matches({"Conv",
                           {random_tensor(DType::F32, {1, 2, 9, 40}, rng), random_tensor(DType::F32, {3, 2, 3, 3}, rng),
                            random_tensor(DType::F32, {3}, rng)},
                           {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 1})}}},
                          {1e-4, 1e-4});
}

TEST(CompiledNnConv, ConvTransposeRandom) {
  std::mt19937 rng(104);
  for (int rep = 0; rep < 14; ++rep) {
    int nsp = 1 + rep % 3;
    Dims in;
    Ints k, s, d, pads, opad;
    for (int i = 0; i < nsp; ++i) {
      in.push_back(pick(rng, 1, nsp == 3 ? 3 : 5));
      k.push_back(pick(rng, 1, 3));
      s.push_back(pick(rng, 1, 3));
      d.push_back(pick(rng, 1, 2));
    }
    for (int i = 0; i < 2 * nsp; ++i) pads.push_back(pick(rng, 0, 1));
    for (int i = 0; i < nsp; ++i) {
      size_t u = static_cast<size_t>(i);
      opad.push_back(pick(rng, 0, s[u] - 1));
      if (s[u] * (in[u] - 1) + opad[u] + (k[u] - 1) * d[u] + 1 - pads[u] - pads[u + static_cast<size_t>(nsp)] <= 0)
        pads[u] = pads[u + static_cast<size_t>(nsp)] = 0;
    }
    int64_t group = rep % 3 == 1 ? 2 : 1;
    int64_t C = group * pick(rng, 1, 2), Mg = pick(rng, 1, 3), N = pick(rng, 1, 2);
    AttrMap attrs{{"strides", Attribute::of_ints(s)}, {"dilations", Attribute::of_ints(d)},
                  {"group", Attribute::of_int(group)}};
    int mode = rep % 5;
    if (mode == 0 || mode == 4) {
      attrs["pads"] = Attribute::of_ints(pads);
      attrs["output_padding"] = Attribute::of_ints(opad);
    } else if (mode == 1) {
      attrs["auto_pad"] = Attribute::of_string("SAME_UPPER");
    } else if (mode == 2) {
      attrs["auto_pad"] = Attribute::of_string("SAME_LOWER");
    } else {
      Ints os;
      for (int i = 0; i < nsp; ++i) {
        size_t u = static_cast<size_t>(i);
        os.push_back(s[u] * (in[u] - 1) + (k[u] - 1) * d[u] + 1 + pick(rng, -1, 1));
        if (os.back() < 1) os.back() = 1;
      }
      attrs["output_shape"] = Attribute::of_ints(os);
    }
    if (mode == 4) attrs["kernel_shape"] = Attribute::of_ints(k);
    OpCase oc{"ConvTranspose",
              {random_tensor(DType::F32, cat({N, C}, in), rng), random_tensor(DType::F32, cat({C, Mg}, k), rng)},
              attrs};
    if (rep % 2) oc.inputs.push_back(random_tensor(DType::F32, {group * Mg}, rng));
    expect_compiled_matches(oc, {1e-4, 1e-4});
  }
}

TEST(CompiledNnConv, ConvTransposeDtypes) {
  std::mt19937 rng(105);
  for (DType dt : {DType::F16, DType::F64}) {
    OpCase oc{"ConvTranspose",
              {random_tensor(dt, {1, 2, 3, 4}, rng), random_tensor(dt, {2, 2, 3, 3}, rng), random_tensor(dt, {2}, rng)},
              {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 0, 0, 1})}}};
    expect_compiled_matches(oc, dt == DType::F64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-2, 1e-2});
  }
}

Tensor q8(DType dt, const Dims& d, std::mt19937& rng) {
  return dt == DType::U8 ? random_tensor(dt, d, rng, 0, 255) : random_tensor(dt, d, rng, -128, 127);
}

TEST(CompiledNnConv, ConvInteger) {
  std::mt19937 rng(106);
  for (int rep = 0; rep < 6; ++rep) {
    DType xt = rep % 2 ? DType::I8 : DType::U8, wt = rep % 3 ? DType::U8 : DType::I8;
    int nsp = 1 + rep % 3;
    Geo g = random_geo(rng, nsp);
    int64_t group = rep == 4 ? 2 : 1;
    int64_t C = group * pick(rng, 1, 2), M = group * pick(rng, 1, 3);
    g.attrs["group"] = Attribute::of_int(group);
    OpCase oc{"ConvInteger", {q8(xt, cat({1, C}, g.in), rng), q8(wt, cat({M, C / group}, g.k), rng)}, g.attrs};
    if (rep > 0) oc.inputs.push_back(q8(xt, {}, rng));
    if (rep > 1) oc.inputs.push_back(rep % 2 ? q8(wt, {M}, rng) : q8(wt, {1}, rng));
    expect_compiled_matches(oc);
  }
}

TEST(CompiledNnConv, QLinearConv) {
  std::mt19937 rng(107);
  for (int rep = 0; rep < 6; ++rep) {
    DType xt = rep % 2 ? DType::I8 : DType::U8, wt = rep % 3 ? DType::U8 : DType::I8,
          yt = rep % 4 < 2 ? DType::U8 : DType::I8;
    int nsp = 1 + rep % 2;
    Geo g = random_geo(rng, nsp);
    int64_t group = rep == 3 ? 2 : 1;
    int64_t C = group * pick(rng, 1, 2), M = group * pick(rng, 1, 3);
    g.attrs["group"] = Attribute::of_int(group);
    Tensor ws = rep % 2 ? random_tensor(DType::F32, {M}, rng, 0.001, 0.02) : random_tensor(DType::F32, {}, rng, 0.001, 0.02);
    OpCase oc{"QLinearConv",
              {q8(xt, cat({1, C}, g.in), rng), random_tensor(DType::F32, {}, rng, 0.01, 0.1), q8(xt, {}, rng),
               q8(wt, cat({M, C / group}, g.k), rng), ws, rep % 2 ? q8(wt, {M}, rng) : q8(wt, {}, rng),
               random_tensor(DType::F32, {}, rng, 0.05, 0.5), q8(yt, {}, rng)},
              g.attrs};
    if (rep >= 2) oc.inputs.push_back(random_tensor(DType::I32, {M}, rng, -2000, 2000));
    expect_compiled_matches(oc);
  }
}

TEST(CompiledNnConv, DeformConv) {
  std::mt19937 rng(108);
  for (int rep = 0; rep < 5; ++rep) {
    int64_t group = rep == 2 ? 2 : 1, og = rep == 3 ? 2 : 1;
    int64_t C = 2 * pick(rng, 1, 2), OC = group * pick(rng, 1, 2), H = pick(rng, 3, 6), W = pick(rng, 3, 6);
    int64_t kh = pick(rng, 1, 3), kw = pick(rng, 1, 3);
    Ints s{pick(rng, 1, 2), pick(rng, 1, 2)}, p{pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1)};
    int64_t oh = (H + p[0] + p[2] - (kh - 1) - 1) / s[0] + 1, ow = (W + p[1] + p[3] - (kw - 1) - 1) / s[1] + 1;
    AttrMap attrs{{"strides", Attribute::of_ints(s)}, {"pads", Attribute::of_ints(p)},
                  {"group", Attribute::of_int(group)}, {"offset_group", Attribute::of_int(og)}};
    DType dt = rep == 4 ? DType::F64 : DType::F32;
    OpCase oc{"DeformConv",
              {random_tensor(dt, {1, C, H, W}, rng), random_tensor(dt, {OC, C / group, kh, kw}, rng),
               random_tensor(dt, {1, og * 2 * kh * kw, oh, ow}, rng, -2, 2)},
              attrs, 1, 19};
    if (rep % 2) oc.inputs.push_back(random_tensor(dt, {OC}, rng));
    else oc.inputs.push_back(Tensor());
    if (rep >= 2) oc.inputs.push_back(random_tensor(dt, {1, og * kh * kw, oh, ow}, rng, 0, 1));
    expect_compiled_matches(oc, {1e-5, 1e-5});
  }
}

TEST(CompiledNnConv, Col2Im) {
  std::mt19937 rng(109);
  struct C2 {
    Ints image, block, dil, str, pads;
  };
  std::vector<C2> cases = {{{4, 5}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                           {{5, 5}, {2, 3}, {1, 2}, {2, 1}, {1, 0, 1, 1}},
                           {{7}, {3}, {2}, {2}, {1, 2}},
                           {{3, 3, 4}, {2, 1, 2}, {1, 1, 1}, {1, 2, 1}, {0, 1, 0, 0, 0, 1}}};
  int rep = 0;
  for (const C2& t : cases) {
    size_t r = t.image.size();
    int64_t L = 1, bp = 1;
    for (size_t d = 0; d < r; ++d) {
      L *= (t.image[d] + t.pads[d] + t.pads[d + r] - t.dil[d] * (t.block[d] - 1) - 1) / t.str[d] + 1;
      bp *= t.block[d];
    }
    for (DType dt : {DType::F32, rep % 2 ? DType::I8 : DType::F16}) {
      Tensor x = dt == DType::I8 ? random_tensor(dt, {1, 2 * bp, L}, rng, -100, 100) : random_tensor(dt, {1, 2 * bp, L}, rng);
      OpCase oc{"Col2Im",
                {x, Tensor::from<int64_t>({static_cast<int64_t>(r)}, t.image), Tensor::from<int64_t>({static_cast<int64_t>(r)}, t.block)},
                {{"dilations", Attribute::of_ints(t.dil)}, {"strides", Attribute::of_ints(t.str)},
                 {"pads", Attribute::of_ints(t.pads)}},
                1, 18, {1, 2}};
      expect_compiled_matches(oc, {1e-5, 1e-5});
    }
    ++rep;
  }
}

}  // namespace
}  // namespace tessera::testing
