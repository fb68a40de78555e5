// Cache blocking for large matrix products (Goto's loop order): the
// reduction runs in blocks of kc steps, outermost; inside each block,
// parallel tasks of mb row tiles (by nb column panels) copy their rows of A
// for the block into a packed buffer that stays in the second-level cache,
// then walk the column panels, and in each panel the row tiles, which reuse
// the panel's kc x nr slice of the packed B from cache. The register tiles
// accumulate across the blocks (schedule step accumulate: read before a
// block, written after it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "schedule/schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// The register tile of a matrix product: `mr` rows of output axis `row` by
// `nr` columns of axis `col`.
struct GemmTile {
  size_t row = 0, col = 0;
  int64_t mr = 1, nr = 1;
};

// Block sizes: kc reduction steps per block, mb row tiles and nb column
// panels per parallel task.
struct GemmBlocks {
  int64_t kc = 0, mb = 1, nb = 1;
};

// The blocks for `st` (a matrix product with one reduction axis, its rows
// and columns the last two output axes, the columns whole tiles) on a core with
// `l2_bytes` of second-level cache and `l3_bytes` of last-level cache to
// count on; none when the plain register-tiled schedule keeps its streams
// in cache (A within half of l3_bytes, a K x nr panel of B within half of
// l2_bytes).
std::optional<GemmBlocks> gemm_blocks(const te::Stage& st, const GemmTile& tile, int64_t l2_bytes, int64_t l3_bytes);

// Schedules `st` (computed at root, written in place: no epilogue) with the
// blocks; `pack_a` names the input read as A ([.., rows, K], packed per
// block and task into [rows/mr, kc, mr]), empty for none.
void schedule_blocked_gemm(Schedule& s, const te::Stage& st, const GemmTile& tile, const GemmBlocks& blocks,
                           int64_t parallel_grain, const std::string& pack_a);

}  // namespace tessera::schedule
