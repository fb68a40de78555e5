// unroll_loops: hand-written kernels run with the evaluator before and after
// (bit for bit), the printed straight-line code, the loops that stay serial,
// and the JIT on unrolled kernels against the evaluator on the originals.
// (test_loop_vectorize_random.cpp also unrolls seeded random programs.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/unroll.h"
#include "loop/visitor.h"
#include "loop_kernels.h"

namespace tessera::loop {
namespace {

using codegen::testing::random_tensor;
using codegen::testing::expect_same_results;

struct Counts {
  int loops = 0, unrolled = 0, stores = 0;
};
Counts count(const Stmt& s) {
  struct Counter : IRVisitor {
    Counts c;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      ++c.loops;
      c.unrolled += op->for_kind == ForKind::Unrolled;
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      ++c.stores;
      IRVisitor::visit(op);
    }
  } v;
  v.visit(s);
  return v.c;
}

TEST(LoopUnroll, ConstantExtentBecomesSimplifiedCopies) {
  Buffer X("X", DType::F32, {4}), Y("Y", DType::F32, {4});
  Var i("i");
  Kernel k{"copy", {X}, {Y},
           for_loop(i, int_imm(0), int_imm(4), ForKind::Unrolled, store(Y, load(X, Expr(i)) * 2.0f, Expr(i)))};
  Kernel u = unroll_loops(k);
  Counts c = count(u.body);
  EXPECT_EQ(c.loops, 0);
  EXPECT_EQ(c.stores, 4);
  EXPECT_EQ(to_string(u.body),
            "Y[0] = X[0]*2.0f\nY[1] = X[1]*2.0f\nY[2] = X[2]*2.0f\nY[3] = X[3]*2.0f\n");
  std::mt19937 rng(1);
  expect_same_results(k, u, {random_tensor(DType::F32, 4, rng), Tensor(DType::F32, {4})});
}

TEST(LoopUnroll, NonConstantMinAndNestedLoops) {
  // for o: for u in [o*4, o*4 + 4) unrolled: for v in [0, 3) unrolled: Y[u*3 + v] = X[u] + v
  Buffer X("X", DType::I64, {16}), Y("Y", DType::I64, {48});
  Var o("o"), u("u"), v("v");
  Kernel k{"nested", {X}, {Y},
           for_loop(o, int_imm(0), int_imm(4), ForKind::Serial,
                    for_loop(u, o * 4, int_imm(4), ForKind::Unrolled,
                             for_loop(v, int_imm(0), int_imm(3), ForKind::Unrolled,
                                      store(Y, load(X, Expr(u)) + v, Expr(u) * 3 + v))))};
  Kernel un = unroll_loops(k);
  Counts c = count(un.body);
  EXPECT_EQ(c.loops, 1);  // o
  EXPECT_EQ(c.unrolled, 0);
  EXPECT_EQ(c.stores, 12);
  EXPECT_NE(to_string(un).find("Y[o*12 + 11] = X[o*4 + 3] + 2"), std::string::npos) << to_string(un);
  std::mt19937 rng(2);
  expect_same_results(k, un, {random_tensor(DType::I64, 16, rng, -100, 100), Tensor(DType::I64, {48})});
}

TEST(LoopUnroll, MinIsEvaluatedOnceBeforeTheBody) {
  // The min reads M[0], which the body increments; and a min mentioning t,
  // which the body rebinds.
  Buffer M("M", DType::I64, {1}), Y("Y", DType::I64, {16});
  Var u("u"), w("w"), t("t");
  Stmt reads = for_loop(u, load(M, int_imm(0)), int_imm(3), ForKind::Unrolled,
                        block({store(M, load(M, int_imm(0)) + 1, int_imm(0)), store(Y, Expr(u) * 10, Expr(u))}));
  Stmt rebinds = for_loop(t, int_imm(0), int_imm(2), ForKind::Serial,
                          for_loop(w, Expr(t) * 2 + 8, int_imm(2), ForKind::Unrolled,
                                   let_stmt(t, Expr(w) + 100, store(Y, Expr(t), Expr(w)))));
  Kernel k{"min_once", {}, {M, Y}, block({reads, rebinds})};
  Kernel un = unroll_loops(k);
  EXPECT_EQ(count(un.body).unrolled, 0);
  expect_same_results(k, un, {Tensor::from<int64_t>({1}, {2}), Tensor(DType::I64, {16})});
}

TEST(LoopUnroll, LongOrNonConstantExtentsStaySerial) {
  Buffer X("X", DType::F32, {100}), Y("Y", DType::F32, {100}), N("N", DType::I64, {1});
  Var i("i"), j("j");
  Kernel k{"serial", {X, N}, {Y},
           block({for_loop(i, int_imm(0), int_imm(100), ForKind::Unrolled, store(Y, load(X, Expr(i)) + 1.0f, Expr(i))),
                  for_loop(j, int_imm(0), load(N, int_imm(0)), ForKind::Unrolled,
                           store(Y, load(Y, Expr(j)) * 2.0f, Expr(j)))})};
  Kernel un = unroll_loops(k);
  Counts c = count(un.body);
  EXPECT_EQ(c.loops, 2);
  EXPECT_EQ(c.unrolled, 0);
  std::mt19937 rng(3);
  expect_same_results(k, un, {random_tensor(DType::F32, 100, rng), Tensor::from<int64_t>({1}, {37}), Tensor(DType::F32, {100})});
}

TEST(LoopUnroll, ExtentsZeroAndOne) {
  Buffer Y("Y", DType::I32, {4});
  Var i("i"), j("j");
  Kernel k{"tiny", {}, {Y},
           block({for_loop(i, int_imm(2), int_imm(1), ForKind::Unrolled, store(Y, int_imm(7, {DType::I32, 1}), Expr(i))),
                  for_loop(j, int_imm(0), int_imm(0), ForKind::Unrolled, store(Y, int_imm(9, {DType::I32, 1}), Expr(j)))})};
  Kernel un = unroll_loops(k);
  EXPECT_EQ(to_string(un.body), "Y[2] = (i32)7\n");
  expect_same_results(k, un, {Tensor(DType::I32, {4})});
}

// Y[o*4 + u] lanes: an unrolled loop around vector code, with a guard that
// unrolling resolves for some copies.
Kernel vector_body_kernel() {
  Buffer X("X", DType::F32, {32}), Y("Y", DType::F32, {32});
  Var u("u");
  Expr idx = ramp(Expr(u) * 8, int_imm(1), 8);
  Stmt body = for_loop(u, int_imm(0), int_imm(4), ForKind::Unrolled,
                       if_then_else(Expr(u) < 3, store(Y, max(load(X, idx), broadcast(float_imm(0), 8)), idx),
                                    store(Y, load(X, idx) * broadcast(float_imm(-1), 8), idx)));
  return Kernel{"vector_body", {X}, {Y}, body};
}

TEST(LoopUnroll, VectorBodiesAndResolvedGuards) {
  Kernel k = vector_body_kernel();
  Kernel un = unroll_loops(k);
  std::string text = to_string(un);
  EXPECT_EQ(text.find("if ("), std::string::npos) << text;  // u < 3 is known in every copy
  EXPECT_EQ(count(un.body).stores, 4);
  std::mt19937 rng(4);
  expect_same_results(k, un, {random_tensor(DType::F32, 32, rng), Tensor(DType::F32, {32})});
}

TEST(LoopUnroll, PaddedConvolutionFromTheSharedKernels) {
  Kernel k = testing::conv1d_padded_kernel(11);
  Kernel un = unroll_loops(k);
  EXPECT_EQ(count(un.body).unrolled, 0);
  std::mt19937 rng(5);
  expect_same_results(k, un, {random_tensor(DType::F32, 11, rng), random_tensor(DType::F32, 3, rng), Tensor(DType::F32, {11})});
}

// Matmul with the k loop marked unrolled (extent K <= 64).
Kernel matmul_unrolled_k(int64_t M, int64_t N, int64_t K) {
  Buffer A("A", DType::F32, {M, K}), B("B", DType::F32, {K, N}), C("C", DType::F32, {M, N});
  Var i("i"), j("j"), k("k");
  Expr c_at = i * N + j;
  Stmt body = for_loop(i, int_imm(0), int_imm(M), ForKind::Serial,
                       for_loop(j, int_imm(0), int_imm(N), ForKind::Serial,
                                block({store(C, float_imm(0), c_at),
                                       for_loop(k, int_imm(0), int_imm(K), ForKind::Unrolled,
                                                store(C, load(C, c_at) + load(A, i * K + k) * load(B, k * N + j), c_at))})));
  return Kernel{"matmul_unrolled", {A, B}, {C}, body};
}

TEST(LoopUnroll, MatmulInnerLoop) {
  Kernel k = matmul_unrolled_k(3, 5, 6);
  Kernel un = unroll_loops(k);
  Counts c = count(un.body);
  EXPECT_EQ(c.loops, 2);
  EXPECT_EQ(c.stores, 7);
  std::mt19937 rng(6);
  expect_same_results(k, un, {random_tensor(DType::F32, 18, rng), random_tensor(DType::F32, 30, rng), Tensor(DType::F32, {15})});
}

class LoopUnrollJit : public codegen::testing::JitIsaTest {};

TEST_P(LoopUnrollJit, UnrolledKernels) {
  std::mt19937 rng(7);
  {
    Kernel k = testing::conv1d_padded_kernel(19);
    expect_jit_matches_original(k, unroll_loops(k), {random_tensor(DType::F32, 19, rng), random_tensor(DType::F32, 3, rng),
                                                     Tensor(DType::F32, {19})});
  }
  {
    Kernel k = matmul_unrolled_k(4, 7, 9);
    expect_jit_matches_original(k, unroll_loops(k), {random_tensor(DType::F32, 36, rng), random_tensor(DType::F32, 63, rng),
                                                     Tensor(DType::F32, {28})});
  }
  {
    Kernel k = vector_body_kernel();
    expect_jit_matches_original(k, unroll_loops(k), {random_tensor(DType::F32, 32, rng), Tensor(DType::F32, {32})});
  }
}

INSTANTIATE_TEST_SUITE_P(Jit, LoopUnrollJit, ::testing::Values(codegen::Isa::AVX512, codegen::Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera::loop
