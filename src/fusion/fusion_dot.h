// The graph as Graphviz DOT text for `tessera viz`: one box per node (op and
// name), one edge per value read (with its type); with a fusion plan, every
// fused block is a coloured cluster labelled with its number and mapping type.
#pragma once

#include <string>

#include "fusion/partition.h"

namespace tessera::fusion {

std::string graph_dot(const Graph& g, const Partition* plan = nullptr);

}  // namespace tessera::fusion
