// Einsum compiled and checked against the reference: matmuls, batched
// products, traces / diagonals, implicit outputs, ellipses and broadcasting.
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

OpCase einsum(const std::string& eq, std::vector<Tensor> ins) {
  OpCase c{"Einsum", std::move(ins)};
  c.opset = 12;
  c.attrs["equation"] = Attribute::of_string(eq);
  return c;
}

TEST(CompiledEinsum, Equations) {
  std::mt19937 rng(31);
  auto r = [&](Dims d, DType t = DType::F32) { return random_tensor(t, d, rng); };
  expect_compiled_matches(einsum("ij,jk->ik", {r({3, 4}), r({4, 5})}));
  expect_compiled_matches(einsum("ij,jk", {r({3, 4}), r({4, 5})}));
  expect_compiled_matches(einsum("bij,bjk->bik", {r({2, 3, 4}), r({2, 4, 5})}));
  expect_compiled_matches(einsum("bhqd,bhkd->bhqk", {r({1, 2, 3, 8}), r({1, 2, 5, 8})}));
  expect_compiled_matches(einsum("ii->i", {r({4, 4})}));
  expect_compiled_matches(einsum("ii", {r({4, 4})}));
  expect_compiled_matches(einsum("ij->", {r({3, 4})}));
  expect_compiled_matches(einsum("ij->ji", {r({3, 4})}));
  expect_compiled_matches(einsum("i,j->ij", {r({3}), r({5})}));
  expect_compiled_matches(einsum("i,i", {r({7}), r({7})}));
  expect_compiled_matches(einsum("...ij,...jk->...ik", {r({2, 3, 4}), r({4, 2})}));
  expect_compiled_matches(einsum("...ij,...jk", {r({2, 1, 3, 4}), r({3, 4, 2})}));
  expect_compiled_matches(einsum("bij,bj->bi", {r({2, 3, 4}), r({1, 4})}));
  expect_compiled_matches(einsum("ij,jk,kl->il", {r({2, 3}), r({3, 4}), r({4, 2})}));
  expect_compiled_matches(einsum("i j , j k -> i k", {r({2, 3}), r({3, 2})}));
  expect_compiled_matches(einsum("ij,kj->ik", {r({3, 4}, DType::F16), r({2, 4}, DType::F16)}), {1e-2, 1e-2});
  expect_compiled_matches(einsum("ij,jk->ik", {r({3, 4}, DType::F64), r({4, 5}, DType::F64)}), {1e-12, 1e-12});
  expect_compiled_matches(einsum("ij,jk->ik", {r({3, 4}, DType::I32), r({4, 5}, DType::I32)}));
  expect_compiled_matches(einsum("bi,bi->b", {r({3, 4}, DType::I64), r({3, 4}, DType::I64)}));
  expect_compiled_matches(einsum("iij->ij", {r({3, 3, 2})}));
}

}  // namespace
}  // namespace tessera::testing
