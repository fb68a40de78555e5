// vectorize_loops on hand-written kernels: run with the evaluator before and
// after (bit for bit), the JIT on the vectorized kernels against the
// evaluator on the originals, the printed vector IR, and the cases that must
// stay serial. Seeded random programs: test_loop_vectorize_random.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/vectorize.h"
#include "loop_vectorize_test_util.h"

namespace tessera::loop {
namespace {

using codegen::testing::random_tensor;
using codegen::testing::expect_same_results;
using testing::count_loops;
using testing::has_loop;
using testing::LoopVectorizeJit;

// --- hand-written kernels ---------------------------------------------------------

// C = A + B over n elements, 8 lanes at a time with a tail guard; the buffers
// have exactly n elements so an unmasked tail access would be caught.
Kernel add_tail_kernel(int64_t n, Var& i) {
  Buffer A("A", DType::F32, {n}), B("B", DType::F32, {n}), C("C", DType::F32, {n});
  Var o("o");
  Expr at = o * 8 + i;
  Stmt body = for_loop(o, int_imm(0), int_imm((n + 7) / 8), ForKind::Serial,
                       for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                                if_then_else(at < n, store(C, load(A, at) + load(B, at), at))));
  return Kernel{"add_tail", {A, B}, {C}, body};
}

TEST(LoopVectorize, ElementwiseAddWithTailGuard) {
  Var i("i");
  Kernel k = add_tail_kernel(30, i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_EQ(count_loops(v.body, ForKind::Vectorized), 0);
  EXPECT_NE(text.find("ramp(o*8, 1, 8)"), std::string::npos) << text;
  EXPECT_NE(text.find(" if "), std::string::npos) << "expected predicated accesses:\n" << text;
  EXPECT_EQ(text.find("vectorized"), std::string::npos) << text;
  std::mt19937 rng(1);
  expect_same_results(k, v, {random_tensor(DType::F32, 30, rng), random_tensor(DType::F32, 30, rng), Tensor(DType::F32, {30})});
}

// A keep_in_memory in a vectorized loop names a buffer, no lane: the loop
// still vectorizes and the statement stays as it was.
TEST(LoopVectorize, KeepInMemoryStaysAsItIs) {
  const int64_t n = 32;
  Buffer A("A", DType::F32, {n}), C("C", DType::F32, {n});
  Var o("o"), i("i");
  Expr at = o * 8 + i;
  Stmt body = for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                       block({store(C, load(A, at) * 2.0f, at), keep_in_memory(C)}));
  Kernel k{"kept", {A}, {C}, for_loop(o, int_imm(0), int_imm(n / 8), ForKind::Serial, body)};
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_EQ(count_loops(v.body, ForKind::Vectorized), 0) << text;
  EXPECT_NE(text.find("keep_in_memory(C[0])"), std::string::npos) << text;
  std::mt19937 rng(3);
  expect_same_results(k, v, {random_tensor(DType::F32, n, rng), Tensor(DType::F32, {n})});
}

// A prefetch in a vectorized loop names the lanes' elements (a ramp); it is
// the one statement evaluated for its effect that vectorizes.
TEST(LoopVectorize, PrefetchesTakeTheLanes) {
  const int64_t n = 30;
  Buffer A("A", DType::F32, {n}), C("C", DType::F32, {n});
  auto kernel = [&](bool as_prefetch) {
    Var o("o"), i("i");
    Expr at = o * 8 + i;
    Stmt hint = as_prefetch ? prefetch(load(A, at, at < n)) : eval_stmt(load(A, at, at < n));
    Stmt body = for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                         block({hint, if_then_else(at < n, store(C, load(A, at) * 2.0f, at))}));
    return Kernel{"hint", {A}, {C}, for_loop(o, int_imm(0), int_imm((n + 7) / 8), ForKind::Serial, body)};
  };
  Kernel k = kernel(true), v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_EQ(count_loops(v.body, ForKind::Vectorized), 0) << text;
  EXPECT_NE(text.find("prefetch(A[ramp(o*8, 1, 8)"), std::string::npos) << text;
  std::mt19937 rng(2);
  expect_same_results(k, v, {random_tensor(DType::F32, n, rng), Tensor(DType::F32, {n})});
  std::string serial = to_string(vectorize_loops(kernel(false)));
  EXPECT_NE(serial.find("for (i, 0, 8)"), std::string::npos) << "an evaluate keeps its loop:\n" << serial;
}

