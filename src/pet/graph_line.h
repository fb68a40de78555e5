// A graph written as one line of text (no tab, no newline): how PET's
// database (pet/pet_db.h) keeps a chosen candidate, so that a second
// compilation rebuilds it directly, without generating, verifying or
// correcting mutants again.
//
// The line is a sequence of space-separated tokens, starting with "g1" (the
// format's version): the graph's opset and ir_version, then its inputs
// (name and type), constants (name and tensor), nodes (op, domain, name,
// inputs, outputs with their types, attributes) and outputs by name. Names
// and strings are percent-escaped; floats are written as their bit patterns
// (exact); a tensor's elements as runs of equal elements (the masks and
// zero biases a candidate holds are mostly runs).
//
// What it cannot write (string tensors, subgraph attributes) makes
// encode_graph_line return nullopt: the caller then keeps no line. A line it
// did not write (another version, truncated, edited) makes
// decode_graph_line throw tessera::Error; the caller also checks the
// decoded graph's structural hash against the one it recorded.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace tessera::pet {

std::optional<std::string> encode_graph_line(const Graph& g);
// Throws tessera::Error (saying what is malformed) for a line encode_graph_line
// did not write.
std::unique_ptr<Graph> decode_graph_line(const std::string& line);

}  // namespace tessera::pet
