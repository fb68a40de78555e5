// Tensor-expression definitions of the misc ops.
#include "ops/expr_util.h"

namespace tessera::ops {

void register_misc_exprs(OpRegistry& r) {}

}  // namespace tessera::ops
