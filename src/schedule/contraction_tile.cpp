// The register tile of a contraction and its defaults (see contraction_tile.h).
#include "schedule/contraction_tile.h"

#include <algorithm>

#include "schedule/stage_queries.h"
#include "support/int_div.h"

namespace tessera::schedule {

namespace {

// Rows of a tile with `vectors` accumulators per row that fit the register
// budget (28 of 32 zmm registers with AVX-512, 12 of 16 ymm with AVX2: a few
// stay free for operands), chosen to waste the fewest rows on `extent`.
int64_t tile_rows(int64_t extent, int64_t vectors, const TargetInfo& target) {
  int64_t budget = target.register_budget() / std::max<int64_t>(vectors, 1);
  int64_t best = std::max<int64_t>(std::min(budget, extent), 1);
  int64_t best_waste = round_up(extent, best) - extent;
  for (int64_t m = budget; m >= std::max<int64_t>(budget / 2, 1); --m) {
    int64_t waste = round_up(extent, m) - extent;
    if (waste < best_waste) best = m, best_waste = waste;
  }
  return best;
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

}  // namespace

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

namespace {

// Bytes of weights for `blocks` output blocks of a blocked convolution.
double block_weights(const te::Stage& st, const TargetInfo& target, int64_t blocks) {
  const double weights = static_cast<double>(weight_bytes(st, target));
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

}  // namespace

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
  if (!conv && t.nr == 2 * lanes && rows >= preferred && (round_up(rows, preferred) - rows) * 32 <= rows)
    t.mr = preferred;
  t.mr = knob_or(v, "mr", t.mr);
  return valid(t);
}

}  // namespace tessera::schedule
