// Cache-blocked matrix products (see gemm_schedule.h).
#include "schedule/gemm_schedule.h"

#include <algorithm>
#include <vector>

#include "support/int_div.h"

namespace tessera::schedule {

namespace {

// Tasks a product is cut into at least, so that the threads (two to a few)
// get balanced shares when the rows alone give too few.
constexpr int64_t kMinTasks = 8;

// Blocks of rows come in multiples of this, so two or four threads get
// equal shares of them.
constexpr int64_t kBalance = 4;

// Reduction steps per block: the largest divisor of `k` up to `max_kc`
// when one is at least half of it, else `k` cut into equal blocks of at most
// max_kc (the last one guarded).
int64_t block_steps(int64_t k, int64_t max_kc) {
  if (k <= max_kc) return k;
  for (int64_t d = max_kc; d >= max_kc / 2; --d)
    if (k % d == 0) return d;
  const int64_t blocks = ceil_div(k, max_kc);
  return ceil_div(k, blocks);
}

// Reduction steps at most between two prefetches of a tile: with two
// vectors of columns (a panel row of two lines) one line every 8 steps of 16
// FMAs, far below what memory delivers, yet an 8 x 32 tile over 197 rows
// (25 tiles to a panel) still covers the next panel in its first 16 tiles.
constexpr int64_t kPrefetchSpread = 16;

}  // namespace

int64_t gemm_prefetch_spread(int64_t tiles) {
  int64_t s = 1;
  while (s * 2 <= std::min(tiles, kPrefetchSpread)) s *= 2;
  return s;
}

bool gemm_blockable(const te::Stage& st, const GemmTile& tile) {
  if (!te::is_top_reduce(st)) return false;
  const auto& raxes = st.body.as<loop::ReduceNode>()->axes;
  const int64_t* kp = raxes.size() == 1 ? loop::as_const_int(raxes[0].extent) : nullptr;
  const Dims& shape = st.shapes[0];
  const size_t rank = shape.size();
  if (!kp || rank < 2 || tile.row != rank - 2 || tile.col != rank - 1) return false;
  // Whole column tiles (a partial one would read B's columns clamped, not as
  // vectors); a partial last row tile is guarded, its rows past the end
  // computed on clamped rows of A and not written.
  return shape[tile.col] % tile.nr == 0;
}

namespace {

// The reduction's extent K of a blockable product.
int64_t reduction_steps(const te::Stage& st) {
  return *loop::as_const_int(st.body.as<loop::ReduceNode>()->axes[0].extent);
}

// `values` with `extra` added, sorted, without repeats.
std::vector<int64_t> with_value(std::vector<int64_t> values, int64_t extra) {
  values.push_back(extra);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Powers of two below `n`, then n.
std::vector<int64_t> powers_up_to(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t p = 1; p < n; p *= 2) v.push_back(p);
  v.push_back(n);
  return v;
}

}  // namespace

bool gemm_needs_blocking(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches) {
  const int64_t k = reduction_steps(st), m = st.shapes[0][tile.row];
  const int64_t esize = static_cast<int64_t>(dtype_size(st.dtypes[0]));
  // The plain schedule re-reads A once per column panel and a whole K x nr
  // panel of B once per row tile: fine while both stay in cache. A shares
  // the last level with B, C, the other cores and other tenants, so it may
  // fill half of it (measured: bench/MEASUREMENTS.md, "GEMM blocking"). And
  // unless A stays in L2 beside the panel, every panel streams all of A
  // from the last level again (a long reduction over few rows: a
  // transformer's second MLP product, K = 3072).
  const bool a_in_l2 = (m * k + k * tile.nr) * esize <= caches.l2;
  return !(2 * m * k * esize <= caches.l3 && k * tile.nr * esize <= caches.l2 / 2 && a_in_l2);
}

bool gemm_packs_a(const te::Stage& st, const GemmTile& tile, const GemmBlocks& b) {
  return b.nb >= st.shapes[0][tile.col] / tile.nr;
}

std::optional<GemmBlocks> gemm_blocks(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches) {
  if (!gemm_blockable(st, tile) || !gemm_needs_blocking(st, tile, caches)) return std::nullopt;
  return gemm_default_blocks(st, tile, caches);
}

GemmBlocks gemm_default_blocks(const te::Stage& st, const GemmTile& tile, const CacheSizes& caches) {
  const Dims& shape = st.shapes[0];
  const size_t rank = shape.size();
  const int64_t k = reduction_steps(st), m = shape[tile.row], n = shape[tile.col];
  const int64_t esize = static_cast<int64_t>(dtype_size(st.dtypes[0]));
  const int64_t l2_bytes = caches.l2;
  GemmBlocks b;
  // A tile's kc x nr slice of B in an eighth of L2, where the row tiles of
  // the task reuse it; the task's packed A block (mb * mr rows x kc) about
  // the size of L2 (bench/MEASUREMENTS.md, "GEMM blocking").
  b.kc = block_steps(k, std::max<int64_t>(l2_bytes / 8 / (tile.nr * esize), 16));
  const int64_t row_tiles = ceil_div(m, tile.mr), panels = n / tile.nr;
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= shape[d];
  // The rows in equal blocks of at most that. When A takes several blocks
  // anyway, their count is raised to kMinTasks tasks and to a multiple of
  // kBalance rather than the columns split: a column split packs each A
  // block once per column block, and a short last block leaves a thread
  // idle before the next block of the reduction (bench/MEASUREMENTS.md,
  // "GEMM blocking").
  const int64_t mb_max = std::clamp<int64_t>(l2_bytes / (b.kc * tile.mr * esize), 1, row_tiles);
  int64_t blocks = ceil_div(row_tiles, mb_max);
  if (blocks > 1) {
    blocks = std::max(blocks, ceil_div(kMinTasks, batch));
    blocks = std::min(round_up(blocks, kBalance), row_tiles);
  }
  b.mb = ceil_div(row_tiles, blocks);
  const int64_t tasks = ceil_div(row_tiles, b.mb) * batch;
  const int64_t col_blocks = std::min<int64_t>(ceil_div(kMinTasks, tasks), panels);
  b.nb = ceil_div(panels, col_blocks);
  return b;
}

std::vector<int64_t> gemm_kc_values(const te::Stage& st, int64_t default_kc) {
  const int64_t k = reduction_steps(st);
  std::vector<int64_t> v;
  for (int64_t kc = 16; kc < k; kc *= 2) v.push_back(kc);
  v.push_back(k);
  return with_value(v, default_kc);
}

std::vector<int64_t> gemm_mb_values(const te::Stage& st, const GemmTile& tile, int64_t default_mb) {
  return with_value(powers_up_to(ceil_div(st.shapes[0][tile.row], tile.mr)), default_mb);
}

std::vector<int64_t> gemm_nb_values(const te::Stage& st, const GemmTile& tile, int64_t default_nb) {
  return with_value(powers_up_to(st.shapes[0][tile.col] / tile.nr), default_nb);
}

bool gemm_blocks_valid(const te::Stage& st, const GemmTile& tile, const GemmBlocks& b) {
  const int64_t row_tiles = ceil_div(st.shapes[0][tile.row], tile.mr), panels = st.shapes[0][tile.col] / tile.nr;
  return b.kc >= 1 && b.kc <= reduction_steps(st) && b.mb >= 1 && b.mb <= row_tiles && b.nb >= 1 && b.nb <= panels;
}

void schedule_blocked_gemm(Schedule& s, const te::Stage& st, const GemmTile& tile, const GemmBlocks& blocks,
                           int64_t parallel_grain, const std::string& pack_a) {
  const std::string& n = st.name;
  const Dims& shape = st.shapes[0];
  const std::string I = st.axes[tile.row].name(), J = st.axes[tile.col].name();
  const std::string K = st.body.as<loop::ReduceNode>()->axes[0].var.name();
  s.split(n, J, tile.nr);
  s.split(n, I, tile.mr);
  s.split(n, K, blocks.kc);
  const int64_t row_tiles = ceil_div(shape[tile.row], tile.mr), panels = shape[tile.col] / tile.nr;
  // Task loops: the batch axes, then blocks of mb row tiles and of nb panels.
  std::vector<std::string> tasks;
  for (size_t d = 0; d + 2 < shape.size(); ++d) tasks.push_back(st.axes[d].name());
  std::string rows = outer_name(I), cols = outer_name(J);
  if (blocks.mb < row_tiles) {
    s.split(n, rows, blocks.mb);
    tasks.push_back(outer_name(rows));
    rows = inner_name(rows);
  }
  if (blocks.nb < panels) {
    s.split(n, cols, blocks.nb);
    tasks.push_back(outer_name(cols));
    cols = inner_name(cols);
  }
  std::vector<std::string> order{outer_name(K)};
  order.insert(order.end(), tasks.begin(), tasks.end());
  for (const std::string& l : {cols, rows, inner_name(K), inner_name(I), inner_name(J)}) order.push_back(l);
  s.reorder(n, order);
  // The block's tasks fused into one loop, parallel with enough work.
  std::string task = outer_name(K);
  if (!tasks.empty()) {
    task = tasks[0];
    for (size_t i = 1; i < tasks.size(); ++i) {
      s.fuse(n, task, tasks[i]);
      task = fused_name(task, tasks[i]);
    }
    if (numel_of(shape) * blocks.kc >= parallel_grain) s.parallel(n, task);
  }
  if (!pack_a.empty()) {
    // A's rows of the task for the block, as [rows/mr, kc, mr]: a tile's
    // mr values of one step are adjacent, its steps one stream.
    const std::string p = pack_a + "." + n;
    const size_t r = shape.size() - 2;
    const std::string ri = "i" + std::to_string(r), ki = "i" + std::to_string(r + 1);  // cache_read's axis names
    s.cache_read(pack_a, n);
    s.compute_at(p, n, task);
    s.layout(p, static_cast<int64_t>(r), tile.mr);
    s.split(p, ri, tile.mr);
    s.reorder(p, {outer_name(ri), ki, inner_name(ri)});
    s.unroll(p, inner_name(ri));
  }
  s.accumulate(n, inner_name(K));
  s.unroll(n, inner_name(I));
  s.vectorize(n, inner_name(J));
}

}  // namespace tessera::schedule