// C[M x N] = A[M x K] * B[K x N], j split by 8 (vectorized), k serial inside;
// with a tail guard when 8 does not divide N.
Kernel matmul_kernel(int64_t M, int64_t N, int64_t K, Var& ji) {
  Buffer A("A", DType::F32, {M, K}), B("B", DType::F32, {K, N}), C("C", DType::F32, {M, N});
  Var i("i"), jo("jo"), k("k");
  Expr j = jo * 8 + ji, c_at = i * N + j;
  Stmt inner = block({store(C, float_imm(0), c_at),
                      for_loop(k, int_imm(0), int_imm(K), ForKind::Serial,
                               store(C, load(C, c_at) + load(A, i * K + k) * load(B, k * N + j), c_at))});
  if (N % 8) inner = if_then_else(j < N, inner);
  Stmt body = for_loop(i, int_imm(0), int_imm(M), ForKind::Parallel,
                       for_loop(jo, int_imm(0), int_imm((N + 7) / 8), ForKind::Serial,
                                for_loop(ji, int_imm(0), int_imm(8), ForKind::Vectorized, inner)));
  return Kernel{"matmul", {A, B}, {C}, body};
}

TEST(LoopVectorize, MatmulWithSerialReductionInside) {
  for (int64_t N : {16, 13}) {
    SCOPED_TRACE("N = " + std::to_string(N));
    Var ji("ji");
    Kernel k = matmul_kernel(5, N, 7, ji);
    Kernel v = vectorize_loops(k);
    std::string text = to_string(v);
    EXPECT_FALSE(has_loop(v.body, ji)) << text;
    EXPECT_EQ(count_loops(v.body, ForKind::Serial), 2) << text;  // jo and k
    EXPECT_NE(text.find("x8(0.0f)"), std::string::npos) << text;
    // A's element is the same for every lane and known in bounds: one scalar load.
    EXPECT_NE(text.find("A[i*7 + k]"), std::string::npos) << text;
    std::mt19937 rng(2);
    expect_same_results(k, v, {random_tensor(DType::F32, 5 * 7, rng), random_tensor(DType::F32, 7 * N, rng),
                               Tensor(DType::F32, {5 * N})});
  }
}

// Y = relu(X) with a select, 16 lanes inside a parallel loop.
Kernel relu_kernel(int64_t rows, Var& i) {
  Buffer X("X", DType::F32, {rows * 16}), Y("Y", DType::F32, {rows * 16});
  Var r("r");
  Expr at = r * 16 + i, x = load(X, at);
  Stmt body = for_loop(r, int_imm(0), int_imm(rows), ForKind::Parallel,
                       for_loop(i, int_imm(0), int_imm(16), ForKind::Vectorized,
                                store(Y, select(x > 0.0f, x, float_imm(0)), at)));
  return Kernel{"relu", {X}, {Y}, body};
}

TEST(LoopVectorize, ReluWithSelectInsideParallelLoop) {
  Var i("i");
  Kernel k = relu_kernel(3, i);
  Kernel v = vectorize_loops(k);
  EXPECT_FALSE(has_loop(v.body, i));
  EXPECT_EQ(count_loops(v.body, ForKind::Parallel), 1);
  EXPECT_NE(to_string(v).find("ramp(r*16, 1, 16)"), std::string::npos) << to_string(v);
  std::mt19937 rng(3);
  Tensor x = random_tensor(DType::F32, 48, rng);
  x.data<float>()[5] = NAN;
  expect_same_results(k, v, {x, Tensor(DType::F32, {48})});
}

