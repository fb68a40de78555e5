// TensorScatter (KV-cache update) on small hand-made caches.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Attribute S(const char* s) { return Attribute::of_string(s); }
// Cache [2, 4, 1]: batch 0 = 1 2 3 4, batch 1 = 5 6 7 8; update [2, 2, 1].
Tensor cache() { return f32({2, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8}); }
Tensor update() { return f32({2, 2, 1}, {10, 20, 30, 40}); }
}  // namespace

TEST(TensorScatterCache, LinearWritesAtEachBatchIndex) {
  auto y = run_op({.op = "TensorScatter", .inputs = {cache(), update(), i64({2}, {1, 2})}, .opset = 24});
  expect_near(y[0], f32({2, 4, 1}, {1, 10, 20, 4, 5, 6, 30, 40}));
}

TEST(TensorScatterCache, MissingWriteIndicesMeansZero) {
  auto y = run_op({.op = "TensorScatter", .inputs = {cache(), update()}, .opset = 24});
  expect_near(y[0], f32({2, 4, 1}, {10, 20, 3, 4, 30, 40, 7, 8}));
}

TEST(TensorScatterCache, CircularWraps) {
  auto y = run_op({.op = "TensorScatter",
                   .inputs = {cache(), update(), i64({2}, {3, 4})},
                   .attrs = {{"mode", S("circular")}},
                   .opset = 24});
  // Batch 0 writes positions 3, 0; batch 1 writes 4 % 4 = 0, 1.
  expect_near(y[0], f32({2, 4, 1}, {20, 2, 3, 10, 30, 40, 7, 8}));
}

TEST(TensorScatterCache, ExplicitAxisWithPrefixDims) {
  // Cache [1, 2, 3] along axis 2: each of the 2 rows gets its update at index 2.
  auto y = run_op({.op = "TensorScatter",
                   .inputs = {Tensor::from<int32_t>({1, 2, 3}, {1, 2, 3, 4, 5, 6}),
                              Tensor::from<int32_t>({1, 2, 1}, {7, 8}), i64({1}, {2})},
                   .attrs = {{"axis", Attribute::of_int(2)}},
                   .opset = 24});
  ASSERT_EQ(y[0].dtype(), DType::I32);
  std::vector<int32_t> want = {1, 2, 7, 4, 5, 8};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[0].data<int32_t>()[i], want[i]) << i;
}

TEST(TensorScatterCache, Errors) {
  // Linear write past the end.
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {cache(), update(), i64({2}, {3, 0})}, .opset = 24}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {cache(), update(), i64({2}, {-1, 0})}, .opset = 24}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TensorScatter",
                       .inputs = {cache(), update()},
                       .attrs = {{"mode", S("ring")}},
                       .opset = 24}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TensorScatter",
                       .inputs = {cache(), update()},
                       .attrs = {{"axis", Attribute::of_int(0)}},
                       .opset = 24}),
               tessera::Error);
  // Update longer than the cache; other dims differing.
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {f32({1, 1, 1}, {0}), f32({1, 2, 1}, {1, 2})}, .opset = 24}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {f32({1, 2, 1}, {0, 0}), f32({1, 1, 2}, {1, 2})}, .opset = 24}),
               tessera::Error);
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {cache(), update(), i64({3}, {0, 0, 0})}, .opset = 24}),
               tessera::Error);
}

}  // namespace tessera::testing
