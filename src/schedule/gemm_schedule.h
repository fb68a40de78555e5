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
#include <vector>

#include "schedule/schedule.h"
#include "support/target.h"
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

// True when `st` can be blocked with `tile`: a matrix product with one
// constant reduction axis, its rows and columns the last two output axes,
// the columns whole tiles.
bool gemm_blockable(const te::Stage& st, const GemmTile& tile);
// True when the plain register-tiled schedule of a blockable `st` would not
// keep its streams in `caches` (A beyond half of the last level, a K x nr
// panel of B beyond half of L2, or A and a panel together beyond L2).
bool gemm_needs_blocking(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches);
// The blocks of a blockable `st` for `caches` (today's heuristic, below).
GemmBlocks gemm_default_blocks(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches);
// The blocks when `st` is blockable and needs blocking; none otherwise.
std::optional<GemmBlocks> gemm_blocks(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches);

// Candidate values of the blocking knobs for a blockable `st`: kc (powers
// of two from 16, K), mb (row tiles per task) and nb (column panels per
// task) (powers of two, all of them), each with its default.
std::vector<int64_t> gemm_kc_values(const te::Stage& st, int64_t default_kc);
std::vector<int64_t> gemm_mb_values(const te::Stage& st, const GemmTile& tile, int64_t default_mb);
std::vector<int64_t> gemm_nb_values(const te::Stage& st, const GemmTile& tile, int64_t default_nb);
// Whether A's rows are packed by default: when each task's block of them is
// packed once, the columns not split among tasks. With the columns split,
// every column block would pack the same rows again (one copy of A per
// block of columns, each a scalar transpose): the tiles read A in place,
// where the block stays in L2 across the task's panels.
bool gemm_packs_a(const te::Stage& st, const GemmTile& tile, const GemmBlocks& b);
// True when `b` is a valid blocking of `st` (each block count within its extent).
bool gemm_blocks_valid(const te::Stage& st, const GemmTile& tile, const GemmBlocks& b);

// The spread of a prefetch of the next panel (schedule.h, prefetch) for
// `tiles` tiles to a panel: the reduction steps between two prefetches of a
// tile, a power of two at most `tiles` (so the tiles of a panel cover every
// row of the next one) and at most 16.
int64_t gemm_prefetch_spread(int64_t tiles);

// Schedules `st` (computed at root, written in place: no epilogue) with the
// blocks; `pack_a` names the input read as A ([.., rows, K], packed per
// block and task into [rows/mr, kc, mr]), empty for none.
void schedule_blocked_gemm(Schedule& s, const te::Stage& st, const GemmTile& tile, const GemmBlocks& blocks,
                           int64_t parallel_grain, const std::string& pack_a);

}  // namespace tessera::schedule
