// Elementwise ops compiled and checked against the reference on random shapes:
// unary math and activations (binary / logic / variadic ops in
// test_compiled_elementwise_binary.cpp, conversions in _convert.cpp).
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute af(float v) { return Attribute::of_float(v); }
Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute as(const std::string& v) { return Attribute::of_string(v); }

Tolerance tol_for(DType d) {
  if (d == DType::F16) return {2e-3, 1e-3};
  if (d == DType::BF16) return {1e-2, 1e-2};
  return {1e-5, 1e-6};
}

// A float tensor holding NaN, +-inf, +-0 and a few ordinary values.
Tensor specials(DType d) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v{NAN, inf, -inf, 0.0, -0.0, 1.5, -2.25, 0.5, -0.5, 7.0, -7.0, 1e-3};
  return Tensor::from<double>({static_cast<int64_t>(v.size())}, v).cast(d);
}

TEST(CompiledElementwise, BinaryWithBroadcast) {
  std::mt19937 rng(42);
  for (const char* op : {"Add", "Sub", "Mul"})
    for (int rep = 0; rep < 6; ++rep) {
      Dims a = random_dims(1 + rep % 4, rng, 20);
      Dims b = a;
      for (auto& d : b)
        if (rng() % 3 == 0) d = 1;
      if (rep % 2) b.erase(b.begin());
      expect_compiled_matches({op, {random_tensor(DType::F32, a, rng), random_tensor(DType::F32, b, rng)}});
    }
}

TEST(CompiledElementwise, Unary) {
  std::mt19937 rng(7);
  for (const char* op : {"Relu", "Exp", "Tanh", "Sigmoid"})
    for (int rep = 0; rep < 4; ++rep)
      expect_compiled_matches({op, {random_tensor(DType::F32, random_dims(1 + rep, rng, 12), rng)}}, {1e-5, 1e-6});
}

TEST(CompiledElementwise, UnaryMathFloat) {
  std::mt19937 rng(11);
  struct U { const char* op; double lo, hi; };
  std::vector<U> ops{{"Abs", -3, 3},      {"Neg", -3, 3},    {"Sign", -3, 3},    {"Ceil", -5, 5},
                     {"Floor", -5, 5},    {"Round", -5, 5},  {"Reciprocal", 0.2, 4}, {"Sqrt", 0, 9},
                     {"Exp", -8, 8},      {"Log", 0.01, 50}, {"Erf", -3, 3},     {"Sin", -7, 7},
                     {"Cos", -7, 7},      {"Tan", -1.4, 1.4}, {"Asin", -0.99, 0.99}, {"Acos", -0.99, 0.99},
                     {"Atan", -9, 9},     {"Sinh", -5, 5},   {"Cosh", -5, 5},    {"Tanh", -4, 4},
                     {"Asinh", -9, 9},    {"Acosh", 1, 9},   {"Atanh", -0.95, 0.95}, {"Sigmoid", -9, 9}};
  const DType types[] = {DType::F32, DType::F16, DType::F64, DType::BF16};
  int n = 0;
  for (const U& u : ops) {
    DType d = types[n++ % 4];
    Dims dims = random_dims(1 + n % 3, rng, 7);
    expect_compiled_matches({u.op, {random_tensor(d, dims, rng, u.lo, u.hi)}}, tol_for(d));
    if (d != DType::F32)
      expect_compiled_matches({u.op, {random_tensor(DType::F32, dims, rng, u.lo, u.hi)}}, tol_for(DType::F32));
  }
  // Round: halves go to even; tiny arguments of the functions that are ~x near 0.
  expect_compiled_matches({"Round", {f32({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f})}});
  for (const char* op : {"Sinh", "Asinh", "Atanh", "Tan", "Asin", "Atan"})
    expect_compiled_matches({op, {random_tensor(DType::F32, {40}, rng, -1e-4, 1e-4)}}, {1e-5, 1e-12});
}

TEST(CompiledElementwise, UnarySpecialValues) {
  for (const char* op : {"Abs", "Neg", "Sign", "Floor", "Ceil", "Round", "Relu", "IsNaN", "Sigmoid", "Tanh",
                         "HardSigmoid", "HardSwish", "Celu", "Softsign", "LeakyRelu", "Elu", "Softplus", "Exp"})
    expect_compiled_matches({op, {specials(DType::F32)}});
  for (const char* op : {"Sign", "Relu", "IsNaN", "Abs"}) expect_compiled_matches({op, {specials(DType::F16)}});
  for (int neg = 0; neg < 2; ++neg)
    for (int pos = 0; pos < 2; ++pos)
      expect_compiled_matches({"IsInf", {specials(neg ? DType::F64 : DType::F32)},
                               {{"detect_negative", ai(neg)}, {"detect_positive", ai(pos)}}});
  expect_compiled_matches({"IsInf", {specials(DType::F16)}});
  expect_compiled_matches({"IsNaN", {specials(DType::BF16)}});
}

