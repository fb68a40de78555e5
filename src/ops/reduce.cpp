// Reductions: Reduce*, ArgMax/ArgMin, CumSum, TopK.
#include "ops/op_helpers.h"

namespace tessera {

void register_reduce_ops(OpRegistry& r) {}

}  // namespace tessera
