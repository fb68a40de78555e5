// Compiled binary arithmetic, comparisons, logic, bitwise ops, Where and the
// variadic ops against the reference, including legacy (opset < 7/8) forms.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute ai(int64_t v) { return Attribute::of_int(v); }

Tolerance tol_for(DType d) {
  if (d == DType::F16) return {2e-3, 1e-3};
  if (d == DType::BF16) return {1e-2, 1e-2};
  return {1e-5, 1e-6};
}

// Two broadcast-compatible shapes: b drops leading dims and has some 1s.
std::pair<Dims, Dims> bshapes(std::mt19937& rng, int rank) {
  Dims a = random_dims(rank, rng, 5), b = a;
  for (auto& d : b)
    if (rng() % 3 == 0) d = 1;
  if (rng() % 2 && !b.empty()) b.erase(b.begin());
  if (rng() % 2) std::swap(a, b);
  return {a, b};
}

// Nonzero random values (divisors).
Tensor nonzero(DType d, const Dims& dims, std::mt19937& rng, double lo, double hi) {
  Tensor t = random_tensor(DType::F64, dims, rng, lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double& v = t.data<double>()[i];
    if (!is_float(d)) v = std::floor(v);
    if (v == 0) v = 1;
  }
  return t.cast(d);
}

TEST(CompiledElementwiseBinary, Arithmetic) {
  std::mt19937 rng(21);
  const DType types[] = {DType::F32, DType::F16, DType::F64, DType::I32, DType::I8, DType::U8, DType::I64,
                         DType::U64, DType::BF16, DType::U16};
  int n = 0;
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    for (int rep = 0; rep < 4; ++rep) {
      DType d = types[n++ % 10];
      auto [a, b] = bshapes(rng, 1 + rep % 3);
      bool sgn = is_signed(d) || is_float(d);
      Tensor x = random_tensor(d, a, rng, sgn ? -100 : 0, 120);
      Tensor y = std::string(op) == "Div" ? nonzero(d, b, rng, sgn ? -9 : 1, 9) : random_tensor(d, b, rng, sgn ? -100 : 0, 120);
      expect_compiled_matches({op, {x, y}}, tol_for(d));
    }
  // Integer division truncates toward zero; INT_MIN / -1 wraps; wrapping products.
  expect_compiled_matches({"Div", {Tensor::from<int32_t>({6}, {-7, 7, -7, 7, std::numeric_limits<int32_t>::min(), 0}),
                                   Tensor::from<int32_t>({6}, {2, -2, -2, 2, -1, 5})}});
  expect_compiled_matches({"Mul", {Tensor::from<int8_t>({3}, {100, -100, 127}), Tensor::from<int8_t>({3}, {3, 3, 127})}});
  expect_compiled_matches({"Add", {Tensor::from<uint8_t>({2}, {250, 3}), Tensor::from<uint8_t>({2}, {10, 255})}});
}

TEST(CompiledElementwiseBinary, Mod) {
  std::mt19937 rng(22);
  for (int fmod = 0; fmod < 2; ++fmod)
    for (DType d : {DType::F32, DType::F64, DType::F16, DType::I32, DType::I8, DType::I64, DType::U16}) {
      auto [a, b] = bshapes(rng, 2);
      bool sgn = is_signed(d) || is_float(d);
      Tensor x = random_tensor(d, a, rng, sgn ? -50 : 0, 50), y = nonzero(d, b, rng, sgn ? -7 : 1, 7);
      expect_compiled_matches({"Mod", {x, y}, {{"fmod", ai(fmod)}}}, tol_for(d));
    }
  expect_compiled_matches({"Mod", {Tensor::from<int64_t>({4}, {-7, 7, -7, std::numeric_limits<int64_t>::min()}),
                                   Tensor::from<int64_t>({4}, {2, -2, -2, -1})}});
  expect_compiled_matches({"Mod", {f32({5}, {-7.5f, 7.5f, -0.0f, 6.0f, 1e-3f}), f32({5}, {2, -2, 3, -3, 0.25f})},
                           {{"fmod", ai(1)}}});
}

