// Schedules of stages that are not tiled (see generic_schedule.h).
#include "schedule/generic_schedule.h"

#include "schedule/stage_queries.h"

namespace tessera::schedule {

namespace {

// Vector lengths the generic rule offers, in native vectors.
constexpr int64_t kVectorMultiples[] = {1, 2, 4};
// The fewest iterations of a partition's outer loop (they are what runs in
// parallel): a concatenation along the batch of two images stays fused.
constexpr int64_t kMinPartitionRows = 8;
// Row counts of a two-dimensional tile (knob "tile"; 0: no tile).
constexpr int64_t kTileRows[] = {4, 8, 16, 32};

// What the generic rule decides for a stage, today's heuristic unless set.
struct Generic {
  bool rows = false;      // split the last axis into vectors (else the fused loop)
  int64_t vec = 1;        // vector length in native vectors
  bool parallel = false;  // the outer loop in parallel
  int64_t tile = 0;       // rows of a 2-D tile over the last two axes (0: none)
  bool partition = false; // outer loop up to the guard cut axis, the axes inside it one vector loop
};

// A stage the rule can split into rows: no top-level reduction, rank > 1.
bool can_split_rows(const te::Stage& st) { return !te::is_top_reduce(st) && st.shapes[0].size() > 1; }
// A stage with loops.
bool has_loops(const te::Stage& st) { return !st.shapes[0].empty() && numel_of(st.shapes[0]) > 0; }
// A stage whose last two axes can be tiled: rows it can split, the second
// last axis longer than the smallest tile.
bool can_tile(const te::Stage& st) {
  const Dims& shape = st.shapes[0];
  return can_split_rows(st) && shape[shape.size() - 2] > kTileRows[0];
}

// The axis a partition schedule splits the loops after: the innermost axis
// the stage's guard cuts test (a concatenation's axis), when axes inside it
// hold at least a vector (each run of them is then a plain copy loop once
// the cuts are decided around it, unswitch_guards.h); -1 otherwise.
int partition_axis(const te::Stage& st, const TargetInfo& target) {
  if (te::is_top_reduce(st) || !has_loops(st)) return -1;
  const int a = guard_cut_axis(st);
  const Dims& shape = st.shapes[0];
  if (a < 0 || a + 1 >= static_cast<int>(shape.size())) return -1;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < shape.size(); ++d) (static_cast<int>(d) <= a ? outer : inner) *= shape[d];
  return outer >= kMinPartitionRows && inner >= lanes_of(target, st.dtypes[0]) ? a : -1;
}

// Generic rule: the spatial loops fused into one, a vector-wide inner loop
// split off (vectorized when the stage has no top-level reduction) and the
// outer part run in parallel when the stage is big enough. When the last
// dimension is not a whole number of vectors, vectors would straddle rows
// (gathers, index division per lane): then only the outer dimensions are
// fused and each row is split into vectors, its tail masked. Rows of whole
// vectors are split the same way (no tail): indices and guards then use the
// outer indices instead of divisions of one fused index per lane (padding a
// blocked [N, C, H, W, 16] image: one test per vector). A stage whose guard
// cuts test an axis with a vector's worth inside it (a concatenation) is
// partitioned at that axis instead (schedule_partitioned).
Generic generic_choice(const te::Stage& st, const TargetInfo& target, const KnobValues& values) {
  const Dims& shape = st.shapes[0];
  const int64_t lanes = lanes_of(target, st.dtypes[0]);
  Generic g;
  g.rows = can_split_rows(st) && (shape.back() % lanes != 0 ? shape.back() >= 4 && !reads_in_place(st) : true);
  g.parallel = numel_of(shape) * reduce_extent(st) >= target.parallel_grain;
  g.rows = knob_or(values, "rows", g.rows);
  g.vec = knob_or(values, "vec", g.vec);
  g.parallel = knob_or(values, "parallel", g.parallel);
  g.tile = knob_or(values, "tile", 0);
  g.partition = knob_or(values, "partition", partition_axis(st, target) >= 0);
  return g;
}

}  // namespace

