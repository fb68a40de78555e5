// Neural-network ops: convolution, pooling, normalization, GEMM/MatMul, softmax, resize.
#include "ops/op_helpers.h"

namespace tessera {

void register_nn_ops(OpRegistry& r) {}

}  // namespace tessera
