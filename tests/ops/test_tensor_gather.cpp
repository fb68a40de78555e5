// Gather, GatherElements, GatherND and Compress (spec examples where given).
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
AttrMap axis(int64_t a) { return {{"axis", Attribute::of_int(a)}}; }
Tensor i32(Dims d, std::vector<int32_t> v) { return Tensor::from<int32_t>(std::move(d), v); }
Tensor bools(Dims d, std::vector<bool> v) { return Tensor::from<bool>(std::move(d), v); }
}  // namespace

TEST(TensorGather, GatherAxis0) {
  auto out = run_op({.op = "Gather", .inputs = {f32({3, 2}, {1, 2, 3, 4, 5, 6}), i64({2, 2}, {0, 1, 1, 2})}});
  expect_near(out[0], f32({2, 2, 2}, {1, 2, 3, 4, 3, 4, 5, 6}));
}

TEST(TensorGather, GatherAxis1Int32Indices) {
  auto out = run_op({.op = "Gather",
                     .inputs = {f32({3, 3}, {1, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f}), i32({1, 2}, {0, 2})},
                     .attrs = axis(1)});
  expect_near(out[0], f32({3, 1, 2}, {1, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
}

TEST(TensorGather, GatherNegativeAndScalarIndices) {
  auto neg = run_op({.op = "Gather", .inputs = {i64({3}, {10, 20, 30}), i64({2}, {-1, 0})}});
  expect_near(neg[0], i64({2}, {30, 10}));
  auto sc = run_op({.op = "Gather", .inputs = {f32({3, 2}, {1, 2, 3, 4, 5, 6}), i64({}, {1})}});
  expect_near(sc[0], f32({2}, {3, 4}));
  EXPECT_THROW(run_op({.op = "Gather", .inputs = {i64({3}, {10, 20, 30}), i64({1}, {3})}}), Error);
  EXPECT_THROW(run_op({.op = "Gather", .inputs = {i64({3}, {10, 20, 30}), f32({1}, {0})}}), Error);
}

TEST(TensorGather, GatherElementsSpecExamples) {
  auto a = run_op({.op = "GatherElements", .inputs = {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                   .attrs = axis(1)});
  expect_near(a[0], f32({2, 2}, {1, 1, 4, 3}));
  auto b = run_op({.op = "GatherElements",
                   .inputs = {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i32({2, 3}, {1, 2, 0, 2, 0, 0})},
                   .attrs = axis(0)});
  expect_near(b[0], f32({2, 3}, {4, 8, 3, 7, 2, 3}));
  auto neg = run_op({.op = "GatherElements", .inputs = {f32({2, 2}, {1, 2, 3, 4}), i64({2, 1}, {-1, -2})},
                     .attrs = axis(1)});
  expect_near(neg[0], f32({2, 1}, {2, 3}));
  EXPECT_THROW(run_op({.op = "GatherElements", .inputs = {f32({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {2})}}), Error);
}

TEST(TensorGather, GatherNdSpecExamples) {
  Tensor d2 = i64({2, 2}, {0, 1, 2, 3});
  auto e1 = run_op({.op = "GatherND", .inputs = {d2, i64({2, 2}, {0, 0, 1, 1})}});
  expect_near(e1[0], i64({2}, {0, 3}));
  auto e2 = run_op({.op = "GatherND", .inputs = {d2, i64({2, 1}, {1, 0})}});
  expect_near(e2[0], i64({2, 2}, {2, 3, 0, 1}));
  Tensor d3 = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto e3 = run_op({.op = "GatherND", .inputs = {d3, i64({2, 2}, {0, 1, 1, 0})}});
  expect_near(e3[0], i64({2, 2}, {2, 3, 4, 5}));
  auto e5 = run_op({.op = "GatherND", .inputs = {d3, i64({2, 1}, {1, 0})},
                    .attrs = {{"batch_dims", Attribute::of_int(1)}}});
  expect_near(e5[0], i64({2, 2}, {2, 3, 4, 5}));
  EXPECT_THROW(run_op({.op = "GatherND", .inputs = {d2, i64({1, 3}, {0, 0, 0})}}), Error);
  EXPECT_THROW(run_op({.op = "GatherND", .inputs = {d2, i64({1, 2}, {0, 2})}}), Error);
}

TEST(TensorGather, CompressAlongAxesAndFlattened) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto a0 = run_op({.op = "Compress", .inputs = {x, bools({3}, {false, true, true})}, .attrs = axis(0)});
  expect_near(a0[0], f32({2, 2}, {3, 4, 5, 6}));
  auto a1 = run_op({.op = "Compress", .inputs = {x, bools({2}, {false, true})}, .attrs = axis(-1)});
  expect_near(a1[0], f32({3, 1}, {2, 4, 6}));
  auto flat = run_op({.op = "Compress", .inputs = {x, bools({5}, {false, true, false, false, true})}});
  expect_near(flat[0], f32({2}, {2, 5}));
  auto t = infer_op({.op = "Compress", .inputs = {x, bools({3}, {true, false, true})}, .attrs = axis(0),
                     .constant_inputs = {1}});
  EXPECT_EQ(t[0].to_string(), "f32[2x2]");
  EXPECT_THROW(run_op({.op = "Compress", .inputs = {x, bools({4}, {false, false, false, true})}, .attrs = axis(0)}),
               Error);
}

}  // namespace tessera::testing
