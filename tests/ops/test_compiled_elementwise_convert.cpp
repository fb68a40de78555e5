// Compiled conversions against the reference: Cast / CastLike over the
// supported type pairs (saturation, NaN, bool), BitCast, QuantizeLinear /
// DequantizeLinear (per tensor, per axis, blocked), DynamicQuantizeLinear,
// SwiGLU, inference-mode Dropout and Identity.
#include <cmath>
#include <limits>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute ai(int64_t v) { return Attribute::of_int(v); }
Attribute af(float v) { return Attribute::of_float(v); }
int64_t code(DType d) { return static_cast<int64_t>(d); }

Tolerance tol_for(DType d) {
  if (d == DType::F16) return {2e-3, 1e-3};
  if (d == DType::BF16) return {1e-2, 1e-2};
  return {1e-5, 1e-6};
}

const DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,  DType::U8,  DType::I16,
                      DType::U16, DType::I32, DType::U32,  DType::I64, DType::U64, DType::Bool};

// Values that exercise rounding, saturation, NaN and infinities, stored as d
// (the reference's own conversion from f64).
Tensor cast_source(DType d, std::mt19937& rng) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v{0.0, -0.0, 0.4, -0.6, 1.5, 2.5, -2.5, 127.7, -128.9, 255.5, 300, -300, 40000.25, 65504,
                        70000, 3e9, -3e9, 5e9, 1e19, -1e19, 1e-40, NAN, inf, -inf, 16777217, 9007199254740993.0};
  std::uniform_real_distribution<double> u(-1000, 1000);
  for (int i = 0; i < 6; ++i) v.push_back(u(rng));
  return Tensor::from<double>({static_cast<int64_t>(v.size())}, v).cast(d);
}

TEST(CompiledElementwiseConvert, CastPairs) {
  std::mt19937 rng(31);
  int i = 0;
  for (DType from : kAll) {
    int j = 0;
    for (DType to : kAll) {
      bool take = from != to && (from == DType::F32 || to == DType::F32 || from == DType::F64 || to == DType::Bool ||
                                 from == DType::Bool || (i + j) % 3 == 0);
      ++j;
      if (!take) continue;
      expect_compiled_matches({"Cast", {cast_source(from, rng)}, {{"to", ai(code(to))}}, 1, 19});
    }
    ++i;
  }
  expect_compiled_matches({"Cast", {cast_source(DType::F32, rng)}, {{"to", ai(code(DType::F32))}}, 1, 13});
  // Before opset 6 `to` names the type.
  expect_compiled_matches({"Cast", {cast_source(DType::F32, rng)}, {{"to", Attribute::of_string("INT32")}}, 1, 1});
  expect_compiled_matches({"Cast", {cast_source(DType::F32, rng)}, {{"to", ai(code(DType::U8))}, {"saturate", ai(0)}}, 1, 19});
  // Random multi-dim shapes.
  expect_compiled_matches({"Cast", {random_tensor(DType::F32, {3, 4, 5}, rng, -200, 200)}, {{"to", ai(code(DType::I8))}}});
  expect_compiled_matches({"Cast", {random_tensor(DType::I64, {2, 7}, rng, -1e6, 1e6)}, {{"to", ai(code(DType::F16))}}});
}

TEST(CompiledElementwiseConvert, CastLike) {
  std::mt19937 rng(32);
  for (auto [from, to] : {std::pair{DType::F32, DType::I32}, {DType::I64, DType::F16}, {DType::F64, DType::U8},
                          {DType::Bool, DType::F32}, {DType::F16, DType::Bool}})
    expect_compiled_matches({"CastLike", {cast_source(from, rng), random_tensor(to, {2}, rng)}, {}, 1, 19});
  expect_compiled_matches({"CastLike", {random_tensor(DType::F32, {2, 3}, rng), random_tensor(DType::I8, {5, 5, 5}, rng)}, {}, 1, 15});
}

