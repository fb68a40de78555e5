// Register-tiled contractions and pools (see contraction_schedule.h).
#include "schedule/contraction_schedule.h"

#include <algorithm>
#include <optional>
#include <set>

#include "schedule/gemm_schedule.h"
#include "schedule/stage_queries.h"

namespace tessera::schedule {

namespace {

// The register tile of a contraction: `mr` rows of axis `row` (unrolled) by
// `nr` columns of axis `col` (vectorized), accumulated in registers; with
// `kb` > 1 also `kb` consecutive indices of axis `blk` (unrolled: a blocked
// convolution's output channel blocks, each row's input value then feeding
// kb FMAs).
struct Tile {
  size_t row = 0, col = 0;
  int64_t mr = 1, nr = 1;
  size_t blk = 0;
  int64_t kb = 1;
};

// Rows of a tile with `vectors` accumulators per row that fit the register
// file (32 vector registers with AVX-512, 16 with AVX2; a few stay free for
// operands), chosen to waste the fewest rows on `extent`.
int64_t tile_rows(int64_t extent, int64_t vectors, const TargetInfo& target) {
  int64_t budget = (target.vector_bytes >= 64 ? 28 : 12) / std::max<int64_t>(vectors, 1);
  int64_t best = std::max<int64_t>(std::min(budget, extent), 1);
  int64_t best_waste = (extent + best - 1) / best * best - extent;
  for (int64_t m = budget; m >= std::max<int64_t>(budget / 2, 1); --m) {
    int64_t waste = (extent + m - 1) / m * m - extent;
    if (waste < best_waste) best = m, best_waste = waste;
  }
  return best;
}

// True for a blocked convolution [n, kb, h, w, kc] (the layout its class
// declares) with an even number of
// rows (8 or more) whose activations (inputs and output) outweigh its
// weights: splitting its rows in halves keeps each thread on its own pixels;
// where the weights weigh more, a split by output blocks has each thread
// read only half of them.
bool spatial_halves(const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  if (!te::is_blocked_conv(st.op_class) || shape.size() != 5 || shape[2] % 2 != 0 || shape[2] < 8)
    return false;
  int64_t weights = 0, acts = numel_of(shape);
  for (const te::Tensor& in : st.inputs())
    (target.constant_inputs.count(in.name()) ? weights : acts) += numel_of(in.shape());
  return acts >= weights;
}

// Convolutions (NCHW output) vectorize output channels when some input (the
// image) is read alike by every output channel and there are whole vectors
// of channels, or many of them: a tile is a run of output pixels along the
// width (rows) by nr channels (columns); input pixels are broadcast and the
// packed weights read as vectors, so strides and narrow images cost nothing.
// Otherwise (depthwise convolutions), and for matrix products and pools, the
// columns are the innermost output axis and the rows the channel axis
// (convolution) or the one before it.
std::optional<Tile> choose_tile(const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  size_t rank = shape.size();
  int64_t lanes = lanes_of(target, st.dtypes[0]);
  bool conv = te::is_conv(st.op_class) && rank >= 3;
  // Blocked convolutions ([N, Kb, H, W, b]): the block's lanes are the
  // columns, a run of output pixels along the width the rows; each tap
  // broadcasts one input value per row against one vector of packed weights.
  // Two output blocks a tile when there are pairs of them (not depthwise:
  // its blocks read different inputs): half the input reads per FMA, and
  // enough accumulators on narrow images (7 pixels x 2 blocks).
  if (te::is_blocked_conv(st.op_class) && rank >= 3 && shape[rank - 1] % lanes == 0 &&
      shape[rank - 1] <= 2 * lanes) {
    Tile t{rank - 2, rank - 1, 1, shape[rank - 1]};
    bool pairs = shape[1] % 2 == 0 && st.op_class != te::OpClass::DepthwiseConvBlocked;
    if (pairs) t.blk = 1, t.kb = 2;
    t.mr = tile_rows(shape[rank - 2], t.kb * t.nr / lanes, target);
    return t;
  }
  // Channel vectors need an input (the image) that every output channel
  // reads alike; a depthwise convolution reads one channel per output channel.
  bool shared_input = false;
  if (conv)
    for (const te::Tensor& in : st.inputs()) shared_input |= !reads_use(st, in.stage(), st.axes[1]);
  // Many channels that are not whole vectors still vectorize, the last tile masked.
  const int64_t k = shape[1];
  if (conv && shared_input && (k % lanes == 0 || k >= 4 * lanes)) {
    Tile t{rank - 1, 1, 1, k % (2 * lanes) == 0 || k % lanes != 0 ? 2 * lanes : lanes};
    t.mr = tile_rows(shape[rank - 1], t.nr / lanes, target);
    return t;
  }
  Tile t{conv ? 1 : rank - 2, rank - 1, 1, 1};
  // Matrix products take as rows the longest axis before the columns that
  // the column operand (B) does not depend on: batch axes over a shared B
  // ([128, 1, K] x [K, N]) are rows of one GEMM, not GEMVs re-reading B.
  if (!conv)
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (shape[d] <= shape[t.row]) continue;
      bool shared = true;
      for (const te::Tensor& in : st.inputs())
        if (reads_use(st, in.stage(), st.axes[t.col])) shared = shared && !reads_use(st, in.stage(), st.axes[d]);
      if (shared) t.row = d;
    }
  int64_t ej = shape[t.col];
  if (ej < lanes / 2) return std::nullopt;
  t.nr = ej >= 2 * lanes ? 2 * lanes : lanes;
  t.mr = tile_rows(shape[t.row], t.nr / lanes, target);
  // Matrix products with two vectors of columns: the rows that ran fastest
  // (8 with AVX-512: 16 accumulators, fewer streams of A than 14; 6 with AVX2:
  // 12 accumulators, where 4 leave the FMA latency exposed), unless their
  // last tile wastes more than 1/32 of the rows.
  const int64_t rows = shape[t.row], preferred = target.vector_bytes >= 64 ? 8 : 6;
  if (!conv && t.nr == 2 * lanes && rows >= preferred &&
      ((rows + preferred - 1) / preferred * preferred - rows) * 32 <= rows)
    t.mr = preferred;
  return t;
}

}  // namespace

