// Register-tiled contractions and pools (see contraction_schedule.h).
#include "schedule/contraction_schedule.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "schedule/chunked_padding.h"
#include "schedule/gemm_schedule.h"
#include "schedule/stage_queries.h"

namespace tessera::schedule {

namespace {

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
constexpr int64_t kTileBlocks[] = {1, 2, 4};
// Rows of H (knob th) and slices of D (knob td) a blocked convolution's tile
// may span, those within the axis.
constexpr int64_t kTileSpatialRows[] = {1, 2, 4};

// Rows of a tile with `vectors` accumulators per row that fit the register
// budget (28 of 32 zmm registers with AVX-512, 12 of 16 ymm with AVX2: a few
// stay free for operands), chosen to waste the fewest rows on `extent`.
int64_t tile_rows(int64_t extent, int64_t vectors, const TargetInfo& target) {
  int64_t budget = target.register_budget() / std::max<int64_t>(vectors, 1);
  int64_t best = std::max<int64_t>(std::min(budget, extent), 1);
  int64_t best_waste = (extent + best - 1) / best * best - extent;
  for (int64_t m = budget; m >= std::max<int64_t>(budget / 2, 1); --m) {
    int64_t waste = (extent + m - 1) / m * m - extent;
    if (waste < best_waste) best = m, best_waste = waste;
  }
  return best;
}

// True for a blocked convolution [n, kb, h, w, kc] (the layout its class
// declares) with 8 rows or more whose activations (inputs and output)
// outweigh its weights: splitting its rows in halves keeps each thread on its
// own pixels; where the weights weigh more, a split by output blocks has each
// thread read only half of them. An odd number of rows (Inception's 147, 35,
// 17) has no halves of whole rows: there the rows go outermost instead.
bool halves_possible(const te::Stage& st) {
  const Dims& shape = st.shapes[0];
  return te::is_blocked_conv(st.op_class) && shape.size() == 5 && shape[2] >= 2;
}
// Elements of a stage's constant inputs (weights) and of its output and
// other inputs (activations).
struct Footprint {
  int64_t weights = 0, activations = 0;
};
Footprint footprint(const te::Stage& st, const TargetInfo& target) {
  Footprint f{0, numel_of(st.shapes[0])};
  for (const te::Tensor& in : st.inputs())
    (target.constant_inputs.count(in.name()) ? f.weights : f.activations) += numel_of(in.shape());
  return f;
}
bool spatial_halves(const te::Stage& st, const TargetInfo& target) {
  if (!halves_possible(st) || st.shapes[0][2] < 8) return false;
  const Footprint f = footprint(st, target);
  return f.activations >= f.weights;
}

// The register tile of a Winograd-domain product ([P, Mb, T, b]: one 1x1
// convolution per point, ConvBlocked of rank 4): kb output blocks by mr tile
// rows. Each reduction step loads kb * (b / lanes) weight vectors and
// broadcasts mr input values for mr * kb * (b / lanes) FMAs. For kb, the
// most rows whose accumulators, weight vectors and one broadcast fit the
// vector registers (and the accumulator budget; at most T). The default kb
// (dividing Mb) has the fewest loads per FMA among the tiles whose weight
// panel (kb blocks x K x b) and input rows (mr x K) stay in the first-level
// cache across the tile, or among all when none does: 256 channels (K) take
// 2 blocks x 14 rows (a 32 KiB panel), 512 take 4 x 6 (10 loads per 24 FMAs
// from the second level, where 2 x 8 took 10 per 16); AVX2 2 x 6.
bool winograd_product(const te::Stage& st) {
  return st.op_class == te::OpClass::ConvBlocked && st.shapes[0].size() == 4;
}
int64_t product_rows(const te::Stage& st, const TargetInfo& target, int64_t lanes, int64_t kb) {
  const int64_t weights = kb * std::max<int64_t>(st.shapes[0][3] / lanes, 1);
  return std::min<int64_t>(
      {(target.vector_registers - weights - 1) / weights, target.register_budget() / weights, st.shapes[0][2]});
}
int64_t product_blocks(const te::Stage& st, const TargetInfo& target, int64_t lanes) {
  const Dims& shape = st.shapes[0];
  const int64_t k = std::max<int64_t>(reduce_extent(st), 1), esize = static_cast<int64_t>(dtype_size(st.dtypes[0]));
  int64_t best = 1;
  double best_loads = 0;
  bool best_fits = false;
  for (int64_t kb : kTileBlocks) {
    const int64_t mr = product_rows(st, target, lanes, kb);
    if (shape[1] % kb != 0 || mr < 1) continue;
    const double weights = static_cast<double>(kb * std::max<int64_t>(shape[3] / lanes, 1));
    const double loads = (static_cast<double>(mr) + weights) / (static_cast<double>(mr) * weights);
    const bool fits = (kb * shape[3] + mr) * k * esize <= target.planned.l1d;
    if (best_loads == 0 || (fits && !best_fits) || (fits == best_fits && loads < best_loads))
      best = kb, best_loads = loads, best_fits = fits;
  }
  return best;
}

// True for a convolution whose image every output channel reads alike (not
// depthwise): its channels can be the tile's columns.
bool shared_input(const te::Stage& st) {
  bool shared = false;
  for (const te::Tensor& in : st.inputs()) shared |= !reads_use(st, in.stage(), st.axes[1]);
  return shared;
}

// The row axes a matrix product (or pool) may take: the axis before the
// columns, and any other before it that the column operand (B) does not
// depend on.
std::vector<size_t> row_axes(const te::Stage& st, size_t col) {
  const size_t rank = st.shapes[0].size();
  std::vector<size_t> r;
  for (size_t d = 0; d + 1 < rank; ++d) {
    bool shared = true;
    for (const te::Tensor& in : st.inputs())
      if (reads_use(st, in.stage(), st.axes[col])) shared = shared && !reads_use(st, in.stage(), st.axes[d]);
    if (shared || d == rank - 2) r.push_back(d);
  }
  return r;
}

// True for a blocked convolution whose block is one or two vectors: its
// tile's columns are the block.
bool blocked_tile(const te::Stage& st, int64_t lanes) {
  const Dims& shape = st.shapes[0];
  const size_t rank = shape.size();
  return te::is_blocked_conv(st.op_class) && rank >= 3 && shape[rank - 1] % lanes == 0 && shape[rank - 1] <= 2 * lanes;
}

// True for a blocked convolution with rows of H before its run of W (rank 5,
// and rank 6 with slices of D): its tile may span several of them (th, td).
bool spatial_tile(const te::Stage& st, int64_t lanes) {
  const size_t rank = st.shapes[0].size();
  return blocked_tile(st, lanes) && !winograd_product(st) && (rank == 5 || rank == 6);
}

// Bytes of weights for `blocks` output blocks of a blocked convolution.
double block_weights(const te::Stage& st, const TargetInfo& target, int64_t blocks) {
  const double weights = static_cast<double>(footprint(st, target).weights) * static_cast<double>(dtype_size(st.dtypes[0]));
  return weights / static_cast<double>(std::max<int64_t>(st.shapes[0][1], 1)) * static_cast<double>(blocks);
}

// True for a blocked convolution whose weights for one output block
// outweigh the planned second-level cache (DeepLab's atrous pyramid and
// FCN's head: 3x3 over 2048 channels, 1.2 MB a block with AVX-512): every
// tile streams them from memory, so its tile takes one block by default and
// twice the pixels, each weight vector loaded feeding twice the FMAs,
// rather than pairs of blocks (which halve the reads of the input, here in
// cache).
bool streams_weights(const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  if (st.op_class != te::OpClass::ConvBlocked || shape.size() < 3 || shape[1] < 1) return false;
  return block_weights(st, target, 1) > static_cast<double>(target.planned.l2);
}

// Whether a blocked convolution's tile of `pixels` rows and slices (th x td)
// takes pairs of output blocks by default: not depthwise (its blocks read
// different inputs), not streaming its weights (streams_weights), and only
// while a tile of pixels x min(W, 4) by two blocks fits the budget.
bool tile_pairs(const te::Stage& st, const TargetInfo& target, int64_t vectors, int64_t pixels) {
  const Dims& shape = st.shapes[0];
  return shape[1] % 2 == 0 && st.op_class != te::OpClass::DepthwiseConvBlocked && !streams_weights(st, target) &&
         (pixels == 1 || 2 * vectors * pixels * std::min<int64_t>(shape[shape.size() - 2], 4) <= target.register_budget());
}

// The default rows of H (th) and slices of D (td) of a blocked
// convolution's tile. Where its weights outweigh its activations (a small
// map of many channels: R3D-18's last stage, 512 channels on 2x7x7 or
// 1x4x4), every tile re-reads its group of weights, and a tile of one run of
// W leaves most of the register budget unused. The tile then spans the rows
// and slices that give it the most pixels, among those that
// - still hold whole runs of W (mr = W: the budget has room for them),
// - divide H and D (no row computed twice by a shifted last tile),
// - keep the run's output blocks (kb, below), unless that group of blocks
//   outweighs the planned second-level cache: every tile then streams it
//   from beyond, and fewer tiles save more than a second block's shared
//   input reads;
// - leave at least kSpatialRowsMinTiles tiles to share among the threads.
// Elsewhere (wide maps, light weights, a tile of whole rows no larger) the
// tile is one row and slice.
struct SpatialRows {
  int64_t th = 1, td = 1;
};
// Tiles a layer keeps at least when its tile spans rows, so that the
// threads' shares of the fused tile loop stay nearly even (3 tiles on 2
// threads: one computes 2, the other 1).
constexpr int64_t kSpatialRowsMinTiles = 16;
SpatialRows default_spatial_rows(const te::Stage& st, const TargetInfo& target, int64_t lanes) {
  if (!spatial_tile(st, lanes)) return {};
  const Footprint f = footprint(st, target);
  if (f.weights <= f.activations) return {};
  const Dims& shape = st.shapes[0];
  const size_t rank = shape.size();
  const int64_t w = shape[rank - 2], h = shape[rank - 3], d = rank == 6 ? shape[rank - 4] : 1;
  const int64_t vectors = shape[rank - 1] / lanes;
  const int64_t kb0 = tile_pairs(st, target, vectors, 1) ? 2 : 1;
  const bool streamed = block_weights(st, target, kb0) > static_cast<double>(target.planned.l2);
  SpatialRows best;
  int64_t most = tile_rows(w, kb0 * vectors, target);  // the one-row tile's pixels
  for (int64_t td : kTileSpatialRows)
    for (int64_t th : kTileSpatialRows) {
      if (td > d || d % td != 0 || th > h || h % th != 0) continue;
      const int64_t pixels = th * td, kb = tile_pairs(st, target, vectors, pixels) ? 2 : 1;
      const int64_t mr = tile_rows(w, kb * vectors * pixels, target);
      if (mr != w || kb * vectors * pixels * mr > target.register_budget() || (kb != kb0 && !streamed)) continue;
      if (shape[0] * (shape[1] / kb) * (d / td) * (h / th) < kSpatialRowsMinTiles) continue;
      if (pixels * mr > most) most = pixels * mr, best = {th, td};
    }
  return best;
}

// Row chunks of a blocked convolution (knob row_chunk: H tiles a chunk, 0
// for none). With the output blocks outermost, each pass of a block (or kb
// of them) reads every input row: ResNet's 1x1 layers of 1024-2048 channels
// on DeepLab's and FCN's 40x40 map read 6.5-13 MB of input 8-64 times. In
// chunks of H tiles outside the loop of output blocks, the passes read the
// chunk's rows from the second-level cache, and each chunk streams the
// weights once instead. As data: a chunk's input rows fit this share of the
// planned second-level cache (the most tiles that do, at least one); chunks
// are taken where one pass's rows do not fit it and the bytes read from
// memory, estimated, are fewer: passes x rows + weights unchunked, rows +
// chunks x weights chunked (a 3x3 layer of 2048 channels, 19-38 MB of
// weights, stays unchunked).
constexpr double kRowChunkCacheShare = 0.5;
// By default only where the re-reads are many and long: at least this many
// passes over rows that exceed this many planned second-level caches (ResNet-50's
// 1x1 layers at 224x224, 2-8 passes over 0.8-3.2 MB, ran slower chunked:
// those rows come back from the last-level cache cheaply).
constexpr int64_t kRowChunkMinPasses = 8;
constexpr double kRowChunkMinRows = 2.0;

// The H tiles of a blocked 2-D convolution's row loop (per half with
// halves) that chunks may group: 0 where chunks do not apply (not a dense
// blocked image convolution, odd rows with halves: its row tiles go
// outermost already, or th not dividing the rows).
int64_t row_tiles(const te::Stage& st, const TargetInfo& target, const Tile& t, bool halves) {
  const Dims& shape = st.shapes[0];
  if (st.op_class != te::OpClass::ConvBlocked || shape.size() != 5 || !spatial_tile(st, lanes_of(target, st.dtypes[0])))
    return 0;
  if (halves && shape[2] % 2 != 0) return 0;
  const int64_t rows = halves ? shape[2] / 2 : shape[2];
  return rows % t.th == 0 ? rows / t.th : 0;
}

// The default chunk (0: none), by the rule above.
int64_t default_row_chunk(const te::Stage& st, const TargetInfo& target, const Tile& t, bool halves) {
  const Dims& shape = st.shapes[0];
  const int64_t tiles = row_tiles(st, target, t, halves);
  const int64_t passes = shape[1] / t.kb;
  if (tiles < 2 || passes < 2 || shape[2] < 1) return 0;
  const double esize = static_cast<double>(dtype_size(st.dtypes[0]));
  double image = 0, weights = 0;  // bytes: activation inputs of one image, constant inputs
  for (const te::Tensor& in : st.inputs()) {
    const double bytes = static_cast<double>(numel_of(in.shape())) * esize;
    if (target.constant_inputs.count(in.name())) weights += bytes;
    else if (in.rank() == 5 && in.shape()[0] > 0) image += bytes / static_cast<double>(in.shape()[0]);
  }
  const double tile_bytes = image / static_cast<double>(shape[2]) * static_cast<double>(t.th);
  const double rows = tile_bytes * static_cast<double>(tiles);  // what one pass reads
  const double budget = kRowChunkCacheShare * static_cast<double>(target.planned.l2);
  if (rows <= budget || passes < kRowChunkMinPasses || rows <= kRowChunkMinRows * static_cast<double>(target.planned.l2))
    return 0;
  int64_t chunk = 1;
  for (int64_t c = 2; c < tiles; ++c)
    if (tiles % c == 0 && tile_bytes * static_cast<double>(c) <= budget) chunk = c;
  const double unchunked = static_cast<double>(passes) * rows + weights;
  const double chunked = rows + static_cast<double>(tiles / chunk) * weights;
  return chunked < unchunked ? chunk : 0;
}

// The tile at `v` (today's heuristic for knobs left out); none when the
// stage has no vector-wide tile or `v` is not a valid tile.
//
// Convolutions (NCHW output) vectorize output channels when some input (the
// image) is read alike by every output channel and there are whole vectors
// of channels, or many of them: a tile is a run of output pixels along the
// width (rows) by nr channels (columns); input pixels are broadcast and the
// packed weights read as vectors, so strides and narrow images cost nothing.
// Otherwise (depthwise convolutions), and for matrix products and pools, the
// columns are the innermost output axis and the rows the channel axis
// (convolution) or the one before it.
std::optional<Tile> choose_tile(const te::Stage& st, const TargetInfo& target, const KnobValues& v) {
  const Dims& shape = st.shapes[0];
  const size_t rank = shape.size();
  const int64_t lanes = lanes_of(target, st.dtypes[0]);
  const bool conv = te::is_conv(st.op_class) && rank >= 3;
  // The register budget holds the accumulators, and rows stay within the axis.
  auto valid = [&](const Tile& t) -> std::optional<Tile> {
    if (t.mr < 1 || t.mr > std::max<int64_t>(shape[t.row], 1) || t.nr < 1 || t.kb < 1) return std::nullopt;
    if (t.th < 1 || t.td < 1 || (t.th > 1 && t.th > shape[t.row - 1]) || (t.td > 1 && t.td > shape[t.row - 2]))
      return std::nullopt;
    if (t.th * t.td * t.mr * std::max<int64_t>(t.nr / lanes, 1) * t.kb > target.register_budget()) return std::nullopt;
    return t;
  };
  // Blocked convolutions ([N, Kb, H, W, b]): the block's lanes are the
  // columns, a run of output pixels along the width the rows; each tap
  // broadcasts one input value per row against one vector of packed weights.
  // Two output blocks a tile (knob kb) when there are pairs of them (not
  // depthwise: its blocks read different inputs; not streaming its weights,
  // streams_weights): half the input reads per FMA, and enough accumulators
  // on narrow images (7 pixels x 2 blocks).
  //
  // Rows of H (knob th) and slices of D (knob td) in the tile too, by
  // default where the weights are heavy and the map small
  // (default_spatial_rows): kb and mr then follow, so that one knob moved
  // gives a good tile (a 4x4 map at th=4: kb=1, mr=4): kb pairs only while
  // a tile of th x td x min(W, 4) pixels by two blocks fits the budget
  // (tile_pairs), mr the rows that fit beside them.
  if (blocked_tile(st, lanes)) {
    Tile t{rank - 2, rank - 1, 1, shape[rank - 1]};
    const bool depthwise = st.op_class == te::OpClass::DepthwiseConvBlocked;
    const bool product = winograd_product(st);
    const int64_t vectors = t.nr / lanes;
    if (spatial_tile(st, lanes)) {
      const SpatialRows d = default_spatial_rows(st, target, lanes);
      t.th = knob_or(v, "th", d.th);
      if (rank == 6) t.td = knob_or(v, "td", d.td);
    }
    if (!spatial_tile(st, lanes) && v.count("th")) return std::nullopt;
    if (rank != 6 && v.count("td")) return std::nullopt;
    const int64_t pixels = t.th * t.td;
    const bool pairs = tile_pairs(st, target, vectors, pixels);
    t.kb = knob_or(v, "kb", product ? product_blocks(st, target, lanes) : pairs ? 2 : 1);
    if (t.kb < 1 || shape[1] % t.kb != 0 || (depthwise && t.kb > 1)) return std::nullopt;
    if (t.kb > 1) t.blk = 1;
    t.mr = knob_or(v, "mr", product ? product_rows(st, target, lanes, t.kb)
                                    : tile_rows(shape[rank - 2], t.kb * vectors * pixels, target));
    return valid(t);
  }
  // Channel vectors need an input (the image) that every output channel
  // reads alike; a depthwise convolution reads one channel per output channel.
  // Many channels that are not whole vectors still vectorize, the last tile masked.
  const int64_t k = shape[1];
  const bool channels = knob_or(v, "channel_cols", conv && shared_input(st) && (k % lanes == 0 || k >= 4 * lanes));
  if (channels) {
    if (!conv || !shared_input(st)) return std::nullopt;
    Tile t{rank - 1, 1, 1, k % (2 * lanes) == 0 || k % lanes != 0 ? 2 * lanes : lanes};
    t.nr = knob_or(v, "nr", t.nr / lanes) * lanes;
    t.mr = knob_or(v, "mr", tile_rows(shape[rank - 1], t.nr / lanes, target));
    return valid(t);
  }
  Tile t{conv ? 1 : rank - 2, rank - 1, 1, 1};
  // Matrix products take as rows the longest axis before the columns that
  // the column operand (B) does not depend on: batch axes over a shared B
  // ([128, 1, K] x [K, N]) are rows of one GEMM, not GEMVs re-reading B.
  if (!conv) {
    const std::vector<size_t> rows = row_axes(st, t.col);
    for (size_t d : rows)
      if (shape[d] > shape[t.row]) t.row = d;
    t.row = static_cast<size_t>(knob_or(v, "row", static_cast<int64_t>(t.row)));
    if (std::find(rows.begin(), rows.end(), t.row) == rows.end()) return std::nullopt;
  } else if (v.count("row")) {
    return std::nullopt;
  }
  const int64_t ej = shape[t.col];
  if (ej < lanes / 2) return std::nullopt;
  t.nr = knob_or(v, "nr", ej >= 2 * lanes ? 2 : 1) * lanes;
  t.mr = tile_rows(shape[t.row], t.nr / lanes, target);
  // Matrix products with two vectors of columns: the rows that ran fastest
  // (8 with AVX-512: 16 accumulators, fewer streams of A than 14; 6 with AVX2:
  // 12 accumulators, where 4 leave the FMA latency exposed), unless their
  // last tile wastes more than 1/32 of the rows.
  const int64_t rows = shape[t.row], preferred = target.vector_bytes >= 64 ? 8 : 6;
  if (!conv && t.nr == 2 * lanes && rows >= preferred &&
      ((rows + preferred - 1) / preferred * preferred - rows) * 32 <= rows)
    t.mr = preferred;
  t.mr = knob_or(v, "mr", t.mr);
  return valid(t);
}

// The constant inputs (weights) the tile's columns do not read contiguously,
// each with the dims to block: the column dim by nr, after (for B [K, N],
// read a row per reduction step) the reduction dim as one block.
struct Packing {
  std::string input;
  int kd = -1;  // the reduction dim made one block first; -1 for none
  int64_t kd_extent = 0;
  int d = -1;   // the column dim, split by nr
};
std::vector<Packing> packings(const te::Stage& st, const TargetInfo& target, const Tile& tile) {
  std::vector<Packing> r;
  for (const te::Tensor& in : st.inputs()) {
    if (in.stage().kind != te::StageKind::Placeholder || !target.constant_inputs.count(in.name())) continue;
    int d = dim_indexed_by(st, in.stage(), st.axes[tile.col]);
    if (d < 0 || tile.nr <= 1) continue;
    if (d == in.rank() - 1) {
      // Columns already contiguous, but each step of the reduction moves a
      // whole row of B on ([K, N]: one page per step for wide N): pack B into
      // panels [N/nr, K, nr] (the reduction dim made one block, then the
      // columns split) so a tile streams one contiguous panel.
      const auto& raxes = st.body.as<loop::ReduceNode>()->axes;
      int kd = raxes.size() == 1 ? dim_indexed_by(st, in.stage(), raxes[0].var) : -1;
      if (kd < 0 || kd == d || in.dim(d) <= tile.nr) continue;
      r.push_back({in.name(), kd, in.dim(kd), d});
      continue;
    }
    r.push_back({in.name(), -1, 0, d});
  }
  return r;
}

// A: the input read in place as the product's left operand ([.., rows, K]),
// which blocked products pack per block; "" for none.
std::string left_operand(const te::Stage& st, const TargetInfo& target, const Tile& tile) {
  const size_t rank = st.shapes[0].size();
  std::string a;
  for (const te::Tensor& in : st.inputs())
    if (in.stage().kind == te::StageKind::Placeholder && !target.constant_inputs.count(in.name()) &&
        in.rank() == static_cast<int>(rank) && dim_indexed_by(st, in.stage(), st.axes[tile.row]) == in.rank() - 2 &&
        dim_indexed_by(st, in.stage(), st.body.as<loop::ReduceNode>()->axes[0].var) == in.rank() - 1)
      a = in.name();
  return a;
}

// Every choice of the rule for one stage.
struct Contraction {
  Tile tile;
  bool pack = true;      // constant operands packed into panels
  bool halves = false;   // a blocked convolution's rows in two halves outermost
  int64_t row_chunk = 0;  // a blocked convolution's H tiles a chunk, outside its output blocks (0: none)
  bool pad_chunks = false;  // its padded input made per (image, row chunk), the parallel loop (chunked_padding.h)
  bool unroll = true;    // the tile's rows unrolled
  bool blocked = false;  // cache-blocked (GEMM)
  GemmBlocks blocks;
  std::string pack_a;    // A packed per block ("" for none)
  bool sum_blocks = false;  // the reduction summed in blocks (sum_block_loop), each added to the total
  bool prefetch = false;    // each tile prefetches its share of the next column panel (prefetch_ahead.h)
};

// Terms a block of the reduction sums before it joins the total: one chain
// over thousands of terms (a 3x3 convolution over 512 channels sums 4,608)
// rounds off about sqrt(terms) times as much as blocks of a few hundred. On
// by default wherever it applies: it brings every model of bench/RESULTS.md
// to ONNX Runtime's accuracy (bench/ACCURACY.md), whose kernels sum in
// blocks too.
constexpr int64_t kSumBlockTerms = 256;

int64_t reduce_axis_extent(const te::Stage& st, const std::string& name) {
  for (const auto& a : st.body.as<loop::ReduceNode>()->axes)
    if (a.var.name() == name) return *loop::as_const_int(a.extent);
  return 1;
}

// Whether summing in blocks applies: a sum over constant extents longer than
// two blocks.
bool can_sum_blocks(const te::Stage& st) {
  const auto* red = st.body.as<loop::ReduceNode>();
  if (!red || red->op != loop::ReduceOp::Sum) return false;
  int64_t terms = 1;
  for (const auto& a : red->axes) {
    const int64_t* n = loop::as_const_int(a.extent);
    if (!n) return false;
    terms *= *n;
  }
  return terms >= 2 * kSumBlockTerms;
}

// Splits the local stage's reduction (loops `order`, outermost first, the
// first `reduce` of them reduction loops) into blocks of about
// kSumBlockTerms terms; returns the loop whose iterations are one block's
// terms (the accumulate loop), "" when the reduction is one block.
std::string sum_block_loop(Schedule& s, const te::Stage& st, const std::string& local, std::vector<std::string>& order,
                           size_t reduce) {
  int64_t inner = 1;
  for (size_t k = 1; k < reduce; ++k) inner *= reduce_axis_extent(st, order[k]);
  const int64_t outer = reduce_axis_extent(st, order[0]);
  int64_t f = std::max<int64_t>(1, kSumBlockTerms / inner);
  if (f >= outer) return reduce > 1 ? order[1] : "";
  while (outer % f != 0) --f;  // whole blocks: no guards in the reduction
  if (f == 1) return reduce > 1 ? order[1] : "";
  const std::string r = order[0];
  s.split(local, r, f);
  order[0] = outer_name(r);
  order.insert(order.begin() + 1, inner_name(r));
  return inner_name(r);
}

// True when the product may be cache-blocked with the tile: no epilogue
// (the blocked tiles accumulate in place), one block of output channels.
bool can_block(const te::Stage& st, const Tile& t, const te::Stage* epilogue) {
  return !epilogue && t.kb == 1 && st.op_class == te::OpClass::MatMul && gemm_blockable(st, {t.row, t.col, t.mr, t.nr});
}

// True when a product's tiles may prefetch the next column panel: a matrix
// product (not cache-blocked) whose constant operand is packed into panels
// of the tile's columns.
bool panel_prefetchable(const te::Stage& st, const TargetInfo& target, const Tile& t, bool pack, bool blocked) {
  return st.op_class == te::OpClass::MatMul && pack && !blocked && !packings(st, target, t).empty();
}

// The choices at `v`; none when `v` is not valid. `pad`: the padded input
// that may be made in chunks (padded_input), or null.
std::optional<Contraction> choose(const te::Stage& st, const TargetInfo& target, const te::Stage* epilogue,
                                  const te::Stage* pad, const KnobValues& v) {
  std::optional<Tile> tile = choose_tile(st, target, v);
  if (!tile) return std::nullopt;
  Contraction c;
  c.tile = *tile;
  c.pack = knob_or(v, "pack", 1);
  // Chunked padding takes chunks of an image's row tiles (whole images at
  // most), without halves.
  const int64_t image_tiles = pad ? row_tiles(st, target, *tile, false) : 0;
  const int64_t pad_chunk = image_tiles > 0 ? default_pad_chunk(st, *pad, target, image_tiles, tile->th) : 0;
  c.pad_chunks = knob_or(v, "pad_chunks", pad_chunk > 0);
  if (c.pad_chunks && image_tiles < 1) return std::nullopt;
  // Halves split H first, th rows then tile each half.
  const bool halves_fit = halves_possible(st) && st.shapes[0][2] / 2 >= tile->th;
  c.halves = knob_or(v, "halves", spatial_halves(st, target) && halves_fit && !c.pad_chunks);
  if (c.halves && (!halves_fit || c.pad_chunks)) return std::nullopt;
  c.row_chunk = knob_or(v, "row_chunk", c.pad_chunks ? std::max<int64_t>(pad_chunk, 1)
                                                     : default_row_chunk(st, target, *tile, c.halves));
  if (c.row_chunk != 0) {
    const int64_t tiles = row_tiles(st, target, *tile, c.halves), most = c.pad_chunks ? tiles : tiles - 1;
    if (c.row_chunk < 1 || c.row_chunk > most || tiles % c.row_chunk != 0) return std::nullopt;
  }
  if (c.pad_chunks && c.row_chunk == 0) return std::nullopt;
  c.unroll = knob_or(v, "unroll", 1);
  c.sum_blocks = knob_or(v, "sum_blocks", can_sum_blocks(st) ? 1 : 0);
  if (c.sum_blocks && !can_sum_blocks(st)) return std::nullopt;
  const GemmTile g{tile->row, tile->col, tile->mr, tile->nr};
  const bool blockable = can_block(st, *tile, epilogue);
  c.blocked = knob_or(v, "blocked", blockable && gemm_needs_blocking(st, g, target.planned));
  const bool prefetchable = panel_prefetchable(st, target, *tile, c.pack, c.blocked);
  c.prefetch = knob_or(v, "prefetch", prefetchable);
  if (c.prefetch && !prefetchable) return std::nullopt;
  if (!c.blocked) return c;
  if (!blockable) return std::nullopt;
  const GemmBlocks d = gemm_default_blocks(st, g, target.planned);
  c.blocks = {knob_or(v, "kc", d.kc), knob_or(v, "mb", d.mb), knob_or(v, "nb", d.nb)};
  if (!gemm_blocks_valid(st, g, c.blocks)) return std::nullopt;
  if (knob_or(v, "pack_a", gemm_packs_a(st, g, c.blocks))) c.pack_a = left_operand(st, target, *tile);
  return c;
}

// Whether the stage is one this rule tiles (before choosing a tile).
bool contraction_stage(const te::Stage& st) {
  const Dims& shape = st.shapes[0];
  const bool pool = st.op_class == te::OpClass::Pool;  // window reductions: tiled like a contraction without weights
  // F32; average pools accumulate in F64 (as the reference does).
  const DType dt = st.dtypes[0];
  if (shape.size() < 2 || !te::is_top_reduce(st) || !(dt == DType::F32 || (pool && dt == DType::F64))) return false;
  if (st.body.as<loop::ReduceNode>()->op != loop::ReduceOp::Sum && !pool) return false;
  return te::is_conv(st.op_class) || st.op_class == te::OpClass::MatMul || pool;
}

// True when the product is cache-blocked at its default tile; its tiles then
// accumulate in place across blocks of the reduction, and an elementwise
// consumer (bias, residual add) runs as a pass of its own after them.
bool blocked_by_default(const te::Stage& st, const TargetInfo& target) {
  if (st.op_class != te::OpClass::MatMul || !contraction_stage(st)) return false;
  const std::optional<Tile> t = choose_tile(st, target, {});
  return t && t->kb == 1 && gemm_blocks(st, {t->row, t->col, t->mr, t->nr}, target.planned).has_value();
}

// Register tiling for contractions (GEMM, convolution): the output is
// computed in mr x nr tiles accumulated in a local buffer (compute_at), the
// columns vectorized and the rows unrolled, the reduction loops outside the
// tile; the tiles run in parallel. The accumulator is a cache_write copy of
// the stage, or, with an epilogue (a fused consumer, see epilogue_of), the
// stage itself, finished by the epilogue tile by tile.
void schedule_tiles(Schedule& s, const te::Stage& st, const TargetInfo& target, const te::Stage* epilogue,
                    const te::Stage* pad, const Contraction& c) {
  const Dims& shape = st.shapes[0];
  const Tile* tile = &c.tile;
  size_t rank = shape.size();
  const std::string& name = st.name;
  // Constant inputs (weights) that the tile's columns do not read
  // contiguously are packed once: the dimension the columns index is split
  // by nr and its inner part moved last ([K, C, R, S] -> [K/nr, C, R, S, nr],
  // B^T [N, K] -> [N/nr, K, nr]), so each tile row reads one vector.
  bool cols_packed = false;  // some input's column dim split into panels of nr
  std::string panels;        // the first such packed copy
  if (c.pack)
    for (const Packing& p : packings(st, target, *tile)) {
      s.cache_read(p.input, name);
      if (p.kd >= 0) s.layout(p.input + "." + name, p.kd, p.kd_extent);
      s.layout(p.input + "." + name, p.d, tile->nr);
      if (!cols_packed) panels = p.input + "." + name;
      cols_packed = true;
    }
  // Large products: cache-blocked, the register tiles accumulating across
  // blocks of the reduction, A's rows packed per block.
  if (c.blocked) {
    schedule_blocked_gemm(s, st, {tile->row, tile->col, tile->mr, tile->nr}, c.blocks, target.parallel_grain, c.pack_a);
    return;
  }
  const te::Stage& tiled = epilogue ? *epilogue : st;
  std::string local = epilogue ? name : name + ".local";
  if (!epilogue) s.cache_write(name);
  std::string I = tiled.axes[tile->row].name(), J = tiled.axes[tile->col].name();
  // Rows (or columns) the tile does not divide: the last tile shifted back
  // to end at the edge (recomputing a few) rather than every tile guarded,
  // its vectors masked: guarded columns mask the accumulator's loads and
  // stores too, which AVX2 runs slowly (bench/MEASUREMENTS.md, "Shifted
  // tiles"). Columns read from
  // panels of nr stay guarded: a shifted tile would straddle two panels.
  if (shape[tile->col] % tile->nr != 0 && shape[tile->col] > tile->nr && !cols_packed)
    s.split_shift(tiled.name, J, tile->nr);
  else
    s.split(tiled.name, J, tile->nr);
  auto split_rows = [&](const std::string& loop, int64_t extent, int64_t f) {
    if (extent % f != 0 && extent > f) s.split_shift(tiled.name, loop, f);
    else s.split(tiled.name, loop, f);
  };
  split_rows(I, shape[tile->row], tile->mr);
  std::string B = tiled.axes[tile->blk].name();
  if (tile->kb > 1) s.split(tiled.name, B, tile->kb);
  // Tile loops: the output axes in order, split axes by their outer part;
  // then the tile's rows and columns.
  std::vector<std::string> outer;
  std::vector<int64_t> outer_extent;  // iterations of each (a matrix product's: no kb)
  for (size_t d = 0; d < rank; ++d) {
    outer.push_back(d == tile->row   ? outer_name(I)
                    : d == tile->col ? outer_name(J)
                    : tile->kb > 1 && d == tile->blk ? outer_name(B)
                                                     : tiled.axes[d].name());
    outer_extent.push_back(d == tile->row ? (shape[d] + tile->mr - 1) / tile->mr
                           : d == tile->col ? (shape[d] + tile->nr - 1) / tile->nr
                                            : shape[d]);
  }
  // A matrix product walks the rows inside each column panel: consecutive
  // tiles (one thread's chunk) reuse the same panel of B from cache instead
  // of streaming all of B once per row of tiles. (Convolutions already have
  // their channel tiles outside the pixel tiles; pools have no panel.)
  if (tile->row < tile->col && st.op_class == te::OpClass::MatMul) {
    const auto r = static_cast<std::ptrdiff_t>(tile->row), col = static_cast<std::ptrdiff_t>(tile->col);
    std::rotate(outer.begin() + r, outer.begin() + col, outer.begin() + col + 1);
    std::rotate(outer_extent.begin() + r, outer_extent.begin() + col, outer_extent.begin() + col + 1);
  }
  // Blocked convolutions over maps larger than their weights: the rows in
  // two halves outermost, so with the thread pool's fixed runs each thread
  // computes the same half of the image in every layer and reads what it
  // wrote from its own cache; with the output blocks outermost, every layer
  // read half its input from the other core (bench/MEASUREMENTS.md, "Row
  // halves"). An odd number of rows has no whole halves: its row tiles go
  // outermost, before the output blocks, so the pool's runs of the fused
  // loop still give each thread the same half of the image.
  const bool halves_rows = c.halves && outer[2] == tiled.axes[2].name();
  const bool halves = halves_rows && shape[2] % 2 == 0;
  const bool rows_first = halves_rows && !halves;
  if (halves) {
    const std::string hname = tiled.axes[2].name();
    s.split(tiled.name, hname, shape[2] / 2);
    outer[2] = inner_name(hname);
  }
  // Slices of D and rows of H in the tile (a half's rows with halves): the
  // axis split by td or th, its outer part a tile loop, its inner part in
  // the tile outside the blocks and the run of W.
  std::vector<std::string> spatial;
  for (auto [axis, f] : {std::pair{tile->row - 2, tile->td}, std::pair{tile->row - 1, tile->th}}) {
    if (f == 1) continue;
    const std::string a = outer[axis];
    split_rows(a, halves && axis == 2 ? shape[2] / 2 : shape[axis], f);
    outer[axis] = outer_name(a);
    spatial.push_back(inner_name(a));
  }
  if (halves) outer.insert(outer.begin() + 1, outer_name(tiled.axes[2].name()));
  // Chunks of H tiles (row_chunk): the chunk loop before the output blocks'
  // loop, the tiles within the chunk where the H tiles were.
  if (c.row_chunk > 0) {
    const size_t h = halves ? 3 : 2;  // the loop of H tiles, after the output blocks'
    const std::string a = outer[h];
    s.split(tiled.name, a, c.row_chunk);
    outer[h] = inner_name(a);
    outer.insert(outer.begin() + static_cast<std::ptrdiff_t>(h) - 1, outer_name(a));
  }
  if (rows_first) {
    std::rotate(outer.begin() + 1, outer.begin() + 2, outer.begin() + 3);
    std::rotate(outer_extent.begin() + 1, outer_extent.begin() + 2, outer_extent.begin() + 3);
  }
  std::vector<std::string> full = outer;
  full.insert(full.end(), spatial.begin(), spatial.end());
  if (tile->kb > 1) full.push_back(inner_name(B));
  full.push_back(inner_name(I));
  full.push_back(inner_name(J));
  s.reorder(tiled.name, full);
  // With enough work the tile loops are fused and run in parallel; the
  // accumulator is computed inside the innermost of them. With chunked
  // padding only the images and chunks are fused (each iteration pads its
  // chunk's rows), the tiles running in turn inside.
  int64_t work = numel_of(shape) * std::max<int64_t>(reduce_extent(st), 1);
  bool parallel = work >= target.parallel_grain;
  const size_t fused = c.pad_chunks ? 2 : outer.size();
  std::string tile_loop = outer[0];
  for (size_t k = 1; k < fused; ++k) {
    if (parallel) s.fuse(tiled.name, tile_loop, outer[k]);
    tile_loop = parallel ? fused_name(tile_loop, outer[k]) : outer[k];
  }
  if (parallel) s.parallel(tiled.name, tile_loop);
  if (c.pad_chunks) {
    schedule_chunked_padding(s, *pad, tiled.name, tile_loop, lanes_of(target, st.dtypes[0]));
    tile_loop = outer.back();
  }
  s.compute_at(local, tiled.name, tile_loop);
  // The accumulator keeps its columns innermost, so each row is one vector.
  if (tile->col != rank - 1) s.layout(local, static_cast<int64_t>(tile->col), tile->nr);
  // Inside the tile: reduction loops outermost, then rows (unrolled), columns (vectorized).
  std::string AI = st.axes[tile->row].name(), AJ = st.axes[tile->col].name();
  std::vector<std::string> lorder;
  for (const auto& a : st.body.as<loop::ReduceNode>()->axes) lorder.push_back(a.var.name());
  // A blocked convolution's input lanes (ri) innermost among the reductions:
  // consecutive steps read the next channel of the same pixels and the next
  // vector of weights, and no input value is reused across steps (kept
  // live in registers by the compiler, it would push the accumulators out).
  if (te::is_blocked_conv(st.op_class))
    for (const auto& a : st.body.as<loop::ReduceNode>()->axes) {
      bool lanes = false;
      for (const te::Tensor& in : st.inputs()) lanes |= in.rank() > 1 && dim_indexed_by(st, in.stage(), a.var) == in.rank() - 1;
      if (!lanes) continue;
      lorder.erase(std::find(lorder.begin(), lorder.end(), a.var.name()));
      lorder.push_back(a.var.name());
    }
  // Blocks inside rows: a row's broadcast input is used by its kb FMAs at
  // once instead of kept live across them (register pressure).
  const size_t reduce_loops = lorder.size();
  const std::string block_loop = c.sum_blocks ? sum_block_loop(s, st, local, lorder, reduce_loops) : "";
  const std::string step_loop = lorder.back();  // the innermost reduction loop
  std::vector<std::string> local_spatial;
  if (tile->td > 1) local_spatial.push_back(st.axes[tile->row - 2].name());
  if (tile->th > 1) local_spatial.push_back(st.axes[tile->row - 1].name());
  lorder.insert(lorder.end(), local_spatial.begin(), local_spatial.end());
  lorder.push_back(AI);
  if (tile->kb > 1) lorder.push_back(st.axes[tile->blk].name());
  lorder.push_back(AJ);
  s.reorder(local, lorder);
  if (!block_loop.empty()) s.accumulate(local, block_loop);
  // Each tile prefetches its share of the panel the tiles of the next column
  // panel stream (the tile loops inside the column loop: one panel's tiles),
  // spread over its reduction steps (prefetch_ahead.h).
  const auto col = std::find(outer.begin(), outer.end(), outer_name(J));
  if (c.prefetch && parallel && !panels.empty() && col != outer.end()) {
    int64_t ahead = 1;
    for (auto it = col + 1; it != outer.end(); ++it) ahead *= outer_extent[static_cast<size_t>(it - outer.begin())];
    s.prefetch(local, panels, step_loop, tiled.name, tile_loop, ahead, gemm_prefetch_spread(ahead));
  }
  if (tile->kb > 1) s.unroll(local, st.axes[tile->blk].name());
  if (c.unroll) {
    for (const std::string& a : local_spatial) s.unroll(local, a);
    s.unroll(local, AI);
  }
  s.vectorize(local, AJ);
  // The tile's write-back (with its epilogue) unrolled too: constant indices
  // into the accumulator keep it in registers.
  if (tile->kb > 1) s.unroll(tiled.name, inner_name(B));
  if (c.unroll) {
    for (const std::string& a : spatial) s.unroll(tiled.name, a);
    s.unroll(tiled.name, inner_name(I));
  }
  s.vectorize(tiled.name, inner_name(J));
}

// The rule's knobs: the tile (mr rows; nr columns in vectors; the row axis
// of a product, channels or pixels as a convolution's columns; kb output
// blocks, th rows of H and td slices of D of a blocked convolution), packing
// of constant operands, halves of a blocked convolution's rows and chunks of
// its row tiles (row_chunk), its padded input made per chunk (pad_chunks),
// unrolled rows, and for large products the cache blocking (blocked, kc, mb,
// nb, pack_a).
class ContractionRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "contraction"; }
  std::vector<te::OpClass> op_classes() const override {
    return {te::OpClass::MatMul, te::OpClass::Conv, te::OpClass::ConvBlocked, te::OpClass::DepthwiseConvBlocked,
            te::OpClass::Pool};
  }
  bool applies(const te::Stage& st, const RuleContext& ctx) const override {
    return contraction_stage(st) && choose(st, ctx.target, epilogue(st, ctx), padded_input(st, ctx), {}).has_value();
  }
  std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const override {
    const te::Stage* epi = epilogue(st, ctx);
    const te::Stage* pad = padded_input(st, ctx);
    const Contraction c = *choose(st, ctx.target, epi, pad, {});
    const Tile& t = c.tile;
    const Dims& shape = st.shapes[0];
    const size_t rank = shape.size();
    const int64_t lanes = lanes_of(ctx.target, st.dtypes[0]);
    const bool blocked_conv = blocked_tile(st, lanes);
    const bool conv = te::is_conv(st.op_class) && rank >= 3;
    std::vector<Knob> k;
    if (blocked_conv && st.op_class == te::OpClass::ConvBlocked) {
      Knob kb{"kb", {}, t.kb};
      for (int64_t b : kTileBlocks)
        if (shape[1] % b == 0) kb.values.push_back(b);
      k.push_back(kb);
    }
    if (!blocked_conv && conv) {
      Knob ch{"channel_cols", {}, t.col == 1};
      if (shape[rank - 1] >= lanes / 2) ch.values.push_back(0);
      if (shared_input(st)) ch.values.push_back(1);
      k.push_back(ch);
    }
    if (!conv) {
      Knob row{"row", {}, static_cast<int64_t>(t.row)};
      for (size_t d : row_axes(st, t.col)) row.values.push_back(static_cast<int64_t>(d));
      k.push_back(row);
    }
    if (!blocked_conv) {
      Knob nr{"nr", {}, t.nr / lanes};
      for (int64_t v = 1; v <= 4; ++v)
        if ((v - 1) * lanes < shape[t.col]) nr.values.push_back(v);
      k.push_back(nr);
    }
    if (spatial_tile(st, lanes)) {
      const size_t h = rank - 3;
      for (auto [name, extent, dflt] : {std::tuple{"th", shape[h], t.th}, std::tuple{"td", rank == 6 ? shape[h - 1] : 1, t.td}}) {
        Knob rows{name, {}, dflt};
        for (int64_t r : kTileSpatialRows)
          if (r <= extent) rows.values.push_back(r);
        if (rows.values.size() > 1) k.push_back(rows);
      }
    }
    Knob mr{"mr", {}, t.mr};
    const int64_t max_mr = std::min<int64_t>(std::max<int64_t>(shape[t.row], 1), ctx.target.register_budget());
    for (int64_t v = 1; v <= max_mr; ++v) mr.values.push_back(v);
    k.push_back(mr);
    if (!packings(st, ctx.target, t).empty()) k.push_back(switch_knob("pack", true));
    if (panel_prefetchable(st, ctx.target, t, true, c.blocked)) k.push_back(switch_knob("prefetch", c.prefetch));
    if (halves_possible(st)) k.push_back(switch_knob("halves", c.halves));
    // Chunks: divisors of the row tiles (of a half with halves) short of
    // all of them; with chunked padding, of an image's row tiles, all of them too.
    const int64_t image_tiles = pad ? row_tiles(st, ctx.target, t, false) : 0;
    if (image_tiles > 0) k.push_back(switch_knob("pad_chunks", c.pad_chunks));
    if (const int64_t tiles = row_tiles(st, ctx.target, t, c.halves); tiles > 1 || image_tiles > 0) {
      Knob chunk{"row_chunk", {0}, c.row_chunk};
      for (int64_t v = 1; v <= std::max(tiles, image_tiles); ++v)
        if ((v < tiles && tiles % v == 0) || (image_tiles > 0 && image_tiles % v == 0)) chunk.values.push_back(v);
      k.push_back(chunk);
    }
    k.push_back(switch_knob("unroll", true));
    if (can_sum_blocks(st)) k.push_back(switch_knob("sum_blocks", true));
    if (can_block(st, t, epi)) {
      const GemmTile g{t.row, t.col, t.mr, t.nr};
      const GemmBlocks d = gemm_default_blocks(st, g, ctx.target.planned);
      k.push_back(switch_knob("blocked", c.blocked));
      k.push_back({"kc", gemm_kc_values(st, d.kc), d.kc});
      k.push_back({"mb", gemm_mb_values(st, g, d.mb), d.mb});
      k.push_back({"nb", gemm_nb_values(st, g, d.nb), d.nb});
      if (!left_operand(st, ctx.target, t).empty()) k.push_back(switch_knob("pack_a", gemm_packs_a(st, g, d)));
    }
    return k;
  }
  bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues& values) const override {
    const te::Stage* epi = epilogue(st, ctx);
    const te::Stage* pad = padded_input(st, ctx);
    std::optional<Contraction> c = choose(st, ctx.target, epi, pad, values);
    if (!c) return false;
    schedule_tiles(s, st, ctx.target, epi, pad, *c);
    return true;
  }
  const te::Stage* epilogue(const te::Stage& st, const RuleContext& ctx) const override {
    return blocked_by_default(st, ctx.target) ? nullptr : epilogue_of(ctx.outputs, ctx.stages, st);
  }
  bool tiles_epilogue() const override { return true; }
  Materialize materialize_inputs(const te::Stage&) const override { return Materialize::After; }
};

}  // namespace

