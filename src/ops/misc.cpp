// Everything else: Constant, Identity, Shape, Size, Cast, Range, random, If/Loop.
#include "ops/op_helpers.h"

namespace tessera {

void register_misc_ops(OpRegistry& r) {}

}  // namespace tessera
