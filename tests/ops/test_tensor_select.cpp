// NonZero and Unique (spec examples).
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

TEST(TensorSelect, NonZero) {
  auto a = run_op({.op = "NonZero", .inputs = {f32({2, 2}, {1, 0, 1, 1})}});
  expect_near(a[0], i64({2, 3}, {0, 1, 1, 0, 0, 1}));
  auto b = run_op({.op = "NonZero", .inputs = {Tensor::from<bool>({3}, {false, true, false})}});
  expect_near(b[0], i64({1, 1}, {1}));
  auto none = run_op({.op = "NonZero", .inputs = {Tensor::from<int32_t>({2}, {0, 0})}});
  EXPECT_EQ(dims_to_string(none[0].dims()), "1x0");
  auto t = infer_op({.op = "NonZero", .inputs = {f32({2, 2}, {1, 0, 1, 1})}});
  EXPECT_EQ(t[0].to_string(), "i64[2x?]");
}

TEST(TensorSelect, UniqueUnsortedAndSorted) {
  Tensor x = f32({6}, {2, 1, 1, 3, 4, 3});
  auto u = run_op({.op = "Unique", .inputs = {x}, .attrs = {{"sorted", Attribute::of_int(0)}}, .num_outputs = 4});
  expect_near(u[0], f32({4}, {2, 1, 3, 4}));
  expect_near(u[1], i64({4}, {0, 1, 3, 4}));
  expect_near(u[2], i64({6}, {0, 1, 1, 2, 3, 2}));
  expect_near(u[3], i64({4}, {1, 2, 2, 1}));
  auto s = run_op({.op = "Unique", .inputs = {x}, .num_outputs = 4});
  expect_near(s[0], f32({4}, {1, 2, 3, 4}));
  expect_near(s[1], i64({4}, {1, 0, 3, 4}));
  expect_near(s[2], i64({6}, {1, 0, 0, 2, 3, 2}));
  expect_near(s[3], i64({4}, {2, 1, 2, 1}));
}

TEST(TensorSelect, UniqueFlattensWithoutAxis) {
  auto s = run_op({.op = "Unique", .inputs = {i64({2, 2}, {1, 3, 2, 3})}, .num_outputs = 4});
  expect_near(s[0], i64({3}, {1, 2, 3}));
  expect_near(s[1], i64({3}, {0, 2, 1}));
  expect_near(s[2], i64({4}, {0, 2, 1, 2}));
  expect_near(s[3], i64({3}, {1, 1, 2}));
}

TEST(TensorSelect, UniqueAlongAxis) {
  auto a = run_op({.op = "Unique", .inputs = {f32({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4})},
                   .attrs = {{"axis", Attribute::of_int(0)}}, .num_outputs = 4});
  expect_near(a[0], f32({2, 3}, {1, 0, 0, 2, 3, 4}));
  expect_near(a[1], i64({2}, {0, 2}));
  expect_near(a[2], i64({3}, {0, 0, 1}));
  expect_near(a[3], i64({2}, {2, 1}));
  auto b = run_op({.op = "Unique",
                   .inputs = {f32({2, 4, 2}, {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1})},
                   .attrs = {{"axis", Attribute::of_int(-2)}}, .num_outputs = 4});
  expect_near(b[0], f32({2, 3, 2}, {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}));
  expect_near(b[1], i64({3}, {1, 0, 2}));
  expect_near(b[2], i64({4}, {1, 0, 2, 0}));
  expect_near(b[3], i64({3}, {2, 1, 1}));
  EXPECT_THROW(run_op({.op = "Unique", .inputs = {f32({2}, {1, 2})}, .attrs = {{"axis", Attribute::of_int(1)}},
                       .num_outputs = 4}),
               Error);
}

TEST(TensorSelect, UniqueStrings) {
  Tensor s(DType::String, {4});
  s.strings() = {"b", "a", "b", "c"};
  auto u = run_op({.op = "Unique", .inputs = {s}, .num_outputs = 4});
  EXPECT_EQ(u[0].strings(), (std::vector<std::string>{"a", "b", "c"}));
  expect_near(u[3], i64({3}, {1, 2, 1}));
}

}  // namespace tessera::testing