// F = f32(I) * 0.5 + f32(i); J = i32(F * 3) + i32(i) - u8(I); the loop var in arithmetic and casts.
Kernel casts_kernel(Var& i) {
  const int64_t n = 24;
  Buffer I("I", DType::I32, {n}), Fin("Fin", DType::F32, {n}), F("F", DType::F32, {n}), J("J", DType::I32, {n});
  Type f32{DType::F32, 1}, i32{DType::I32, 1}, u8{DType::U8, 1};
  Var o("o");
  Expr at = o * 8 + i;
  Stmt body = for_loop(
      o, int_imm(0), int_imm(n / 8), ForKind::Serial,
      for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
               block({store(F, cast(f32, load(I, at)) * 0.5f + cast(f32, Expr(i)), at),
                      store(J, cast(i32, load(Fin, at) * 3.0f) + cast(i32, Expr(i)) -
                                   cast(i32, cast(u8, load(I, at))) / int_imm(3, i32),
                            at)})));
  return Kernel{"casts", {I, Fin}, {F, J}, body};
}

TEST(LoopVectorize, MixedIntFloatCasts) {
  Var i("i");
  Kernel k = casts_kernel(i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_NE(text.find("f32x8("), std::string::npos) << text;
  EXPECT_NE(text.find("i32x8("), std::string::npos) << text;
  std::mt19937 rng(4);
  Tensor fin = random_tensor(DType::F32, 24, rng, -1e10, 1e10);  // saturating casts
  fin.data<float>()[3] = NAN;
  expect_same_results(k, v, {random_tensor(DType::I32, 24, rng, -300, 300), fin, Tensor(DType::F32, {24}),
                             Tensor(DType::I32, {24})});
}

// Y[i] = X[IDX[i]] + X[2*i]: a gather through an index buffer and a strided gather.
Kernel gather_kernel(Var& i) {
  Buffer X("X", DType::F32, {32}), IDX("IDX", DType::I64, {16}), Y("Y", DType::F32, {16});
  Stmt body = for_loop(i, int_imm(0), int_imm(16), ForKind::Vectorized,
                       store(Y, load(X, load(IDX, Expr(i))) + load(X, Expr(i) * 2), Expr(i)));
  return Kernel{"gather", {X, IDX}, {Y}, body};
}

TEST(LoopVectorize, GatherThroughIndexBuffer) {
  Var i("i");
  Kernel k = gather_kernel(i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_NE(text.find("X[IDX[ramp(0, 1, 16)]]"), std::string::npos) << text;
  EXPECT_NE(text.find("X[ramp(0, 2, 16)]"), std::string::npos) << text;
  std::mt19937 rng(5);
  expect_same_results(k, v, {random_tensor(DType::F32, 32, rng), random_tensor(DType::I64, 16, rng, 0, 31.9),
                             Tensor(DType::F32, {16})});
}

// S[3*i + 1] = X[i] where X[i] > 0: a predicated scatter.
Kernel scatter_kernel(Var& i) {
  Buffer X("X", DType::F32, {8}), S("S", DType::F32, {24});
  Expr x = load(X, Expr(i));
  Stmt body = for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                       if_then_else(x > 0.0f, store(S, x * 2.0f, Expr(i) * 3 + 1)));
  return Kernel{"scatter", {X}, {S}, body};
}

TEST(LoopVectorize, PredicatedScatter) {
  Var i("i");
  Kernel k = scatter_kernel(i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_NE(text.find("S[ramp(1, 3, 8) if "), std::string::npos) << text;
  std::mt19937 rng(6);
  expect_same_results(k, v, {random_tensor(DType::F32, 8, rng), random_tensor(DType::F32, 24, rng)});
}

// Lets: a vector let statement, a scalar one, a let expression; an if/else on
// a lane-dependent condition that its branches change, a scalar if inside.
Kernel lets_kernel(Var& i) {
  Buffer X("X", DType::F32, {32}), Y("Y", DType::F32, {32}), Z("Z", DType::I64, {32});
  Var o("o"), t("t", {DType::F32, 1}), s("s", {DType::F32, 1}), q("q");
  Expr at = o * 8 + i, y = load(Y, at);
  Stmt flip = if_then_else(y > 0.0f, store(Y, -y, at), store(Y, y + 100.0f, at));
  Stmt body = for_loop(
      o, int_imm(0), int_imm(4), ForKind::Serial,
      for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
               let_stmt(t, load(X, at) * 2.0f,
                        let_stmt(s, cast({DType::F32, 1}, Expr(o)) + 1.0f,
                                 block({store(Y, Expr(t) + Expr(t) * Expr(s), at), flip,
                                        if_then_else(Expr(o) < 2, store(Z, let(q, Expr(i) * 3, Expr(q) + Expr(q) % 4), at)),
                                        store(Z, load(Z, at) + 1, at)})))));
  return Kernel{"lets", {X}, {Y, Z}, body};
}

TEST(LoopVectorize, LetsAndConditionsOnLanesAndOnOuterVariables) {
  Var i("i");
  Kernel k = lets_kernel(i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_NE(text.find("if (o < 2)"), std::string::npos) << "the scalar if stays:\n" << text;
  std::mt19937 rng(7);
  expect_same_results(k, v, {random_tensor(DType::F32, 32, rng), random_tensor(DType::F32, 32, rng),
                             random_tensor(DType::I64, 32, rng, -10, 10)});
}

// Per-lane temporaries: T[3] allocated inside the vectorized loop; and an
// inner loop writing T2[i*4 + k] (each lane owns 4 elements).
Kernel temporaries_kernel(Var& i) {
  Buffer X("X", DType::F32, {48}), Y("Y", DType::F32, {16}), T("T", DType::F32), T2("T2", DType::F32, {64});
  Var k("k"), k2("k2");
  Stmt fill = for_loop(k, int_imm(0), int_imm(3), ForKind::Serial, store(T, load(X, Expr(i) * 3 + k) * 2.0f, Expr(k)));
  Expr t2_at = Expr(i) * 4 + k2;
  Stmt fill2 = for_loop(k2, int_imm(0), int_imm(4), ForKind::Serial,
                        store(T2, load(T2, t2_at) * 0.5f + load(T, Expr(k2) % 3) + cast({DType::F32, 1}, Expr(k2)), t2_at));
  Stmt body = for_loop(i, int_imm(0), int_imm(16), ForKind::Vectorized,
                       allocate(T, int_imm(3),
                                block({fill, fill2, store(Y, load(T, int_imm(0)) + load(T, int_imm(2)), Expr(i))})));
  return Kernel{"temps", {X}, {Y, T2}, body};
}

TEST(LoopVectorize, PerLaneTemporariesAndInnerLoops) {
  Var i("i");
  Kernel k = temporaries_kernel(i);
  Kernel v = vectorize_loops(k);
  std::string text = to_string(v);
  EXPECT_FALSE(has_loop(v.body, i)) << text;
  EXPECT_NE(text.find("allocate T: f32[48]"), std::string::npos) << text;
  std::mt19937 rng(8);
  expect_same_results(k, v, {random_tensor(DType::F32, 48, rng), Tensor(DType::F32, {16}), random_tensor(DType::F32, 64, rng)});
}

// A tail guard around a load whose index is not known in bounds: for the last
// (all-inactive) vector IDX points far outside S, which must not be read.
TEST(LoopVectorize, MaskedScalarLoadNeverReadsForInactiveLanes) {
  const int64_t n = 12;
  Buffer S("S", DType::F32, {4}), IDX("IDX", DType::I64, {3}), Y("Y", DType::F32, {n});
  Var o("o"), i("i");
  Expr at = o * 8 + i;
  Stmt body = for_loop(o, int_imm(0), int_imm(3), ForKind::Serial,
                       for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                                if_then_else(at < n, store(Y, load(S, load(IDX, Expr(o))) + 1.0f, at))));
  Kernel k{"masked_scalar", {S, IDX}, {Y}, body};
  Kernel v = vectorize_loops(k);
  EXPECT_FALSE(has_loop(v.body, i)) << to_string(v);
  std::mt19937 rng(9);
  expect_same_results(k, v, {random_tensor(DType::F32, 4, rng), Tensor::from<int64_t>({3}, {1, 3, 1000000}),
                             Tensor(DType::F32, {n})});
}

TEST(LoopVectorize, MinThatReadsMemoryIsEvaluatedOnce) {
  // for (i, M[0], 4) vectorized { M[i - 2] = 7; Y[i] = i }: the body overwrites M[0].
  Buffer M("M", DType::I64, {4}), Y("Y", DType::I64, {16});
  Var i("i");
  Kernel k{"min_once", {}, {M, Y},
           for_loop(i, load(M, int_imm(0)), int_imm(4), ForKind::Vectorized,
                    block({store(M, int_imm(7), Expr(i) - 2), store(Y, Expr(i), Expr(i))}))};
  Kernel v = vectorize_loops(k);
  EXPECT_FALSE(has_loop(v.body, i)) << to_string(v);
  expect_same_results(k, v, {Tensor::from<int64_t>({4}, {2, 0, 0, 0}), Tensor(DType::I64, {16})});
}

// --- loops that must stay serial ------------------------------------------------------

void expect_stays_serial(const Kernel& k, const Var& v, const std::vector<Tensor>& args) {
  Kernel out = vectorize_loops(k);
  EXPECT_TRUE(has_loop(out.body, v)) << to_string(out);
  EXPECT_EQ(count_loops(out.body, ForKind::Vectorized), 0) << to_string(out);
  expect_same_results(k, out, args);
}

TEST(LoopVectorize, ReductionIntoOneElementStaysSerial) {
  Buffer X("X", DType::F32, {16}), ACC("ACC", DType::F32, {1});
  Var i("i");
  Stmt body = for_loop(i, int_imm(0), int_imm(16), ForKind::Vectorized,
                       store(ACC, load(ACC, int_imm(0)) + load(X, Expr(i)), int_imm(0)));
  std::mt19937 rng(10);
  expect_stays_serial(Kernel{"sum", {X}, {ACC}, body}, i, {random_tensor(DType::F32, 16, rng), Tensor(DType::F32, {1})});
}

TEST(LoopVectorize, LoopCarriedDependencesStaySerial) {
  Buffer A("A", DType::F32, {17}), B("B", DType::F32, {24});
  Var i("i"), j("j"), k("k");
  std::mt19937 rng(11);
  // A[i+1] = A[i] + 1: each iteration reads what the previous one wrote.
  expect_stays_serial(Kernel{"carried", {}, {A},
                             for_loop(i, int_imm(0), int_imm(16), ForKind::Vectorized,
                                      store(A, load(A, Expr(i)) + 1.0f, Expr(i) + 1))},
                      i, {random_tensor(DType::F32, 17, rng)});
  // B[j + k] over an inner k: lanes j and j+1 share elements.
  expect_stays_serial(Kernel{"overlap", {}, {B},
                             for_loop(j, int_imm(0), int_imm(8), ForKind::Vectorized,
                                      for_loop(k, int_imm(0), int_imm(3), ForKind::Serial,
                                               store(B, load(B, Expr(j) + k) * 2.0f + 1.0f, Expr(j) + k)))},
                      j, {random_tensor(DType::F32, 24, rng)});
  // A permutation scatter cannot be proven collision-free.
  Buffer P("P", DType::I64, {8}), Y("Y", DType::F32, {8});
  expect_stays_serial(Kernel{"perm", {P}, {Y},
                             for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                                      store(Y, load(Y, load(P, Expr(i))) + 1.0f, load(P, Expr(i))))},
                      i, {Tensor::from<int64_t>({8}, {3, 3, 1, 0, 7, 5, 3, 2}), random_tensor(DType::F32, 8, rng)});
}

