// Comparisons, boolean logic, bitwise ops and Where on hand-computed cases.
#include <cmath>

#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
template <class T>
Tensor t(Dims d, std::vector<T> v) { return Tensor::from<T>(std::move(d), v); }
Tensor b(Dims d, std::vector<bool> v) { return Tensor::from<bool>(std::move(d), v); }
Tensor bin(const std::string& op, Tensor x, Tensor y, int64_t opset = 18) {
  return run_op({.op = op, .inputs = {std::move(x), std::move(y)}, .opset = opset})[0];
}
}  // namespace

TEST(ElementwiseLogic, Comparisons) {
  Tensor x = f32({3}, {1, 2, 3}), y = f32({3}, {2, 2, 2});
  expect_near(bin("Equal", x, y), b({3}, {false, true, false}));
  expect_near(bin("Less", x, y), b({3}, {true, false, false}));
  expect_near(bin("Greater", x, y), b({3}, {false, false, true}));
  expect_near(bin("LessOrEqual", x, y), b({3}, {true, true, false}));
  expect_near(bin("GreaterOrEqual", x, y), b({3}, {false, true, true}));
  expect_near(bin("Less", f32({1}, {NAN}), f32({1}, {1})), b({1}, {false}));
  // Large int64 values compare exactly (no round trip through double).
  int64_t big = (int64_t{1} << 62) + 1;
  expect_near(bin("Equal", i64({1}, {big}), i64({1}, {big - 1})), b({1}, {false}));
  expect_near(bin("Greater", t<uint8_t>({2, 2}, {0, 5, 10, 200}), t<uint8_t>({2}, {4, 100})),
              b({2, 2}, {false, false, true, true}));
  expect_near(bin("Equal", b({2}, {true, false}), b({1}, {false})), b({2}, {false, true}));
  EXPECT_THROW(bin("Less", b({1}, {true}), b({1}, {false})), Error);
  EXPECT_THROW(bin("Equal", f32({1}, {1}), i64({1}, {1})), Error);
}

TEST(ElementwiseLogic, EqualOnStrings) {
  Tensor x(DType::String, {3}), y(DType::String, {1});
  x.strings() = {"a", "bc", "a"};
  y.strings() = {"a"};
  expect_near(bin("Equal", x, y), b({3}, {true, false, true}));
}

TEST(ElementwiseLogic, AndOrXorBroadcast) {
  Tensor x = b({2, 2}, {true, true, false, false}), y = b({2}, {true, false});
  expect_near(bin("And", x, y), b({2, 2}, {true, false, false, false}));
  expect_near(bin("Or", x, y), b({2, 2}, {true, true, true, false}));
  expect_near(bin("Xor", x, y), b({2, 2}, {false, true, true, false}));
  EXPECT_THROW(bin("And", f32({1}, {1}), f32({1}, {1})), Error);
}

TEST(ElementwiseLogic, BitwiseOps) {
  Tensor x = t<int32_t>({2}, {12, -1}), y = t<int32_t>({2}, {10, 5});
  expect_near(bin("BitwiseAnd", x, y), t<int32_t>({2}, {8, 5}));
  expect_near(bin("BitwiseOr", x, y), t<int32_t>({2}, {14, -1}));
  expect_near(bin("BitwiseXor", x, y), t<int32_t>({2}, {6, -6}));
  expect_near(bin("BitwiseAnd", t<uint64_t>({2}, {0xff00, 0x0ff0}), t<uint64_t>({1}, {0x0f0f})),
              t<uint64_t>({2}, {0x0f00, 0x0f00}));
  EXPECT_THROW(bin("BitwiseOr", f32({1}, {1}), f32({1}, {1})), Error);
}

TEST(ElementwiseLogic, WhereBroadcastsAllThree) {
  auto out = run_op({.op = "Where",
                     .inputs = {b({2, 1}, {true, false}), f32({2}, {1, 2}), f32({1}, {9})}});
  expect_near(out[0], f32({2, 2}, {1, 2, 9, 9}));
  auto ints = run_op({.op = "Where", .inputs = {b({3}, {false, true, false}), i64({3}, {1, 2, 3}), i64({}, {0})}});
  expect_near(ints[0], i64({3}, {0, 2, 0}));
  EXPECT_THROW(run_op({.op = "Where", .inputs = {b({1}, {true}), f32({1}, {1}), i64({1}, {1})}}), Error);
  EXPECT_THROW(run_op({.op = "Where", .inputs = {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}}), Error);
  EXPECT_THROW(run_op({.op = "Where", .inputs = {b({2}, {true, false}), f32({3}, {1, 2, 3}), f32({1}, {1})}}),
               Error);
}

}  // namespace tessera::testing
