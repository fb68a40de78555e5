// Numpy-style batched matrix product shared by MatMul, MatMulInteger and
// QLinearMatMul: shape rules and an i-k-j reference loop.
#pragma once

#include "ops/nn_ops.h"

namespace tessera {

struct MatMulShape {
  Dims a_batch, b_batch, batch;  // batch dims of A, B and their broadcast
  int64_t M = -1, K = -1, N = -1;
  bool a_vec = false, b_vec = false;  // 1-D operands (promoted, then squeezed)
  Dims out_dims;
};

// A [..., M, K] x B [..., K, N]; 1-D A is [1, K], 1-D B is [K, 1]. Unknown
// dims (-1) propagate; known mismatches throw naming the node.
MatMulShape matmul_shape(const Node& n, const Dims& a, const Dims& b);

// Gemm's attributes, read once for inference, the reference and the expression.
struct GemmAttrs {
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
};
GemmAttrs gemm_attrs(const OpAttrs& a);

// y[batch, M, N] = sum_k a[batch_a, M, K] * b[batch_b, K, N], with y zeroed by
// the caller; A is the accumulator type.
template <class A>
void matmul_batched(const A* __restrict a, const A* __restrict b, A* __restrict y, const MatMulShape& s) {
  const int64_t M = s.M, K = s.K, N = s.N;
  const int64_t nb = numel_of(s.batch);
  BroadcastIndexer ia(s.a_batch, s.batch), ib(s.b_batch, s.batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const A* ap = a + ia(bi) * M * K;
    const A* bp = b + ib(bi) * K * N;
    A* yp = y + bi * M * N;
    for (int64_t i = 0; i < M; ++i) {
      A* yr = yp + i * N;
      for (int64_t k = 0; k < K; ++k) {
        const A av = ap[i * K + k];
        const A* br = bp + k * N;
        for (int64_t j = 0; j < N; ++j) yr[j] += av * br[j];
      }
    }
  }
}

}  // namespace tessera