TEST(CompiledElementwise, UnaryInteger) {
  std::mt19937 rng(12);
  const DType ints[] = {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::U16, DType::U32, DType::U64};
  for (DType d : ints) {
    Dims dims = random_dims(2, rng, 6);
    bool sgn = is_signed(d);
    Tensor x = random_tensor(d, dims, rng, sgn ? -100 : 0, 200);
    expect_compiled_matches({"Abs", {x}});
    expect_compiled_matches({"Sign", {x}});
    expect_compiled_matches({"BitwiseNot", {x}, {}, 1, 18});
    if (sgn) {
      expect_compiled_matches({"Neg", {x}});
      expect_compiled_matches({"Relu", {x}});
    }
  }
  // abs / neg of the minimum wrap; erf of integers truncates (|x| >= 6 gives +-1).
  expect_compiled_matches({"Abs", {Tensor::from<int8_t>({4}, {-128, -1, 0, 127})}});
  expect_compiled_matches({"Neg", {Tensor::from<int32_t>({3}, {std::numeric_limits<int32_t>::min(), -5, 9})}});
  expect_compiled_matches({"Erf", {Tensor::from<int32_t>({7}, {-9, -6, -5, 0, 1, 6, 100})}});
  expect_compiled_matches({"Erf", {random_tensor(DType::I64, {20}, rng, -10, 10)}});
  expect_compiled_matches({"Not", {random_tensor(DType::Bool, {3, 5}, rng)}});
}

TEST(CompiledElementwise, Activations) {
  std::mt19937 rng(13);
  struct A { const char* op; AttrMap attrs; int64_t opset; };
  std::vector<A> acts{{"Relu", {}, 14},
                      {"LeakyRelu", {}, 16},
                      {"LeakyRelu", {{"alpha", af(0.37f)}}, 6},
                      {"Elu", {}, 6},
                      {"Elu", {{"alpha", af(0.5f)}}, 6},
                      {"Selu", {}, 6},
                      {"Selu", {{"alpha", af(1.2f)}, {"gamma", af(0.9f)}}, 6},
                      {"Celu", {}, 12},
                      {"Celu", {{"alpha", af(2.5f)}}, 12},
                      {"ThresholdedRelu", {}, 10},
                      {"ThresholdedRelu", {{"alpha", af(-0.5f)}}, 10},
                      {"HardSigmoid", {}, 6},
                      {"HardSigmoid", {{"alpha", af(0.4f)}, {"beta", af(0.3f)}}, 6},
                      {"HardSwish", {}, 14},
                      {"Softplus", {}, 1},
                      {"Softsign", {}, 1},
                      {"Mish", {}, 18},
                      {"Gelu", {}, 20},
                      {"Gelu", {{"approximate", as("tanh")}}, 20},
                      {"Gelu", {{"approximate", as("none")}}, 20},
                      {"Shrink", {}, 9},
                      {"Shrink", {{"bias", af(0.25f)}, {"lambd", af(1.1f)}}, 9},
                      {"Swish", {}, 24},
                      {"Swish", {{"alpha", af(1.7f)}}, 24},
                      {"Relu", {{"consumed_inputs", Attribute::of_ints({0})}}, 1},
                      {"Elu", {{"consumed_inputs", Attribute::of_ints({0})}}, 5}};
  const DType types[] = {DType::F32, DType::F16, DType::F64};
  int n = 0;
  for (const A& a : acts) {
    DType d = types[n++ % 3];
    Dims dims = random_dims(1 + n % 4, rng, 6);
    expect_compiled_matches({a.op, {random_tensor(d, dims, rng, -6, 6)}, a.attrs, 1, a.opset}, tol_for(d));
    if (d != DType::F32)
      expect_compiled_matches({a.op, {random_tensor(DType::F32, dims, rng, -6, 6)}, a.attrs, 1, a.opset});
  }
  // Large arguments (overflow-free softplus / sigmoid forms).
  for (const char* op : {"Softplus", "Mish", "Sigmoid", "Swish"})
    expect_compiled_matches({op, {random_tensor(DType::F32, {32}, rng, -60, 60)}, {}, 1, 24}, {1e-5, 1e-6});
  // Shrink on integers (truncated and saturated like the reference).
  for (DType d : {DType::I8, DType::U8, DType::I32, DType::I64})
    expect_compiled_matches({"Shrink", {random_tensor(d, {4, 5}, rng, is_signed(d) ? -120 : 0, 120)},
                             {{"bias", af(2.5f)}, {"lambd", af(1.5f)}}});
}

