// Copying a node from one graph into another, its values mapped.
#pragma once

#include <unordered_map>

#include "ir/graph.h"

namespace tessera {

// Adds to `g` a copy of `n` (op, attributes, name, domain) whose inputs are
// vmap[input] (a null input stays null; every other input must be mapped) and
// whose outputs take `n`'s output names and types; maps `n`'s outputs to the
// copies in `vmap`. Returns the copy.
Node* copy_node(Graph& g, const Node& n, std::unordered_map<const Value*, Value*>& vmap);

}  // namespace tessera
