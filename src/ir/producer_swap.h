// Two values trading the nodes that produce them: the rewrite a pass makes
// when a node it just built takes over an existing node's output value (so
// the value keeps its name, its readers and its graph-output slot) and the
// old node is left writing the new node's fresh value, to be erased or
// rewired next.
#pragma once

#include "ir/graph.h"

namespace tessera {

// `a`'s producer (at a's output position) now writes `b`, and `b`'s writes
// `a`; readers, graph-output slots and types stay with the values. Both
// must have a producer.
void swap_producers(Value* a, Value* b);

}  // namespace tessera