TEST(LoopVectorize, NonConstantOrTooLongExtentsStaySerial) {
  Buffer X("X", DType::F32, {128}), Y("Y", DType::F32, {128}), N("N", DType::I64, {1});
  Var i("i"), j("j");
  std::mt19937 rng(12);
  Tensor x = random_tensor(DType::F32, 128, rng);
  expect_stays_serial(Kernel{"dynamic", {X, N}, {Y},
                             for_loop(i, int_imm(0), load(N, int_imm(0)), ForKind::Vectorized,
                                      store(Y, load(X, Expr(i)) * 3.0f, Expr(i)))},
                      i, {x, Tensor::from<int64_t>({1}, {100}), Tensor(DType::F32, {128})});
  expect_stays_serial(Kernel{"long", {X}, {Y},
                             for_loop(j, int_imm(0), int_imm(128), ForKind::Vectorized,
                                      store(Y, load(X, Expr(j)) * 3.0f, Expr(j)))},
                      j, {x, Tensor(DType::F32, {128})});
}

TEST(LoopVectorize, NestedVectorizedLoopsVectorizeTheInnerOne) {
  Buffer X("X", DType::F32, {64}), Y("Y", DType::F32, {64});
  Var i("i"), j("j");
  Expr at = i * 8 + j;
  Kernel k{"nested", {X}, {Y},
           for_loop(i, int_imm(0), int_imm(8), ForKind::Vectorized,
                    for_loop(j, int_imm(0), int_imm(8), ForKind::Vectorized, store(Y, load(X, at) + 1.0f, at)))};
  Kernel v = vectorize_loops(k);
  EXPECT_FALSE(has_loop(v.body, j));
  EXPECT_TRUE(has_loop(v.body, i));
  EXPECT_EQ(count_loops(v.body, ForKind::Vectorized), 0);
  std::mt19937 rng(13);
  expect_same_results(k, v, {random_tensor(DType::F32, 64, rng), Tensor(DType::F32, {64})});
}

