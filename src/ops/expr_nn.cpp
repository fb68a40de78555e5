// Tensor-expression definitions of the nn ops.
#include "ops/expr_util.h"

namespace tessera::ops {

void register_nn_exprs(OpRegistry& r) {}

}  // namespace tessera::ops
