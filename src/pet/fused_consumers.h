// The elementwise consumers the target fuses after a subprogram's outputs, as
// PET measures its candidates. The fusion planner fuses a product's bias,
// activation or residual into its kernel; a mutant that ends in a transpose
// makes that kernel store transposed, and the same consumers, measured apart
// from it, hide the loss: a choice that measures even alone can slow the
// model's fused kernels after it (BERT-base's feed-forward ones). So each
// candidate is measured with the model's one-to-one (elementwise) consumers
// of its outputs, up to a few nodes, fused after it as they will be.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "pet/subprogram.h"

namespace tessera::pet {

// The model's one-to-one consumers reached from the subprogram's outputs
// through one-to-one ops only (at most `max_nodes`, in model order), outputs
// whose bit is set in `skip_outputs` left out (bit j: output j; those the
// layout context gives a neighbour of its own). Sets sp.fused_consumers and
// sp.consumers_hash (their structure: ops, attributes, wiring, types, the
// constants' dims but not their contents, so repeated blocks share it; 0
// when none).
void find_fused_consumers(const Graph& model, Subprogram& sp, uint64_t skip_outputs, size_t max_nodes = 6);

// The measured graph `g` (sp.graph's signature, weights bound or not) with
// sp.fused_consumers appended: reading its outputs, their constants copied,
// any other value they read a new graph input. Its outputs become the values
// the model uses beyond the subprogram and those consumers (or model
// outputs), subprogram outputs first.
void add_fused_consumers(Graph& g, const Graph& model, const Subprogram& sp);

}  // namespace tessera::pet