TEST(CompiledElementwiseBinary, Pow) {
  std::mt19937 rng(23);
  auto t = [&](DType d, const Dims& dims, double lo, double hi) { return random_tensor(d, dims, rng, lo, hi); };
  expect_compiled_matches({"Pow", {t(DType::F32, {3, 4}, 0.1, 4), t(DType::F32, {4}, -3, 3)}});
  expect_compiled_matches({"Pow", {t(DType::F32, {3, 4}, -4, 4), t(DType::I32, {3, 1}, -4, 5)}});
  expect_compiled_matches({"Pow", {t(DType::F64, {10}, 0.1, 4), t(DType::F32, {10}, -3, 3)}});
  expect_compiled_matches({"Pow", {t(DType::F32, {10}, 0.1, 4), t(DType::F64, {10}, -3, 3)}});
  expect_compiled_matches({"Pow", {t(DType::F16, {2, 5}, 0.1, 3), t(DType::F16, {5}, -2, 2)}}, tol_for(DType::F16));
  expect_compiled_matches({"Pow", {t(DType::I32, {12}, -6, 6), t(DType::I32, {12}, -3, 12)}});
  expect_compiled_matches({"Pow", {t(DType::I64, {12}, -20, 20), t(DType::I8, {12}, -2, 40)}});
  expect_compiled_matches({"Pow", {t(DType::U8, {12}, 0, 9), t(DType::U8, {12}, 0, 9)}});
  expect_compiled_matches({"Pow", {t(DType::I32, {12}, -5, 5), t(DType::F32, {12}, 0, 3)}});
  expect_compiled_matches({"Pow", {t(DType::I8, {12}, -5, 5), t(DType::U64, {12}, 0, 300)}});
  expect_compiled_matches({"Pow", {Tensor::from<int32_t>({6}, {1, -1, -1, 2, 0, 3}),
                                   Tensor::from<int64_t>({6}, {-5, -3, -4, -1, 0, 25})}});
  expect_compiled_matches({"Pow", {t(DType::F32, {2, 3}, 0.5, 2), t(DType::F32, {2, 3}, -2, 2)}, {}, 1, 7});
}

TEST(CompiledElementwiseBinary, BitShift) {
  std::mt19937 rng(24);
  for (DType d : {DType::U8, DType::U16, DType::U32, DType::U64})
    for (const char* dir : {"LEFT", "RIGHT"}) {
      int bits = static_cast<int>(dtype_size(d)) * 8;
      auto [a, b] = bshapes(rng, 2);
      expect_compiled_matches({"BitShift", {random_tensor(d, a, rng, 0, 250), random_tensor(d, b, rng, 0, bits + 3)},
                               {{"direction", Attribute::of_string(dir)}}});
    }
}

TEST(CompiledElementwiseBinary, Comparisons) {
  std::mt19937 rng(25);
  const DType types[] = {DType::F32, DType::I32, DType::U8, DType::F16, DType::I64, DType::U64, DType::F64, DType::I8};
  int n = 0;
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    for (int rep = 0; rep < 2; ++rep) {
      DType d = types[n++ % 8];
      auto [a, b] = bshapes(rng, 1 + rep);
      expect_compiled_matches({op, {random_tensor(d, a, rng, 0, 4), random_tensor(d, b, rng, 0, 4)}});
    }
  expect_compiled_matches({"Equal", {random_tensor(DType::Bool, {3, 4}, rng), random_tensor(DType::Bool, {4}, rng)}});
  Tensor s = Tensor::from<float>({4}, {NAN, 1, -0.0f, INFINITY}), t = Tensor::from<float>({4}, {NAN, NAN, 0, INFINITY});
  for (const char* op : {"Equal", "Less", "LessOrEqual", "GreaterOrEqual"}) expect_compiled_matches({op, {s, t}});
  // u64 values above INT64_MAX compare unsigned.
  expect_compiled_matches({"Less", {Tensor::from<uint64_t>({2}, {1, 18446744073709551615ull}),
                                    Tensor::from<uint64_t>({2}, {18446744073709551615ull, 1})}});
}

TEST(CompiledElementwiseBinary, LogicBitwiseWhere) {
  std::mt19937 rng(26);
  for (const char* op : {"And", "Or", "Xor"}) {
    auto [a, b] = bshapes(rng, 3);
    expect_compiled_matches({op, {random_tensor(DType::Bool, a, rng), random_tensor(DType::Bool, b, rng)}});
  }
  const DType ints[] = {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32, DType::I64, DType::U64};
  int n = 0;
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    for (int rep = 0; rep < 3; ++rep) {
      DType d = ints[n++ % 8];
      auto [a, b] = bshapes(rng, 2);
      double lo = is_signed(d) ? -1e9 : 0, hi = 4e9;
      expect_compiled_matches({op, {random_tensor(d, a, rng, lo, hi), random_tensor(d, b, rng, lo, hi)}, {}, 1, 18});
    }
  expect_compiled_matches({"BitwiseXor", {Tensor::from<int64_t>({2}, {std::numeric_limits<int64_t>::min(), -1}),
                                          Tensor::from<int64_t>({2}, {-1, 0x5555555555555555})}, {}, 1, 18});
  for (DType d : {DType::F32, DType::I64, DType::Bool, DType::F16, DType::U8}) {
    Dims c = random_dims(3, rng, 4), x = c, y = c;
    x[0] = 1;
    y.erase(y.begin());
    expect_compiled_matches({"Where", {random_tensor(DType::Bool, c, rng), random_tensor(d, x, rng), random_tensor(d, y, rng)}});
  }
  expect_compiled_matches({"Where", {random_tensor(DType::Bool, {4}, rng), random_tensor(DType::F32, {3, 1}, rng),
                                     random_tensor(DType::F32, {}, rng)}});
}

