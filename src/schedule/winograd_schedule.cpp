// Schedules of the Winograd transforms (see winograd_schedule.h).
#include "schedule/winograd_schedule.h"

#include "schedule/stage_queries.h"
#include "schedule/tile_epilogue.h"
#include "support/winograd_transform.h"

namespace tessera::schedule {

namespace {

// The output tile side of an output transform: from the points of the
// product it reads ([P, Mb, T, b]); 0 when none is found.
int output_tile(const te::Stage& st) {
  for (const te::Tensor& in : st.inputs())
    if (in.rank() == 4)
      if (int m = winograd_tile_of_points(in.shape()[0])) return m;
  return 0;
}

bool is_transform(const te::Stage& st, const te::Stage& tiled, int64_t lanes) {
  const bool input = st.op_class == te::OpClass::WinogradInput;
  return (input || (st.op_class == te::OpClass::WinogradOutput && output_tile(st) != 0)) &&
         tiled.axes.size() == (input ? 4u : 5u) && tiled.shapes[0].back() == lanes;
}

class WinogradRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "winograd"; }
  std::vector<te::OpClass> op_classes() const override {
    return {te::OpClass::WinogradInput, te::OpClass::WinogradOutput};
  }
  bool takes_inlined() const override { return true; }
  // A transform that is neither an output nor finished by an epilogue (in a
  // fused block, an output transform whose ReLU only the next layer's input
  // transform reads) is computed at root: inlined into the next transform's
  // padded copy, its point formulas would not fold.
  bool applies(const te::Stage& st, const RuleContext& ctx) const override {
    const te::Stage* sink = epilogue(st, ctx);
    return is_transform(st, sink ? *sink : st, lanes_of(ctx.target, DType::F32));
  }
  std::vector<Knob> knobs(const te::Stage&, const RuleContext&) const override { return {}; }
  bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues&) const override {
    const te::Stage* sink = epilogue(st, ctx);
    if (!sink && !is_output(ctx.outputs, &st)) s.compute_root(st.name);
    return schedule_winograd_transform(s, st, sink ? *sink : st, lanes_of(ctx.target, DType::F32),
                                       ctx.target.parallel_grain);
  }
  const te::Stage* epilogue(const te::Stage& st, const RuleContext& ctx) const override {
    return epilogue_of(ctx.outputs, ctx.stages, st);
  }
  Materialize materialize_inputs(const te::Stage&) const override { return Materialize::After; }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_winograd_rule() { return std::make_unique<WinogradRule>(); }

bool schedule_winograd_transform(Schedule& s, const te::Stage& st, const te::Stage& tiled, int64_t lanes,
                                 int64_t parallel_grain) {
  if (!is_transform(st, tiled, lanes)) return false;
  const bool input = st.op_class == te::OpClass::WinogradInput;
  auto axis = [&](size_t d) { return tiled.axes[d].name(); };
  // Operations per output element: the nonzero terms of a point's sum.
  const int64_t work = numel_of(tiled.shapes[0]) * (input ? 16 : 20);
  std::string tiles;
  if (input) {
    // [p, cb, t, l]: a tile's points innermost but for the lanes.
    s.reorder(tiled.name, {axis(1), axis(2), axis(0), axis(3)});
    s.fuse(tiled.name, axis(1), axis(2));
    tiles = fused_name(axis(1), axis(2));
    s.unroll(tiled.name, axis(0));
  } else {
    // [n, kb, oh, ow, kc]: m x m output tiles, the tile's rows and columns unrolled.
    const int m = output_tile(st);
    s.split(tiled.name, axis(2), m);
    s.split(tiled.name, axis(3), m);
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
