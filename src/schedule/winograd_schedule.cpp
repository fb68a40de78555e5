// Schedules of the Winograd transforms (see winograd_schedule.h).
#include "schedule/winograd_schedule.h"

#include "ops/winograd.h"

namespace tessera::schedule {

bool schedule_winograd_transform(Schedule& s, const te::Stage& st, const te::Stage& tiled, int64_t lanes,
                                 int64_t parallel_grain) {
  const bool input = st.op_class == te::OpClass::WinogradInput;
  if ((!input && st.op_class != te::OpClass::WinogradOutput) || tiled.axes.size() != (input ? 4u : 5u) ||
      tiled.shapes[0].back() != lanes)
    return false;
  auto axis = [&](size_t d) { return tiled.axes[d].name(); };
  // Operations per output element: the nonzero terms of a point's sum.
  const int64_t work = numel_of(tiled.shapes[0]) * (input ? 16 : 20);
  std::string tiles;
  if (input) {
    // [p, cb, t, l]: a tile's 36 points innermost but for the lanes.
    s.reorder(tiled.name, {axis(1), axis(2), axis(0), axis(3)});
    s.fuse(tiled.name, axis(1), axis(2));
    tiles = fused_name(axis(1), axis(2));
    s.unroll(tiled.name, axis(0));
  } else {
    // [n, kb, oh, ow, kc]: 4x4 output tiles, the tile's rows and columns unrolled.
    s.split(tiled.name, axis(2), kWinoTile);
    s.split(tiled.name, axis(3), kWinoTile);
    const std::string h = axis(2), w = axis(3);
    s.reorder(tiled.name, {axis(0), axis(1), outer_name(h), outer_name(w), inner_name(h), inner_name(w), axis(4)});
    tiles = axis(0);
    for (const std::string& next : {axis(1), outer_name(h), outer_name(w)}) {
      s.fuse(tiled.name, tiles, next);
      tiles = fused_name(tiles, next);
    }
    s.unroll(tiled.name, inner_name(h));
    s.unroll(tiled.name, inner_name(w));
  }
  s.vectorize(tiled.name, tiled.axes.back().name());
  if (work >= parallel_grain) s.parallel(tiled.name, tiles);
  return true;
}

}  // namespace tessera::schedule