TEST(CompiledElementwiseBinary, Variadic) {
  std::mt19937 rng(27);
  const DType types[] = {DType::F32, DType::I32, DType::F16, DType::F64, DType::U8, DType::I64};
  int n = 0;
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    for (int count = 1; count <= 4; ++count) {
      DType d = types[n++ % 6];
      if (std::string(op) == "Mean" && !is_float(d)) d = DType::F32;
      Dims out = random_dims(3, rng, 4);
      std::vector<Tensor> ins;
      for (int i = 0; i < count; ++i) {
        Dims s = out;
        for (auto& x : s)
          if (rng() % 3 == 0) x = 1;
        if (i % 2) s.erase(s.begin());
        ins.push_back(random_tensor(d, s, rng, 0, 50));
      }
      expect_compiled_matches({op, ins}, tol_for(d));
    }
  // NaN propagates through Max / Min; signed zeros.
  Tensor a = Tensor::from<float>({4}, {NAN, 1, 2, -0.0f}), b = Tensor::from<float>({4}, {3, NAN, 1, 0.0f});
  for (const char* op : {"Max", "Min"}) expect_compiled_matches({op, {a, b, f32({1}, {1.5f})}});
  // Before opset 8: equal shapes.
  for (const char* op : {"Sum", "Mean", "Max", "Min"})
    expect_compiled_matches({op, {random_tensor(DType::F32, {2, 3}, rng), random_tensor(DType::F32, {2, 3}, rng)}, {}, 1, 6});
}

TEST(CompiledElementwiseBinary, LegacyBroadcast) {
  std::mt19937 rng(28);
  auto t = [&](DType d, const Dims& dims) { return random_tensor(d, dims, rng, 0.5, 4); };
  AttrMap bc{{"broadcast", ai(1)}};
  AttrMap bc_axis1{{"broadcast", ai(1)}, {"axis", ai(1)}};
  AttrMap bc_axis0{{"broadcast", ai(1)}, {"axis", ai(0)}};
  AttrMap bc_axis_neg{{"broadcast", ai(1)}, {"axis", ai(-2)}};
  expect_compiled_matches({"Add", {t(DType::F32, {2, 3, 4, 5}), t(DType::F32, {5})}, bc, 1, 6});
  expect_compiled_matches({"Sub", {t(DType::F32, {2, 3, 4, 5}), t(DType::F32, {4, 5})}, bc, 1, 6});
  expect_compiled_matches({"Mul", {t(DType::F32, {2, 3, 4, 5}), t(DType::F32, {3, 4})}, bc_axis1, 1, 6});
  expect_compiled_matches({"Div", {t(DType::F32, {2, 3, 4, 5}), t(DType::F32, {2})}, bc_axis0, 1, 6});
  expect_compiled_matches({"Add", {t(DType::I32, {2, 3, 4}), t(DType::I32, {3, 1})}, bc_axis_neg, 1, 5});
  expect_compiled_matches({"Add", {t(DType::F32, {2, 3}), t(DType::F32, {2, 3})}, {}, 1, 6});
  expect_compiled_matches({"Add", {t(DType::F32, {2, 3}), t(DType::F32, {})}, bc, 1, 6});
  expect_compiled_matches({"Pow", {t(DType::F32, {3, 4}), t(DType::F32, {4})}, bc, 1, 6});
  expect_compiled_matches({"Mul", {t(DType::F32, {3, 4}), t(DType::F32, {3, 4})},
                           {{"consumed_inputs", Attribute::of_ints({0, 0})}}, 1, 5});
  for (const char* op : {"Equal", "Less", "Greater"})
    expect_compiled_matches({op, {random_tensor(DType::I32, {3, 4, 2}, rng, 0, 3), random_tensor(DType::I32, {4}, rng, 0, 3)},
                             bc_axis1, 1, 6});
  for (const char* op : {"And", "Or", "Xor"})
    expect_compiled_matches({op, {random_tensor(DType::Bool, {3, 4}, rng), random_tensor(DType::Bool, {4}, rng)}, bc, 1, 6});
}

}  // namespace
}  // namespace tessera::testing