TEST(CompiledElementwiseConvert, BitCast) {
  std::mt19937 rng(33);
  const double inf = std::numeric_limits<double>::infinity();
  auto fl = [&](DType d, std::vector<double> extra) {
    std::vector<double> v{0.0, -0.0, 1.0, -1.5, 3.14159, 1e-3, 65504, -2e-5, inf, -inf, NAN};
    v.insert(v.end(), extra.begin(), extra.end());
    std::uniform_real_distribution<double> u(-100, 100);
    for (int i = 0; i < 8; ++i) v.push_back(u(rng));
    return Tensor::from<double>({static_cast<int64_t>(v.size())}, v).cast(d);
  };
  auto bc = [&](const Tensor& x, DType to) { expect_compiled_matches({"BitCast", {x}, {{"to", ai(code(to))}}, 1, 26}); };
  bc(fl(DType::F32, {1e-40, -3e-45, 3.4e38, 1.17549435e-38}), DType::I32);
  bc(fl(DType::F32, {1e-40, 1e30}), DType::U32);
  bc(fl(DType::F64, {5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, 1e-310}), DType::I64);
  bc(fl(DType::F64, {1e300}), DType::U64);
  bc(fl(DType::F16, {6e-8, -3e-5, 6.1035e-5}), DType::I16);
  bc(fl(DType::F16, {1e-6}), DType::U16);
  bc(fl(DType::BF16, {1e-40, 3e38}), DType::I16);
  bc(fl(DType::F16, {1e-6}), DType::BF16);
  bc(fl(DType::BF16, {1e-40, 1e30}), DType::F16);
  bc(random_tensor(DType::I32, {4, 16}, rng, -2.2e9, 2.2e9), DType::F32);
  bc(random_tensor(DType::U32, {40}, rng, 0, 4.2e9), DType::F32);
  bc(Tensor::from<uint32_t>({6}, {0, 1, 0x007fffff, 0x80000000u, 0x7f800000, 0xff800000u}), DType::F32);
  bc(random_tensor(DType::I64, {40}, rng, -9.2e18, 9.2e18), DType::F64);
  bc(Tensor::from<uint64_t>({4}, {0, 1, 0x8000000000000000ull, 0x7ff0000000000000ull}), DType::F64);
  bc(random_tensor(DType::I16, {40}, rng, -32768, 32767), DType::F16);
  bc(random_tensor(DType::U16, {40}, rng, 0, 65535), DType::BF16);
  bc(random_tensor(DType::I8, {20}, rng, -128, 127), DType::U8);
  bc(random_tensor(DType::U64, {20}, rng, 0, 1.8e19), DType::I64);
  bc(random_tensor(DType::Bool, {20}, rng), DType::U8);
  bc(random_tensor(DType::U8, {20}, rng, 0, 1), DType::Bool);
  bc(random_tensor(DType::I32, {20}, rng, -1e9, 1e9), DType::U32);
}

TEST(CompiledElementwiseConvert, QuantizeLinear) {
  std::mt19937 rng(34);
  auto x = [&](DType d, const Dims& dims) { return random_tensor(d, dims, rng, -300, 300); };
  auto sc = [&](DType d, const Dims& dims) { return random_tensor(d, dims, rng, 0.5, 2.5); };
  Tensor none;
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {2, 3, 4}), f32({}, {1.5f}), Tensor::scalar<uint8_t>(128)}, {}, 1, 10});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {2, 3, 4}), f32({}, {0.75f}), Tensor::scalar<int8_t>(-3)}, {}, 1, 13});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {7}), f32({1}, {2.0f})}, {}, 1, 13});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {3, 4}), f32({}, {0.5f})}, {{"output_dtype", ai(code(DType::I8))}}, 1, 21});
  // Round half to even: 2.5 -> 2, -0.5 -> -0.
  expect_compiled_matches({"QuantizeLinear", {f32({5}, {2.5f, 3.5f, -0.5f, -1.5f, 1e9f}), f32({}, {1}), Tensor::scalar<int8_t>(0)}, {}, 1, 13});
  // Per axis.
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {2, 3, 4}), sc(DType::F32, {3}), random_tensor(DType::U8, {3}, rng, 0, 255)}, {}, 1, 13});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {2, 3, 4}), sc(DType::F32, {4}), random_tensor(DType::I8, {4}, rng, -20, 20)},
                           {{"axis", ai(-1)}}, 1, 13});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {5, 3}), sc(DType::F32, {5}), none}, {{"axis", ai(0)}}, 1, 13});
  // Blocked.
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {2, 6, 4}), sc(DType::F32, {2, 2, 4}), random_tensor(DType::U8, {2, 2, 4}, rng, 0, 255)},
                           {{"axis", ai(1)}, {"block_size", ai(4)}}, 1, 21});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {4, 5}), sc(DType::F32, {4, 3}), none}, {{"axis", ai(-1)}, {"block_size", ai(2)}}, 1, 21});
  // Other input / zero-point types, precision.
  expect_compiled_matches({"QuantizeLinear", {x(DType::F16, {3, 4}), sc(DType::F16, {}), Tensor::scalar<uint8_t>(7)}, {}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F16, {3, 4}), sc(DType::F32, {}), Tensor::scalar<uint8_t>(7)}, {}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {x(DType::BF16, {3, 4}), sc(DType::F32, {4}), none}, {{"axis", ai(1)}}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {random_tensor(DType::I32, {10}, rng, -1e5, 1e5), f32({}, {3.0f}), Tensor::scalar<int16_t>(5)}, {}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {random_tensor(DType::F64, {10}, rng, -1e5, 1e5), sc(DType::F64, {}), Tensor::scalar<uint16_t>(300)}, {}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {random_tensor(DType::F32, {10}, rng, -1e9, 1e9), sc(DType::F32, {}), Tensor::scalar<int32_t>(-9)}, {}, 1, 19});
  expect_compiled_matches({"QuantizeLinear", {x(DType::F32, {3, 4}), sc(DType::F32, {}), Tensor::scalar<int8_t>(1)},
                           {{"precision", ai(code(DType::F16))}}, 1, 25});
}