TEST(LoopVectorize, ExtentsOneAndZero) {
  Buffer Y("Y", DType::I64, {8});
  Var i("i"), j("j"), o("o");
  Kernel k{"tiny", {}, {Y},
           for_loop(o, int_imm(0), int_imm(4), ForKind::Serial,
                    block({for_loop(i, o * 2, int_imm(1), ForKind::Vectorized, store(Y, Expr(i) * 5, Expr(i))),
                           for_loop(j, int_imm(0), int_imm(0), ForKind::Vectorized, store(Y, Expr(j), Expr(j)))}))};
  Kernel v = vectorize_loops(k);
  EXPECT_FALSE(has_loop(v.body, i));
  EXPECT_FALSE(has_loop(v.body, j));
  expect_same_results(k, v, {Tensor(DType::I64, {8})});
}

// --- the JIT on vectorized kernels ---------------------------------------------------------

TEST_P(LoopVectorizeJit, HandWrittenKernels) {
  std::mt19937 rng(20);
  Var i("i");
  {
    SCOPED_TRACE("add_tail");
    Kernel k = add_tail_kernel(30, i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 30, rng), random_tensor(DType::F32, 30, rng),
                                                        Tensor(DType::F32, {30})});
  }
  for (int64_t N : {16, 13}) {
    SCOPED_TRACE("matmul " + std::to_string(N));
    Kernel k = matmul_kernel(5, N, 7, i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 35, rng), random_tensor(DType::F32, 7 * N, rng),
                                                        Tensor(DType::F32, {5 * N})});
  }
  {
    SCOPED_TRACE("relu");
    Kernel k = relu_kernel(3, i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 48, rng), Tensor(DType::F32, {48})});
  }
  {
    SCOPED_TRACE("casts");
    Kernel k = casts_kernel(i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::I32, 24, rng, -300, 300),
                                                        random_tensor(DType::F32, 24, rng, -1e10, 1e10),
                                                        Tensor(DType::F32, {24}), Tensor(DType::I32, {24})});
  }
  {
    SCOPED_TRACE("gather");
    Kernel k = gather_kernel(i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 32, rng),
                                                        random_tensor(DType::I64, 16, rng, 0, 31.9), Tensor(DType::F32, {16})});
  }
  {
    SCOPED_TRACE("scatter");
    Kernel k = scatter_kernel(i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 8, rng), random_tensor(DType::F32, 24, rng)});
  }
  {
    SCOPED_TRACE("lets");
    Kernel k = lets_kernel(i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 32, rng), random_tensor(DType::F32, 32, rng),
                                                        random_tensor(DType::I64, 32, rng, -10, 10)});
  }
  {
    SCOPED_TRACE("temporaries");
    Kernel k = temporaries_kernel(i);
    expect_jit_matches_original(k, vectorize_loops(k), {random_tensor(DType::F32, 48, rng), Tensor(DType::F32, {16}),
                                                        Tensor(DType::F32, {64})});
  }
}

// The suite's tests here and in test_loop_vectorize_random.cpp, for both ISAs.
INSTANTIATE_TEST_SUITE_P(Jit, LoopVectorizeJit, ::testing::Values(codegen::Isa::AVX512, codegen::Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera::loop
