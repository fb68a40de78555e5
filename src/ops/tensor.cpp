// Data-movement and shape ops: reshape, transpose, concat, split, slice, gather, scatter, pad, expand, tile.
#include "ops/op_helpers.h"

namespace tessera {

void register_tensor_ops(OpRegistry& r) {}

}  // namespace tessera
