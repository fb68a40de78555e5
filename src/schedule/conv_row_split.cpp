// A blocked convolution's row loop in halves or chunks (see conv_row_split.h).
#include "schedule/conv_row_split.h"

#include "schedule/stage_queries.h"

namespace tessera::schedule {

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
bool spatial_halves(const te::Stage& st, const TargetInfo& target) {
  if (!halves_possible(st) || st.shapes[0][2] < 8) return false;
  const Footprint f = footprint(st, target);
  return f.activations >= f.weights;
}

namespace {

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

}  // namespace

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
  const double weights = static_cast<double>(weight_bytes(st, target));
  double image = 0;  // bytes of the activation inputs of one image
  for (const te::Tensor& in : st.inputs()) {
    if (target.constant_inputs.count(in.name()) || in.rank() != 5 || in.shape()[0] <= 0) continue;
    image += static_cast<double>(numel_of(in.shape())) * esize / static_cast<double>(in.shape()[0]);
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

}  // namespace tessera::schedule