TEST(CompiledElementwiseConvert, DequantizeLinear) {
  std::mt19937 rng(35);
  auto sc = [&](DType d, const Dims& dims) { return random_tensor(d, dims, rng, 0.01, 2.5); };
  Tensor none;
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::U8, {2, 3, 4}, rng, 0, 255), f32({}, {0.3f}), Tensor::scalar<uint8_t>(128)}, {}, 1, 10});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::I8, {2, 5}, rng, -128, 127), sc(DType::F32, {1})}, {}, 1, 13});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::I8, {2, 3, 4}, rng, -128, 127), sc(DType::F32, {3}),
                                                random_tensor(DType::I8, {3}, rng, -10, 10)}, {}, 1, 13});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::U16, {2, 3, 4}, rng, 0, 65535), sc(DType::F32, {4}),
                                                random_tensor(DType::U16, {4}, rng, 0, 65535)}, {{"axis", ai(2)}}, 1, 21});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::I32, {3, 4}, rng, -2e9, 2e9), sc(DType::F32, {}), none}, {}, 1, 13});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::I16, {3, 4}, rng, -3e4, 3e4), sc(DType::F16, {}),
                                                Tensor::scalar<int16_t>(-7)}, {}, 1, 21}, tol_for(DType::F16));
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::U8, {3, 4}, rng, 0, 255), sc(DType::F64, {4}), none},
                           {{"axis", ai(-1)}}, 1, 21});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::U8, {2, 6, 4}, rng, 0, 255), sc(DType::F32, {2, 2, 4}),
                                                random_tensor(DType::U8, {2, 2, 4}, rng, 0, 255)},
                           {{"axis", ai(1)}, {"block_size", ai(3)}}, 1, 21});
  expect_compiled_matches({"DequantizeLinear", {random_tensor(DType::I8, {4, 7}, rng, -128, 127), sc(DType::F16, {4, 2}), none},
                           {{"axis", ai(1)}, {"block_size", ai(4)}, {"output_dtype", ai(code(DType::F32))}}, 1, 23});
}

TEST(CompiledElementwiseConvert, DynamicQuantizeLinear) {
  std::mt19937 rng(36);
  for (auto [lo, hi] : {std::pair{-3.0, 3.0}, {0.5, 4.0}, {-6.0, -1.0}}) {
    expect_compiled_matches({"DynamicQuantizeLinear", {random_tensor(DType::F32, random_dims(2, rng, 6), rng, lo, hi)}, {}, 3, 11});
  }
  expect_compiled_matches({"DynamicQuantizeLinear", {f32({2, 2}, {0, 0, 0, 0})}, {}, 3, 11});
  expect_compiled_matches({"DynamicQuantizeLinear", {f32({}, {-2.5f})}, {}, 3, 11});
}

TEST(CompiledElementwiseConvert, SwiGLU) {
  std::mt19937 rng(37);
  for (DType d : {DType::F32, DType::F16, DType::F64}) {
    Dims dims = random_dims(3, rng, 5);
    expect_compiled_matches({"SwiGLU", {random_tensor(d, dims, rng), random_tensor(d, dims, rng)}, {}, 1, 28}, tol_for(d));
  }
  expect_compiled_matches({"SwiGLU", {random_tensor(DType::F32, {4, 6}, rng), random_tensor(DType::F32, {4, 6}, rng)},
                           {{"alpha", af(1.702f)}}, 1, 28});
}

TEST(CompiledElementwiseConvert, DropoutAndIdentity) {
  std::mt19937 rng(38);
  Tensor x = random_tensor(DType::F32, {3, 4}, rng);
  Tensor none;
  expect_compiled_matches({"Dropout", {x}, {}, 1, 13});
  expect_compiled_matches({"Dropout", {x}, {}, 2, 13});
  OpCase c{"Dropout", {x, f32({}, {0.3f}), Tensor::scalar<bool>(false)}, {}, 2, 13};
  c.constant_inputs = {1, 2};
  expect_compiled_matches(c);
  OpCase t{"Dropout", {x, f32({}, {0.0f}), Tensor::scalar<bool>(true)}, {}, 2, 13};
  t.constant_inputs = {1, 2};
  expect_compiled_matches(t);
  expect_compiled_matches({"Dropout", {random_tensor(DType::F16, {5}, rng)}, {{"ratio", af(0.2f)}}, 2, 10});
  expect_compiled_matches({"Dropout", {x}, {{"ratio", af(0.2f)}}, 2, 7});
  expect_compiled_matches({"Dropout", {x}, {{"is_test", ai(1)}}, 2, 6});
  expect_compiled_matches({"Dropout", {random_tensor(DType::I32, {5}, rng)}, {}, 2, 13});
  for (DType d : {DType::F32, DType::I64, DType::Bool, DType::F16})
    expect_compiled_matches({"Identity", {random_tensor(d, random_dims(2, rng, 5), rng)}});
}

}  // namespace
}  // namespace tessera::testing
