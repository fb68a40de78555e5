// The layout a subprogram's neighbours hold its values in, as PET measures
// its candidates. A candidate timed alone reads its inputs from and writes its
// outputs to plain NCHW graph values; in the model, a value between two
// convolutions stays in the channel-blocked layout NCHWc (opt's blocked-layout
// pass). Timed alone, the original then pays layout changes at its edges that
// it never pays in the model, and a mutant the target does not block (a 1x1
// conv as a MatMul, channels reshaped into a spatial dim) pays none of those
// it causes there: kernel sums favoured such mutants that made ResNeXt-50 and
// BERT slower as deployed. So each input and output the model holds blocked
// is produced (consumed) in the measured graph by an identity depthwise 1x1
// convolution, which the target keeps blocked: the original runs blocked
// end to end as in the model, a mutant pays the reorders it would cause.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "ir/graph.h"
#include "pet/subprogram.h"

namespace tessera::pet {

// Bit i: the subprogram's activation input i is held blocked in the model
// (`blocked` names the model's values the target keeps blocked); bit 32 + j:
// its output j. Only 4-D and 5-D f32 values count; inputs and outputs past
// the 32nd are taken as plain.
uint64_t layout_context(const Subprogram& sp, const std::set<std::string>& blocked);

// The output bits of a context (bit j: output j held blocked).
uint64_t context_outputs(uint64_t context);

// The standalone graph (activations first among its inputs, as the search
// binds them) with the context's neighbours added: each input of a set bit
// read through an identity depthwise 1x1 Conv from a new graph input of its
// type, each output of a set bit passed through one. Inputs, outputs, their
// order and types are unchanged.
void add_layout_context(Graph& g, uint64_t context);

// A hash that also tells the context apart (the hash itself for 0): costs in
// PET's database and the subprograms shared by structure are keyed by it.
uint64_t hash_with_context(uint64_t hash, uint64_t context);

}  // namespace tessera::pet