std::vector<Knob> generic_knobs(const te::Stage& st, const TargetInfo& target) {
  if (!has_loops(st)) return {};
  Generic g = generic_choice(st, target, {});
  std::vector<Knob> k;
  if (can_split_rows(st)) k.push_back(switch_knob("rows", g.rows));
  if (partition_axis(st, target) >= 0) k.push_back(switch_knob("partition", true));
  if (!te::is_top_reduce(st)) k.push_back({"vec", {std::begin(kVectorMultiples), std::end(kVectorMultiples)}, 1});
  k.push_back(switch_knob("parallel", g.parallel));
  if (can_tile(st)) {
    Knob tile{"tile", {0}, 0};
    for (int64_t t : kTileRows)
      if (t < st.shapes[0][st.shapes[0].size() - 2]) tile.values.push_back(t);
    k.push_back(std::move(tile));
  }
  return k;
}

bool generic_valid(const te::Stage& st, const TargetInfo& target, const KnobValues& values) {
  if (knob_or(values, "tile", 0) && !can_tile(st)) return false;
  if (knob_or(values, "partition", 0) && partition_axis(st, target) < 0) return false;
  return !(knob_or(values, "rows", 0) && !can_split_rows(st));
}

namespace {

// The 2-D tile: the leading axes and the second last axis's tiles fused
// (in parallel), then the tiles of vectors of the last axis, inside them
// the tile's rows, each one vector of the last axis. A transposing read (the
// input's contiguous axis is the output's second last) then uses each cache
// line it brings for a whole tile's rows instead of one.
std::string schedule_tiled(Schedule& s, const te::Stage& st, int64_t vector, const Generic& g) {
  const size_t rank = st.axes.size();
  const std::string rows = st.axes[rank - 2].name(), last = st.axes[rank - 1].name();
  s.split(st.name, rows, g.tile);
  s.split(st.name, last, vector);
  std::vector<std::string> order;
  for (size_t i = 0; i + 2 < rank; ++i) order.push_back(st.axes[i].name());
  for (const std::string& l : {outer_name(rows), outer_name(last), inner_name(rows), inner_name(last)})
    order.push_back(l);
  s.reorder(st.name, order);
  std::string loop = outer_name(rows);
  if (rank > 2) {
    const std::string lead = fuse_leading(s, st, rank - 2);
    s.fuse(st.name, lead, loop);
    loop = fused_name(lead, loop);
  }
  s.vectorize(st.name, inner_name(last));
  if (g.parallel) s.parallel(st.name, loop);
  return loop;
}

// The partition: the axes up to `axis` fused into the outer loop (in
// parallel), the axes inside it one loop split into vectors — or, when the
// last axis is whole vectors (a blocked image's lanes), the others fused
// and the last split: the index of a vector split across a fused lane axis
// does not simplify back to a contiguous run. The guard cuts on `axis` do
// not vary inside the outer loop's body, so they are decided once per
// iteration around plain vector loops (unswitch_guards.h): a concatenation
// copies each input's run of contiguous elements without a select.
std::string schedule_partitioned(Schedule& s, const te::Stage& st, int axis, int64_t vector, const Generic& g) {
  const size_t rank = st.axes.size(), first = static_cast<size_t>(axis) + 1;
  const bool whole = st.shapes[0].back() % vector == 0;
  const std::string outer = fuse_leading(s, st, first);
  std::string inner = st.axes[whole ? rank - 1 : first].name();
  for (size_t d = first + 1; !whole && d < rank; ++d) {
    s.fuse(st.name, inner, st.axes[d].name());
    inner = fused_name(inner, st.axes[d].name());
  }
  if (whole && first + 2 < rank) {  // the middle axes as one loop
    std::string middle = st.axes[first].name();
    for (size_t d = first + 1; d + 1 < rank; ++d) {
      s.fuse(st.name, middle, st.axes[d].name());
      middle = fused_name(middle, st.axes[d].name());
    }
  }
  s.split(st.name, inner, vector);
  s.vectorize(st.name, inner_name(inner));
  if (g.parallel) s.parallel(st.name, outer);
  return outer;
}

}  // namespace

