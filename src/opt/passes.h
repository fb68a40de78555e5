// Graph passes. Each is a free function that rewrites the graph in place.
#pragma once

#include "ir/graph.h"

namespace tessera {

// Infers types node by node and replaces every node whose inputs are all
// constant (and Shape/Size of statically shaped values) by constants; removes
// the nodes that no longer reach an output. Returns the number folded.
int fold_constants(Graph& g);

}  // namespace tessera
