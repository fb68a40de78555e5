// Neural-network ops: convolution, pooling, normalization, GEMM/MatMul,
// softmax, dropout and einsum. Each concept lives in its own nn_*.cpp file;
// this registers them all.
#include "ops/blocked_conv.h"
#include "ops/nn_ops.h"
#include "ops/winograd.h"

namespace tessera {

void register_nn_ops(OpRegistry& r) {
  register_nn_conv_ops(r);
  register_nn_conv_transpose_ops(r);
  register_nn_quant_ops(r);
  register_nn_gemm_ops(r);
  register_nn_pool_ops(r);
  register_nn_global_pool_ops(r);
  register_nn_batchnorm_ops(r);
  register_nn_layernorm_ops(r);
  register_nn_lrn_ops(r);
  register_nn_softmax_ops(r);
  register_nn_dropout_ops(r);
  register_nn_einsum_ops(r);
  register_blocked_conv_ops(r);
  register_winograd_ops(r);
}

}  // namespace tessera
