// Registers every op family's tensor-expression definitions.
#include "ops/expr_util.h"

namespace tessera {

void register_op_exprs(OpRegistry& r) {
  ops::register_elementwise_exprs(r);
  ops::register_tensor_exprs(r);
  ops::register_nn_exprs(r);
  ops::register_reduce_exprs(r);
  ops::register_misc_exprs(r);
}

}  // namespace tessera
