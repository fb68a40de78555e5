// The register tile of a contraction (GEMM, convolution) or pool: mr rows by
// nr columns of the output accumulated in registers, a blocked convolution's
// tile also spanning output blocks (kb), rows of H (th) and slices of D (td);
// and the tile the contraction rule takes for the knobs left out.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "schedule/schedule_rule.h"
#include "schedule/target_info.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// The register tile of a contraction: `mr` rows of axis `row` (unrolled) by
// `nr` columns of axis `col` (vectorized), accumulated in registers; with
// `kb` > 1 also `kb` consecutive indices of axis `blk` (unrolled: a blocked
// convolution's output channel blocks, each row's input value then feeding
// kb FMAs). A blocked convolution's tile may also span `th` output rows of H
// and `td` slices of D (the axes before the run of W, unrolled): each weight
// vector loaded then feeds th * td * mr FMAs, and a small map is covered by
// fewer tiles, each reading the weight group once.
struct Tile {
  size_t row = 0, col = 0;
  int64_t mr = 1, nr = 1;
  size_t blk = 0;
  int64_t kb = 1;
  int64_t th = 1, td = 1;
};

// Output blocks a blocked convolution's tile may take (knob kb's values).
inline constexpr int64_t kTileBlocks[] = {1, 2, 4};
// Rows of H (knob th) and slices of D (knob td) a blocked convolution's tile
// may span, those within the axis.
inline constexpr int64_t kTileSpatialRows[] = {1, 2, 4};

// True for a convolution whose image every output channel reads alike (not
// depthwise): its channels can be the tile's columns.
bool shared_input(const te::Stage& st);

// The row axes a matrix product (or pool) may take: the axis before the
// columns, and any other before it that the column operand (B) does not
// depend on.
std::vector<size_t> row_axes(const te::Stage& st, size_t col);

// True for a blocked convolution whose block is one or two vectors: its
// tile's columns are the block.
bool blocked_tile(const te::Stage& st, int64_t lanes);

// True for a blocked convolution with rows of H before its run of W (rank 5,
// and rank 6 with slices of D): its tile may span several of them (th, td).
bool spatial_tile(const te::Stage& st, int64_t lanes);

// The tile at `v` (the defaults for knobs left out); none when the stage has
// no vector-wide tile or `v` is not a valid tile.
std::optional<Tile> choose_tile(const te::Stage& st, const TargetInfo& target, const KnobValues& v);

}  // namespace tessera::schedule
