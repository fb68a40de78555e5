// Layout ops: Transpose, DepthToSpace, SpaceToDepth, Trilu, ReverseSequence.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
Tensor iota_f32(Dims d) {
  Tensor t(DType::F32, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(TensorLayout, TransposeDefaultReversesDims) {
  auto out = run_op({.op = "Transpose", .inputs = {iota_f32({2, 3})}});
  expect_near(out[0], f32({3, 2}, {0, 3, 1, 4, 2, 5}));
}

TEST(TensorLayout, TransposeWithPerm) {
  // out[i,j,k] = x[j,k,i] with x[a,b,c] = 4a + 2b + c.
  auto out = run_op({.op = "Transpose", .inputs = {iota_f32({2, 2, 2})}, .attrs = {{"perm", Attribute::of_ints({2, 0, 1})}}});
  expect_near(out[0], f32({2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  auto t = infer_op({.op = "Transpose", .inputs = {iota_f32({2, 3, 4})}, .attrs = {{"perm", Attribute::of_ints({1, 2, 0})}}});
  EXPECT_EQ(t[0].to_string(), "f32[3x4x2]");
}

TEST(TensorLayout, TransposeStringsAndBadPerm) {
  Tensor s(DType::String, {2, 2});
  s.strings() = {"a", "b", "c", "d"};
  auto out = run_op({.op = "Transpose", .inputs = {s}});
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"a", "c", "b", "d"}));
  EXPECT_THROW(run_op({.op = "Transpose", .inputs = {iota_f32({2, 3})}, .attrs = {{"perm", Attribute::of_ints({0, 0})}}}),
               Error);
  EXPECT_THROW(run_op({.op = "Transpose", .inputs = {iota_f32({2, 3})}, .attrs = {{"perm", Attribute::of_ints({0})}}}),
               Error);
}

TEST(TensorLayout, DepthToSpaceModes) {
  AttrMap dcr{{"blocksize", Attribute::of_int(2)}};
  auto a = run_op({.op = "DepthToSpace", .inputs = {iota_f32({1, 8, 1, 1})}, .attrs = dcr});
  expect_near(a[0], f32({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  AttrMap crd{{"blocksize", Attribute::of_int(2)}, {"mode", Attribute::of_string("CRD")}};
  auto b = run_op({.op = "DepthToSpace", .inputs = {iota_f32({1, 8, 1, 1})}, .attrs = crd});
  expect_near(b[0], f32({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  // x[ch, w] = 2 ch + w; output row i, column 2 ww + j reads channel 2 i + j at ww.
  auto c = run_op({.op = "DepthToSpace", .inputs = {iota_f32({1, 4, 1, 2})}, .attrs = dcr});
  expect_near(c[0], f32({1, 1, 2, 4}, {0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_THROW(run_op({.op = "DepthToSpace", .inputs = {iota_f32({1, 6, 1, 1})}, .attrs = dcr}), Error);
}

TEST(TensorLayout, SpaceToDepthInvertsDepthToSpace) {
  auto out = run_op({.op = "SpaceToDepth", .inputs = {f32({1, 1, 2, 4}, {0, 2, 1, 3, 4, 6, 5, 7})},
                     .attrs = {{"blocksize", Attribute::of_int(2)}}});
  expect_near(out[0], iota_f32({1, 4, 1, 2}));
  EXPECT_THROW(run_op({.op = "SpaceToDepth", .inputs = {iota_f32({1, 1, 3, 4})},
                       .attrs = {{"blocksize", Attribute::of_int(2)}}}),
               Error);
}

TEST(TensorLayout, TriluUpperAndLower) {
  auto up = run_op({.op = "Trilu", .inputs = {iota_f32({3, 3})}, .opset = 14});
  expect_near(up[0], f32({3, 3}, {0, 1, 2, 0, 4, 5, 0, 0, 8}));
  auto low = run_op({.op = "Trilu", .inputs = {iota_f32({3, 3}), i64({}, {-1})},
                     .attrs = {{"upper", Attribute::of_int(0)}}, .opset = 14});
  expect_near(low[0], f32({3, 3}, {0, 0, 0, 3, 0, 0, 6, 7, 0}));
  // Batched, k = 1 upper on 2x3 matrices.
  auto k1 = run_op({.op = "Trilu", .inputs = {iota_f32({2, 2, 3}), i64({}, {1})}, .opset = 14});
  expect_near(k1[0], f32({2, 2, 3}, {0, 1, 2, 0, 0, 5, 0, 7, 8, 0, 0, 11}));
  EXPECT_THROW(run_op({.op = "Trilu", .inputs = {iota_f32({3})}, .opset = 14}), Error);
}

TEST(TensorLayout, ReverseSequenceTimeMajor) {
  auto out = run_op({.op = "ReverseSequence",
                     .inputs = {f32({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}),
                                i64({4}, {4, 3, 2, 1})},
                     .attrs = {{"time_axis", Attribute::of_int(0)}, {"batch_axis", Attribute::of_int(1)}}});
  expect_near(out[0], f32({4, 4}, {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
}

TEST(TensorLayout, ReverseSequenceBatchMajor) {
  auto out = run_op({.op = "ReverseSequence", .inputs = {iota_f32({4, 4}), i64({4}, {1, 2, 3, 4})},
                     .attrs = {{"time_axis", Attribute::of_int(1)}, {"batch_axis", Attribute::of_int(0)}}});
  expect_near(out[0], f32({4, 4}, {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}));
  EXPECT_THROW(run_op({.op = "ReverseSequence", .inputs = {iota_f32({4, 4}), i64({4}, {1, 2, 3, 5})},
                       .attrs = {{"time_axis", Attribute::of_int(1)}, {"batch_axis", Attribute::of_int(0)}}}),
               Error);
}

}  // namespace tessera::testing