std::string schedule_generic(Schedule& s, const te::Stage& st, const TargetInfo& target, const KnobValues& values) {
  if (!has_loops(st)) return "";
  const Dims& shape = st.shapes[0];
  const int64_t numel = numel_of(shape), lanes = lanes_of(target, st.dtypes[0]);
  const Generic g = generic_choice(st, target, values);
  const int64_t vector = lanes * g.vec;
  if (g.tile) return schedule_tiled(s, st, vector, g);
  if (g.partition) return schedule_partitioned(s, st, partition_axis(st, target), vector, g);
  std::string loop = fuse_leading(s, st, g.rows ? st.axes.size() - 1 : st.axes.size());
  if (g.rows) {
    std::string last = st.axes.back().name();
    s.split(st.name, last, vector);
    s.vectorize(st.name, inner_name(last));
    if (g.parallel) s.parallel(st.name, loop);
    return loop;
  }
  if (!te::is_top_reduce(st) && numel >= lanes && (reads_in_place(st) || shape.back() >= lanes)) {
    s.split(st.name, loop, vector);
    s.vectorize(st.name, inner_name(loop));
    if (g.parallel) s.parallel(st.name, outer_name(loop));
    return outer_name(loop);
  }
  if (g.parallel) s.parallel(st.name, loop);
  return loop;
}

std::string fuse_leading(Schedule& s, const te::Stage& st, size_t count) {
  std::string loop = st.axes[0].name();
  for (size_t i = 1; i < count; ++i) {
    s.fuse(st.name, loop, st.axes[i].name());
    loop = fused_name(loop, st.axes[i].name());
  }
  return loop;
}

void place_partials(Schedule& s, const te::Stage& st, const std::string& loop) {
  const auto& axes = st.body.as<loop::ReduceNode>()->axes;
  const std::string rf = st.name + ".rf", r = axes.back().var.name();
  if (!loop.empty()) s.compute_at(rf, st.name, loop);
  std::vector<std::string> order;
  for (size_t a = 0; a + 1 < axes.size(); ++a) order.push_back(axes[a].var.name());
  order.push_back(r + ".o");
  order.push_back(r + ".lane");
  s.reorder(rf, order);
  s.vectorize(rf, r + ".lane");
}

namespace {

class GenericRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "generic"; }
  bool applies(const te::Stage& st, const RuleContext&) const override { return st.kind == te::StageKind::Compute; }
  std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const override {
    return generic_knobs(st, ctx.target);
  }
  bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues& values) const override {
    if (!generic_valid(st, ctx.target, values)) return false;
    schedule_generic(s, st, ctx.target, values);
    return true;
  }
  // Window reductions not tiled (narrow depthwise convolutions, pools) read
  // each input element many times: what they read is materialized too.
  Materialize materialize_inputs(const te::Stage& st) const override {
    return te::is_top_reduce(st) && st.op_class != te::OpClass::Reduce ? Materialize::Before : Materialize::None;
  }
};