// The elementwise output that can finish a contraction tile by tile: the
// stages reading `st`, and those reading them in turn, are of its shape,
// without reductions, read each other only at their own output position
// (bias, activation, residual add, x * sigmoid(x)), and all end in one
// output stage, into which the others are inlined. Null when there is none.
const te::Stage* epilogue_of(const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                             const te::Stage& st) {
  if (is_output(outputs, &st)) return nullptr;
  std::set<const te::Stage*> chain{&st};  // st and every stage that reads it, directly or not
  const te::Stage* sink = nullptr;
  for (const te::StagePtr& s : stages) {  // producers come before consumers
    bool reads = false;
    for (const te::Tensor& in : s->inputs()) reads |= chain.count(&in.stage()) > 0;
    if (!reads) continue;
    if (s->kind != te::StageKind::Compute || te::has_reduce(s->body) || s->shapes[0] != st.shapes[0] ||
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
  // and not be an output (it is inlined into the sink).
  for (const te::StagePtr& s : stages) {
    if (chain.count(s.get())) continue;
    for (const te::Tensor& in : s->inputs())
      if (chain.count(&in.stage())) return nullptr;
  }
  return sink;
}

// Register tiling for contractions (GEMM, convolution): the output is
// computed in mr x nr tiles accumulated in a local buffer (compute_at), the
// columns vectorized and the rows unrolled, the reduction loops outside the
// tile; the tiles run in parallel. The accumulator is a cache_write copy of
// the stage, or, with an epilogue (a fused consumer, see epilogue_of), the
// stage itself, finished by the epilogue tile by tile.
bool schedule_contraction(Schedule& s, const te::Stage& st, const TargetInfo& target, const te::Stage* epilogue) {
  const Dims& shape = st.shapes[0];
  bool pool = st.op_class == te::OpClass::Pool;  // window reductions (max, average): tiled like a contraction without weights
  // F32; average pools accumulate in F64 (as the reference does).
  const DType dt = st.dtypes[0];
  if (shape.size() < 2 || !te::is_top_reduce(st) || !(dt == DType::F32 || (pool && dt == DType::F64))) return false;
  if (st.body.as<loop::ReduceNode>()->op != loop::ReduceOp::Sum && !pool) return false;
  if (!te::is_conv(st.op_class) && st.op_class != te::OpClass::MatMul && !pool) return false;
  std::optional<Tile> tile = choose_tile(st, target);
  if (!tile) return false;
  size_t rank = shape.size();
  const std::string& name = st.name;
  // Constant inputs (weights) that the tile's columns do not read
  // contiguously are packed once: the dimension the columns index is split
  // by nr and its inner part moved last ([K, C, R, S] -> [K/nr, C, R, S, nr],
  // B^T [N, K] -> [N/nr, K, nr]), so each tile row reads one vector.
  bool cols_packed = false;  // some input's column dim split into panels of nr
  for (const te::Tensor& in : st.inputs()) {
    if (in.stage().kind != te::StageKind::Placeholder || !target.constant_inputs.count(in.name())) continue;
    int d = dim_indexed_by(st, in.stage(), st.axes[tile->col]);
    if (d < 0 || tile->nr <= 1) continue;
    if (d == in.rank() - 1) {
      // Columns already contiguous, but each step of the reduction moves a
      // whole row of B on ([K, N]: one page per step for wide N): pack B into
      // panels [N/nr, K, nr] (the reduction dim made one block, then the
      // columns split) so a tile streams one contiguous panel.
      const auto& raxes = st.body.as<loop::ReduceNode>()->axes;
      int kd = raxes.size() == 1 ? dim_indexed_by(st, in.stage(), raxes[0].var) : -1;
      if (kd < 0 || kd == d || in.dim(d) <= tile->nr) continue;
      s.cache_read(in.name(), name);
      s.layout(in.name() + "." + name, kd, in.dim(kd));
      s.layout(in.name() + "." + name, d, tile->nr);
      cols_packed = true;
      continue;
    }
    s.cache_read(in.name(), name);
    s.layout(in.name() + "." + name, d, tile->nr);
    cols_packed = true;
  }
  // Large products: cache-blocked, the register tiles accumulating across
  // blocks of the reduction, A's rows packed per block.
  if (!epilogue && tile->kb == 1 && st.op_class == te::OpClass::MatMul) {
    GemmTile g{tile->row, tile->col, tile->mr, tile->nr};
    if (std::optional<GemmBlocks> b = gemm_blocks(st, g, target.l2_bytes, target.l3_bytes)) {
      std::string a;  // A: read in place, its rows by the row axis and its last dim by the reduction
      for (const te::Tensor& in : st.inputs())
        if (in.stage().kind == te::StageKind::Placeholder && !target.constant_inputs.count(in.name()) &&
            in.rank() == static_cast<int>(rank) && dim_indexed_by(st, in.stage(), st.axes[tile->row]) == in.rank() - 2 &&
            dim_indexed_by(st, in.stage(), st.body.as<loop::ReduceNode>()->axes[0].var) == in.rank() - 1)
          a = in.name();
      schedule_blocked_gemm(s, st, g, *b, target.parallel_grain, a);
      return true;
    }
  }
  const te::Stage& tiled = epilogue ? *epilogue : st;
  std::string local = epilogue ? name : name + ".local";
  if (!epilogue) s.cache_write(name);
  std::string I = tiled.axes[tile->row].name(), J = tiled.axes[tile->col].name();
  // Rows (or columns) the tile does not divide: the last tile shifted back
  // to end at the edge (recomputing a few) rather than every tile guarded,
  // its vectors masked. (Guarded columns masked the accumulator's loads and
  // stores too, which AVX2 runs slowly: ViT's attention scores [12x197x64]
  // x [12x64x197], 1.40 ms guarded vs shifted.) Columns read from
  // panels of nr stay guarded: a shifted tile would straddle two panels.
  if (shape[tile->col] % tile->nr != 0 && shape[tile->col] > tile->nr && !cols_packed)
    s.split_shift(tiled.name, J, tile->nr);
  else
    s.split(tiled.name, J, tile->nr);
  if (shape[tile->row] % tile->mr != 0 && shape[tile->row] > tile->mr) s.split_shift(tiled.name, I, tile->mr);
  else s.split(tiled.name, I, tile->mr);
  std::string B = tiled.axes[tile->blk].name();
  if (tile->kb > 1) s.split(tiled.name, B, tile->kb);
  // Tile loops: the output axes in order, split axes by their outer part;
  // then the tile's rows and columns.
  std::vector<std::string> outer;
  for (size_t d = 0; d < rank; ++d)
    outer.push_back(d == tile->row   ? outer_name(I)
                    : d == tile->col ? outer_name(J)
                    : tile->kb > 1 && d == tile->blk ? outer_name(B)
                                                     : tiled.axes[d].name());
  // A matrix product walks the rows inside each column panel: consecutive
  // tiles (one thread's chunk) reuse the same panel of B from cache instead
  // of streaming all of B once per row of tiles. (Convolutions already have
  // their channel tiles outside the pixel tiles; pools have no panel.)
  if (tile->row < tile->col && st.op_class == te::OpClass::MatMul)
    std::rotate(outer.begin() + static_cast<std::ptrdiff_t>(tile->row),
                outer.begin() + static_cast<std::ptrdiff_t>(tile->col),
                outer.begin() + static_cast<std::ptrdiff_t>(tile->col) + 1);
  // Blocked convolutions over maps larger than their weights: the rows in
  // two halves outermost, so with the thread pool's fixed runs each thread
  // computes the same half of the image in every layer and reads what it
  // wrote from its own cache. (With the output blocks outermost, every layer
  // read half its input from the other core: MobileNetV2 at 2 threads, when
  // this VM's cores are far apart — 450 ns round trips instead of 100 —
  // 4.30 vs 3.90 ms; ResNet-50 26.1 vs 23.3 ms; alike otherwise.)
  if (spatial_halves(st, target) && outer[2] == tiled.axes[2].name()) {
    const std::string hname = tiled.axes[2].name();
    s.split(tiled.name, hname, shape[2] / 2);
    outer[2] = inner_name(hname);
    outer.insert(outer.begin() + 1, outer_name(hname));
  }
  std::vector<std::string> full = outer;
  if (tile->kb > 1) full.push_back(inner_name(B));
  full.push_back(inner_name(I));
  full.push_back(inner_name(J));
  s.reorder(tiled.name, full);
  // With enough work the tile loops are fused and run in parallel; the
  // accumulator is computed inside the innermost of them.
  int64_t work = numel_of(shape) * std::max<int64_t>(reduce_extent(st), 1);
  bool parallel = work >= target.parallel_grain;
  std::string tile_loop = outer[0];
  for (size_t k = 1; k < outer.size(); ++k) {
    if (parallel) s.fuse(tiled.name, tile_loop, outer[k]);
    tile_loop = parallel ? fused_name(tile_loop, outer[k]) : outer[k];
  }
  if (parallel) s.parallel(tiled.name, tile_loop);
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
  lorder.push_back(AI);
  if (tile->kb > 1) lorder.push_back(st.axes[tile->blk].name());
  lorder.push_back(AJ);
  s.reorder(local, lorder);
  if (tile->kb > 1) s.unroll(local, st.axes[tile->blk].name());
  s.unroll(local, AI);
  s.vectorize(local, AJ);
  // The tile's write-back (with its epilogue) unrolled too: constant indices
  // into the accumulator keep it in registers.
  if (tile->kb > 1) s.unroll(tiled.name, inner_name(B));
  s.unroll(tiled.name, inner_name(I));
  s.vectorize(tiled.name, inner_name(J));
  return true;
}

}  // namespace tessera::schedule