TEST(CompiledElementwise, PRelu) {
  std::mt19937 rng(14);
  for (int rep = 0; rep < 5; ++rep) {
    Dims x = random_dims(2 + rep % 3, rng, 6);
    Dims s(x.begin() + 1 + rep % 2, x.end());
    for (auto& d : s)
      if (rng() % 2) d = 1;
    DType d = rep == 3 ? DType::F16 : rep == 4 ? DType::F64 : DType::F32;
    expect_compiled_matches({"PRelu", {random_tensor(d, x, rng), random_tensor(d, s, rng)}}, tol_for(d));
  }
  expect_compiled_matches({"PRelu", {random_tensor(DType::F32, {3, 4}, rng), random_tensor(DType::F32, {}, rng)}});
  for (DType d : {DType::I8, DType::I32, DType::I64, DType::U8})
    expect_compiled_matches({"PRelu", {random_tensor(d, {3, 4}, rng, is_signed(d) ? -60 : 0, 60),
                                       random_tensor(d, {4}, rng, 0, 5)}});
  // Before opset 7: one shared slope or one per channel (axis 1), whatever its shape.
  expect_compiled_matches({"PRelu", {random_tensor(DType::F32, {2, 3, 4}, rng), random_tensor(DType::F32, {3}, rng)},
                           {}, 1, 6});
  expect_compiled_matches({"PRelu", {random_tensor(DType::F32, {2, 3, 2, 2}, rng),
                                     random_tensor(DType::F32, {3, 1}, rng)}, {}, 1, 6});
  expect_compiled_matches({"PRelu", {random_tensor(DType::F32, {2, 5}, rng), random_tensor(DType::F32, {1}, rng)},
                           {}, 1, 6});
}

TEST(CompiledElementwise, Clip) {
  std::mt19937 rng(15);
  // Before opset 11: attributes.
  expect_compiled_matches({"Clip", {random_tensor(DType::F32, {4, 5}, rng)}, {{"min", af(-1)}, {"max", af(0.5f)}}, 1, 6});
  expect_compiled_matches({"Clip", {random_tensor(DType::F64, {7}, rng)}, {{"min", af(-0.3f)}}, 1, 6});
  expect_compiled_matches({"Clip", {random_tensor(DType::F16, {7}, rng)}, {{"max", af(0.3f)}}, 1, 6}, tol_for(DType::F16));
  expect_compiled_matches({"Clip", {specials(DType::F32)}, {{"min", af(-1)}, {"max", af(1)}}, 1, 6});
  // Opset 11+: optional scalar inputs, any numeric type; min > max gives max.
  Tensor none;
  for (DType d : {DType::F32, DType::F16, DType::I32, DType::U8, DType::I64, DType::F64}) {
    Dims dims = random_dims(3, rng, 5);
    double lo = is_signed(d) || is_float(d) ? -2 : 1;
    Tensor x = random_tensor(d, dims, rng, lo, 6), mn = Tensor::from<double>({}, {lo + 1}).cast(d),
           mx = Tensor::from<double>({1}, {4}).cast(d);
    expect_compiled_matches({"Clip", {x, mn, mx}, {}, 1, 13}, tol_for(d));
    expect_compiled_matches({"Clip", {x, none, mx}, {}, 1, 13}, tol_for(d));
    expect_compiled_matches({"Clip", {x, mn}, {}, 1, 12}, tol_for(d));
  }
  expect_compiled_matches({"Clip", {random_tensor(DType::F32, {9}, rng), f32({}, {1}), f32({}, {-1})}, {}, 1, 13});
  expect_compiled_matches({"Clip", {random_tensor(DType::F32, {9}, rng)}, {}, 1, 13});
  expect_compiled_matches({"Clip", {f32({}, {2.5f}), f32({1}, {-1}), f32({1, 1}, {1})}, {}, 1, 13});
}

}  // namespace
}  // namespace tessera::testing
