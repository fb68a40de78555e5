// Concatenations done in place (issue 23): when every dim of a Concat's
// output before its axis is 1, each input is a contiguous byte range of the
// output, so its producer can write straight into that range and the Concat
// itself copies nothing. Several concats may share one buffer (a root): a
// dense block's concats are prefixes of its last one, and a nested concat
// is a sub-range of the one reading it. This decides which concats qualify,
// their root and where each input sits; the fusion planner never fuses those
// concats and the runtime plan (runtime/concat_views.h) turns them into view
// steps.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"

namespace tessera::fusion {

struct ConcatPlacement {
  const Node* concat = nullptr;
  std::vector<int64_t> offsets;  // per input: its byte offset inside the concat's output
  const Value* root = nullptr;   // the value whose buffer holds the output; null: the output is a root
  int64_t base = 0;              // the output's byte offset inside root (0 for a root)
};

// The concats whose inputs may live inside one root buffer, in graph order.
// `type` gives a value's (concrete) type; `eligible`, when given, limits the
// candidates (the runtime plan: concats alone in their block). A candidate's
// output is static, all dims before the axis are 1, and it is neither a
// graph output nor read by a subgraph; each input is the distinct, static,
// same-dtype output of a node (no graph input, constant, graph output or
// subgraph capture). Candidates are placed largest output first: a concat
// whose output or some input is already placed sits in that root at the
// matching base, and is accepted only when every placed input is exactly at
// base plus its offset there and no unplaced input overlaps a value of the
// root other than the concats enclosing this one.
std::vector<ConcatPlacement> in_place_concats(const Graph& g, const std::function<TensorType(const Value*)>& type,
                                              const std::function<bool(const Node&)>& eligible = {});

}  // namespace tessera::fusion
