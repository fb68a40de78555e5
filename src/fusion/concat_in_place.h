// Concatenations done in place (issue 23, phase 1): when every dim of a
// Concat's output before its axis is 1, each input is a contiguous byte range
// of the output, so its producer can write straight into that range and the
// Concat itself copies nothing. This decides which concats qualify and where
// each input sits; the fusion planner keeps those concats out of their
// branches' blocks and the runtime plan (runtime/concat_views.h) turns them
// into view steps.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"

namespace tessera::fusion {

struct ConcatPlacement {
  const Node* concat = nullptr;
  std::vector<int64_t> offsets;  // per input: its byte offset inside the concat's output
};

// The concats whose inputs may live inside their output, in graph order, with
// every input's offset; `type` gives a value's (concrete) type. A concat
// qualifies when its output is static, all dims before the axis are 1, and it
// is neither a graph output nor read by a subgraph; and each input is the
// distinct, static, same-dtype output of a node (no graph input, constant,
// graph output or subgraph capture) that no earlier qualifying concat claimed.
std::vector<ConcatPlacement> in_place_concats(const Graph& g, const std::function<TensorType(const Value*)>& type);

}  // namespace tessera::fusion
