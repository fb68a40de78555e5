// Hand-built loop-IR kernels shared by the loop tests.
#pragma once

#include "loop/stmt.h"

namespace tessera::loop::testing {

// C[M x N] = A[M x K] * B[K x N], outer loop parallel.
inline Kernel matmul_kernel(int64_t M, int64_t N, int64_t K) {
  Buffer A("A", DType::F32, {M, K}), B("B", DType::F32, {K, N}), C("C", DType::F32, {M, N});
  Var i("i"), j("j"), k("k");
  Expr c_at = i * N + j;
  Stmt init = store(C, float_imm(0), c_at);
  Stmt update = store(C, load(C, c_at) + load(A, i * K + k) * load(B, k * N + j), c_at);
  Stmt body = for_loop(i, int_imm(0), int_imm(M), ForKind::Parallel,
                       for_loop(j, int_imm(0), int_imm(N), ForKind::Serial,
                                block({init, for_loop(k, int_imm(0), int_imm(K), ForKind::Serial, update)})));
  return Kernel{"matmul", {A, B}, {C}, body};
}

// Y = relu(X) over n elements (n a multiple of 8), 8 lanes at a time.
inline Kernel relu_vector_kernel(int64_t n) {
  Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {n});
  Var o("o");
  Expr idx = ramp(o * 8, int_imm(1), 8);
  Stmt body = for_loop(o, int_imm(0), int_imm(n / 8), ForKind::Parallel,
                       store(Y, max(load(X, idx), broadcast(float_imm(0), 8)), idx));
  return Kernel{"relu", {X}, {Y}, body};
}

// 1-D convolution, window 3, zero padding 1: Y[x] = sum_r X[x + r - 1] * W[r].
inline Kernel conv1d_padded_kernel(int64_t width) {
  Buffer X("X", DType::F32, {width}), W("W", DType::F32, {3}), Y("Y", DType::F32, {width});
  Var x("x"), r("r");
  Expr in = x + r;
  Stmt acc = store(Y, load(Y, x) + load(X, in - 1) * load(W, r), x);
  Stmt body = for_loop(
      x, int_imm(0), int_imm(width), ForKind::Serial,
      block({store(Y, float_imm(0), x),
             for_loop(r, int_imm(0), int_imm(3), ForKind::Unrolled,
                      if_then_else(in >= 1 && in < width + 1, acc))}));
  return Kernel{"conv1d", {X, W}, {Y}, body};
}

}  // namespace tessera::loop::testing
