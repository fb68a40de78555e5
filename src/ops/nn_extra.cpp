// Larger neural-network ops: attention, resize, recurrent nets, signal
// processing, losses and vision ops.
#include "ops/op_helpers.h"

namespace tessera {

void register_nn_extra_ops(OpRegistry& r) {}

}  // namespace tessera
