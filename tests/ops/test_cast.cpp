// Cast and CastLike on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Tensor cast(Tensor x, DType to) {
  return run_op({.op = "Cast", .inputs = {std::move(x)},
                 .attrs = {{"to", Attribute::of_int(static_cast<int64_t>(to))}}})[0];
}
}  // namespace

TEST(Cast, FloatToIntegerTruncates) {
  expect_near(cast(f32({3}, {1.7f, -1.7f, 300}), DType::I32), t<int32_t>({3}, {1, -1, 300}));
  // Out-of-range values saturate rather than invoking undefined behaviour.
  expect_near(cast(f32({2}, {300, -5}), DType::U8), t<uint8_t>({2}, {255, 0}));
}

TEST(Cast, BetweenFloatTypes) {
  // The half nearest 1/3 is 0.333251953125; the bfloat16 nearest 1/3 is 0.333984375.
  expect_near(cast(f32({2}, {1.0f / 3, 2}), DType::F16), Tensor::from<Half>({2}, {Half(0.333251953125f), Half(2.0f)}),
              0, 0);
  expect_near(cast(f32({1}, {1.0f / 3}), DType::BF16), Tensor::from<BFloat16>({1}, {BFloat16(0.333984375f)}), 0, 0);
  expect_near(cast(Tensor::from<Half>({1}, {Half(0.5f)}), DType::F64), Tensor::from<double>({1}, {0.5}), 0, 0);
  expect_near(cast(f32({1}, {1.5f}), DType::F32), f32({1}, {1.5f}), 0, 0);
}

TEST(Cast, BoolAndIntegers) {
  expect_near(cast(f32({3}, {0, 2, -0.5f}), DType::Bool), Tensor::from<bool>({3}, {false, true, true}));
  expect_near(cast(Tensor::from<bool>({2}, {true, false}), DType::F32), f32({2}, {1, 0}));
  expect_near(cast(i64({2}, {-1, 7}), DType::F64), Tensor::from<double>({2}, {-1, 7}));
  expect_near(cast(t<int32_t>({2}, {-1, 256}), DType::U8), t<uint8_t>({2}, {255, 0}));  // modular like C++
}

TEST(Cast, InferenceUsesTheTarget) {
  auto types = infer_op({.op = "Cast", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                         .attrs = {{"to", Attribute::of_int(static_cast<int64_t>(DType::I64))}}});
  EXPECT_EQ(types[0].to_string(), "i64[2x3]");
}

TEST(Cast, UnsupportedTargetsThrow) {
  auto bad = [](int64_t to) {
    return run_op({.op = "Cast", .inputs = {f32({1}, {1})}, .attrs = {{"to", Attribute::of_int(to)}}});
  };
  EXPECT_THROW(bad(8), Error);   // string
  EXPECT_THROW(bad(17), Error);  // float8e4m3fn
  EXPECT_THROW(bad(-3), Error);
  EXPECT_THROW(run_op({.op = "Cast", .inputs = {f32({1}, {1})}}), Error);  // 'to' is required
}

TEST(Cast, CastLikeTakesTheSecondInputsType) {
  auto out = run_op({.op = "CastLike", .inputs = {f32({2}, {2.9f, -2.9f}), i64({1}, {0})}});
  expect_near(out[0], i64({2}, {2, -2}));
  auto h = run_op({.op = "CastLike", .inputs = {Tensor::from<double>({1}, {0.25}), Tensor::from<Half>({}, {Half(0.f)})}});
  expect_near(h[0], Tensor::from<Half>({1}, {Half(0.25f)}), 0, 0);
  EXPECT_THROW(run_op({.op = "CastLike", .inputs = {f32({1}, {1}), i64({1}, {0})}, .opset = 14}), Error);
}

}  // namespace tessera::testing
