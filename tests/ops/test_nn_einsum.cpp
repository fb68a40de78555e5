// Einsum on hand-computed cases: products, implicit outputs, diagonals,
// reductions and ellipsis broadcasting.
#include "ops/op_test_util.h"
#include "support/error.h"

namespace tessera::testing {

namespace {
std::vector<Tensor> einsum(const std::string& eq, std::vector<Tensor> ins) {
  return run_op({.op = "Einsum", .inputs = std::move(ins), .attrs = {{"equation", Attribute::of_string(eq)}}});
}
}  // namespace

TEST(NnEinsum, MatrixProductExplicitAndImplicit) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  expect_near(einsum("ij,jk->ik", {a, b})[0], f32({2, 2}, {19, 22, 43, 50}));
  expect_near(einsum("ij,jk", {a, b})[0], f32({2, 2}, {19, 22, 43, 50}));
  expect_near(einsum("i,j->ij", {f32({2}, {1, 2}), f32({2}, {3, 4})})[0], f32({2, 2}, {3, 4, 6, 8}));
}

TEST(NnEinsum, TransposeAndImplicitOrdering) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(einsum("ij->ji", {a})[0], f32({3, 2}, {1, 4, 2, 5, 3, 6}));
  // Implicit output lists labels alphabetically: "ba" is a transpose.
  expect_near(einsum("ba", {a})[0], f32({3, 2}, {1, 4, 2, 5, 3, 6}));
}

TEST(NnEinsum, DiagonalTraceAndSum) {
  Tensor m = f32({2, 2}, {1, 2, 3, 4});
  expect_near(einsum("ii->i", {m})[0], f32({2}, {1, 4}));
  expect_near(einsum("ii", {m})[0], f32({}, {5}));
  expect_near(einsum("ij->", {m})[0], f32({}, {10}));
  expect_near(einsum("ij->j", {m})[0], f32({2}, {4, 6}));
}

TEST(NnEinsum, EllipsisBroadcastsBatchDims) {
  Tensor a = f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = f32({2, 1}, {1, 1});
  expect_near(einsum("...ij,...jk->...ik", {a, b})[0], f32({2, 1, 1}, {3, 7}));
  Tensor i = Tensor::from<int64_t>({2, 2}, {1, 2, 3, 4});
  auto out = einsum("...j->...", {i});
  EXPECT_EQ(out[0].dtype(), DType::I64);
  EXPECT_EQ(out[0].to_int_vector(), (std::vector<int64_t>{3, 7}));
}

TEST(NnEinsum, RejectsBadEquations) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(einsum("ij,ij->i", {a, f32({3, 2}, {1, 2, 3, 4, 5, 6})}), Error);  // extents differ
  EXPECT_THROW(einsum("ijk->i", {a}), Error);                                    // rank mismatch
  EXPECT_THROW(einsum("ij->k", {a}), Error);                                     // unknown output label
  EXPECT_THROW(einsum("i$->i", {a}), Error);
}

TEST(NnEinsum, InferenceKeepsUnknownDims) {
  auto t = infer_types("Einsum", {{DType::F32, {-1, 4, 3}}, {DType::F32, {-1, 3, -1}}},
                       {{"equation", Attribute::of_string("bij,bjk->bki")}});
  EXPECT_EQ(t[0].to_string(), TensorType({DType::F32, {-1, -1, 4}}).to_string());
}

}  // namespace tessera::testing