// Row reductions — the last reduction axis runs along the innermost
// dimension of an input (softmax, layer norm, ReduceMean over the last axis)
// — are split into vector-wide partial results (rfactor, knob "rfactor": the
// partials in vectors, 0 for none): the partials are computed for each
// output element inside its loop, the reduction outside the vectorized
// lanes, then combined. The stage's other loops are the generic rule's.
class RowReductionRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "row_reduction"; }
  bool applies(const te::Stage& st, const RuleContext& ctx) const override {
    if (!te::is_top_reduce(st) || st.num_outputs() != 1) return false;
    const loop::ReduceAxis& r = st.body.as<loop::ReduceNode>()->axes.back();
    const int64_t* n = loop::as_const_int(r.extent);
    int64_t lanes = lanes_of(ctx.target, st.dtypes[0]);
    if (!n || *n < lanes || lanes < 2 || st.dtypes[0] == DType::Bool) return false;
    bool contiguous = false;
    for (const te::Tensor& in : st.inputs()) contiguous |= dim_indexed_by(st, in.stage(), r.var) == in.rank() - 1;
    return contiguous;
  }
  std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const override {
    const int64_t n = *loop::as_const_int(st.body.as<loop::ReduceNode>()->axes.back().extent);
    Knob rf{"rfactor", {0}, 1};
    for (int64_t v : kVectorMultiples)
      if (v * lanes_of(ctx.target, st.dtypes[0]) <= n) rf.values.push_back(v);
    std::vector<Knob> k{rf};
    for (Knob& g : generic_knobs(st, ctx.target)) k.push_back(std::move(g));
    return k;
  }
  bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues& values) const override {
    if (!generic_valid(st, ctx.target, values)) return false;
    const int64_t vectors = knob_or(values, "rfactor", 1);
    if (vectors == 0) {
      schedule_generic(s, st, ctx.target, values);
      return true;
    }
    const loop::ReduceAxis& r = st.body.as<loop::ReduceNode>()->axes.back();
    s.rfactor(st.name, r.var.name(), vectors * lanes_of(ctx.target, st.dtypes[0]));
    place_partials(s, st, schedule_generic(s, st, ctx.target, values));
    return true;
  }
};

// Reductions over outer axes whose output's last axis runs along every
// input's contiguous last dimension (average pools over a blocked image's
// plane, sums down columns): that axis is split into vectors kept as the
// innermost loop, with the reduction loops around them — each vector lane
// accumulates its own output, reading whole vectors of the input.
class LaneReductionRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "lane_reduction"; }
  bool applies(const te::Stage& st, const RuleContext& ctx) const override {
    if (!te::is_top_reduce(st) || st.num_outputs() != 1 || st.dtypes[0] == DType::Bool) return false;
    const Dims& shape = st.shapes[0];
    const int64_t lanes = lanes_of(ctx.target, st.dtypes[0]);
    if (shape.size() < 2 || lanes < 2 || shape.back() % lanes != 0) return false;
    const loop::Var& last = st.axes.back();
    bool read = false;
    for (const te::Tensor& in : st.inputs()) {
      if (!reads_use(st, in.stage(), last)) continue;
      if (dim_indexed_by(st, in.stage(), last) != in.rank() - 1) return false;
      read = true;
    }
    return read;
  }
  std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const override {
    return {switch_knob("parallel", numel_of(st.shapes[0]) * reduce_extent(st) >= ctx.target.parallel_grain)};
  }
  bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues& values) const override {
    const Dims& shape = st.shapes[0];
    const int64_t lanes = lanes_of(ctx.target, st.dtypes[0]);
    const loop::Var& last = st.axes.back();
    std::string outer = fuse_leading(s, st, st.axes.size() - 1);
    s.split(st.name, last.name(), lanes);
    std::vector<std::string> order{outer, outer_name(last.name())};
    for (const auto& a : st.body.as<loop::ReduceNode>()->axes) order.push_back(a.var.name());
    order.push_back(inner_name(last.name()));
    s.reorder(st.name, order);
    s.vectorize(st.name, inner_name(last.name()));
    if (knob_or(values, "parallel", numel_of(shape) * reduce_extent(st) >= ctx.target.parallel_grain))
      s.parallel(st.name, outer);
    return true;
  }
  Materialize materialize_inputs(const te::Stage& st) const override {
    return st.op_class != te::OpClass::Reduce ? Materialize::After : Materialize::None;
  }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_generic_rule() { return std::make_unique<GenericRule>(); }
std::unique_ptr<ScheduleRule> make_row_reduction_rule() { return std::make_unique<RowReductionRule>(); }
std::unique_ptr<ScheduleRule> make_lane_reduction_rule() { return std::make_unique<LaneReductionRule>(); }

}  // namespace tessera::schedule
