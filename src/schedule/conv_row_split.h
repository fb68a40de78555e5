// How a blocked convolution's row loop is split around its output blocks:
// in two halves outermost (each thread keeps its own pixels across layers),
// or in chunks of H tiles outside the loop of output blocks (each chunk's
// input rows re-read from the second-level cache by every pass of a block).
#pragma once

#include <cstdint>

#include "schedule/contraction_tile.h"
#include "schedule/target_info.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// True for a blocked convolution [n, kb, h, w, kc] of two rows or more:
// its rows may go in halves (knob halves).
bool halves_possible(const te::Stage& st);
// True where they do by default: 8 rows or more, and activations (inputs and
// output) that outweigh the weights.
bool spatial_halves(const te::Stage& st, const TargetInfo& target);

// The H tiles of a blocked 2-D convolution's row loop (per half with
// halves) that chunks may group: 0 where chunks do not apply.
int64_t row_tiles(const te::Stage& st, const TargetInfo& target, const Tile& t, bool halves);
// The default chunk of H tiles (knob row_chunk; 0: none).
int64_t default_row_chunk(const te::Stage& st, const TargetInfo& target, const Tile& t, bool halves);

}  // namespace tessera::schedule
