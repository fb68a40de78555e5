// Register-tiled contractions and pools (see contraction_schedule.h).
#include "schedule/contraction_schedule.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "schedule/chunked_padding.h"
#include "schedule/contraction_tile.h"
#include "schedule/conv_row_split.h"
#include "schedule/gemm_schedule.h"
#include "schedule/stage_queries.h"
#include "schedule/sum_blocks.h"
#include "schedule/tile_epilogue.h"
#include "support/int_div.h"

namespace tessera::schedule {

namespace {

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
    outer_extent.push_back(d == tile->row   ? ceil_div(shape[d], tile->mr)
                           : d == tile->col ? ceil_div(shape[d], tile->nr)
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

std::unique_ptr<ScheduleRule> make_contraction_rule() { return std::make_unique<ContractionRule>(); }

}  // namespace tessera::schedule
