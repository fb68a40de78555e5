// A rough static estimate of a PET candidate's time on the target, used only
// to order the search's work (pet/search.h): which mutants to verify and
// measure first, and which cannot win at all. The search decides by
// measurements; the estimate never picks a candidate.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace tessera::pet {

// Seconds for `g` (a subprogram or candidate graph whose inputs from
// `num_activations` on are weights): multiply-adds at a rate that is higher
// for convolutions the Winograd pass can take (3x3, stride 1, dilation 1),
// bytes moved, and a fixed cost per kernel. Ops on weights alone are free:
// they fold at compile time. Adding nodes never lowers it, so a mutant's
// estimate bounds the estimate of the mutant completed with corrections.
double estimate_seconds(const Graph& g, size_t num_activations);

}  // namespace tessera::pet