// The largest window whose reduction a pool's finishing stage may repeat
// inside the tile (every output computes it: a whole plane, a global pool's
// window, would be read twice).
constexpr int64_t kMaxFinishWindow = 64;

// The elementwise output that can finish a contraction tile by tile: the
// stages reading `st`, and those reading them in turn, are of its shape,
// without reductions (but a pool's finish over a window of at most
// kMaxFinishWindow taps), read each other only at their own output position
// (bias, activation, residual add, x * sigmoid(x)), and all end in one
// output stage, into which the others are inlined. Null when there is none.
const te::Stage* epilogue_of(const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                             const te::Stage& st) {
  if (is_output(outputs, &st)) return nullptr;
  std::set<const te::Stage*> chain{&st};  // st and every stage that reads it, directly or not
  const te::Stage* sink = nullptr;
  for (const te::StagePtr& s : stages) {  // producers come before consumers
    bool reads = false;  // a stage reading only the sink is not part of the chain (below)
    for (const te::Tensor& in : s->inputs()) reads |= chain.count(&in.stage()) > 0 && &in.stage() != sink;
    if (!reads) continue;
    // A pool's finishing stage may hold a window reduction of its own over a
    // small window (MaxPool's NaN check, recomputed from the window in cache).
    const bool pool_finish = st.op_class == te::OpClass::Pool && s->op_class == te::OpClass::Pool &&
                             reduce_extent(st) <= kMaxFinishWindow;
    if (s->kind != te::StageKind::Compute || (te::has_reduce(s->body) && !pool_finish) || s->shapes[0] != st.shapes[0] ||
        s->axes.size() != st.shapes[0].size())
      return nullptr;
    for (const te::Tensor& in : s->inputs())
      if (chain.count(&in.stage()) && !te::reads_at_own_position(*s, in.stage())) return nullptr;
    if (is_output(outputs, s.get())) {
      if (sink) return nullptr;  // two outputs
      sink = s.get();
    }
    chain.insert(s.get());
  }
  if (!sink) return nullptr;
  // Every stage of the chain but the sink must be read only inside the chain
  // and not be an output (it is inlined into the sink). The sink, stored
  // whole, may be read by later stages too (the output of a Winograd
  // transform's block that its next input transform also reads).
  for (const te::StagePtr& s : stages) {
    if (chain.count(s.get())) continue;
    for (const te::Tensor& in : s->inputs())
      if (chain.count(&in.stage()) && &in.stage() != sink) return nullptr;
  }
  return sink;
}

std::unique_ptr<ScheduleRule> make_contraction_rule() { return std::make_unique<ContractionRule>(); }

}  // namespace tessera::schedule
