// The program-level row rule (see row_schedule.h).
#include "schedule/row_schedule.h"

#include <algorithm>
#include <optional>
#include <set>

#include "loop/visitor.h"
#include "schedule/generic_schedule.h"
#include "schedule/stage_queries.h"

namespace tessera::schedule {

namespace {

// True when every read `reader` makes of a stage in `local` indexes the
// leading (row) dimensions [0, rows) by the reader's own axes, or by 0 where
// the row dimension is 1: the reader needs values of its own row only.
bool reads_own_row(const te::Stage& reader, const std::set<const te::Stage*>& local, const Dims& shape) {
  struct Checker : loop::IRVisitor {
    const te::Stage* reader;
    const std::set<const te::Stage*>* local;
    const Dims* shape;
    bool ok = true;
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      if (local->count(static_cast<const te::Stage*>(op->producer.get())))
        for (size_t d = 0; ok && d + 1 < shape->size(); ++d)
          ok = d < op->indices.size() && (loop::equal(op->indices[d], reader->axes[d]) ||
                                          ((*shape)[d] == 1 && loop::is_const_int(op->indices[d], 0)));
      IRVisitor::visit(op);
    }
  } c;
  c.reader = &reader;
  c.local = &local;
  c.shape = &shape;
  c.visit(reader.body);
  return c.ok;
}

// The row-wise stages of a program: `out` the output the rows are of,
// `stored` the other outputs (computed whole before the loop over rows),
// `local` every other computed stage but the views, `roots` those computed
// per row (reductions, then shared values).
struct RowPlan {
  const te::Stage* out = nullptr;
  std::vector<const te::Stage*> stored;
  std::set<const te::Stage*> local;
  std::vector<const te::Stage*> roots;
};

// The output no stage of the program reads (the block's sink); null when
// there is not exactly one.
const te::Stage* sink_output(const RuleContext& ctx) {
  std::set<const te::Stage*> read;
  for (const te::StagePtr& st : ctx.stages)
    for (const te::Tensor& in : st->inputs()) read.insert(&in.stage());
  const te::Stage* sink = nullptr;
  for (const te::Tensor& t : ctx.outputs) {
    if (read.count(&t.stage()) || &t.stage() == sink) continue;
    if (sink) return nullptr;
    sink = &t.stage();
  }
  return sink;
}

// Row-wise blocks — no contraction, every computed value either a row of
// the output's shape or a reduction of such rows over the last axis (layer
// norm, softmax, a residual add before them). Stages that only re-index
// block inputs (reshapes, transposes: views) stay inlined. Besides the sink,
// the block may store elementwise outputs of its shape and type that read block
// inputs only (a pre-norm transformer's residual sum, read by the next
// residual add as well): each one pass of its own, before the rows.
std::optional<RowPlan> plan_rows(const RuleContext& ctx) {
  RowPlan p;
  p.out = sink_output(ctx);
  if (!p.out || p.out->kind != te::StageKind::Compute) return std::nullopt;
  const te::Stage& out = *p.out;
  const Dims& shape = out.shapes[0];
  if (shape.size() < 2 || out.num_outputs() != 1 || te::has_reduce(out.body) || numel_of(shape) == 0)
    return std::nullopt;
  std::set<const te::Stage*> views;  // compute stages reading block inputs only, through other views
  for (const te::StagePtr& st : ctx.stages) {
    if (st->kind == te::StageKind::Placeholder) continue;
    if (st->kind != te::StageKind::Compute || st->num_outputs() != 1) return std::nullopt;
    if (te::is_conv(st->op_class) || st->op_class == te::OpClass::MatMul || st->op_class == te::OpClass::Pool)
      return std::nullopt;
    bool reads_inputs = true;
    for (const te::Tensor& in : st->inputs())
      reads_inputs = reads_inputs && (in.stage().kind == te::StageKind::Placeholder || views.count(&in.stage()));
    if (st.get() != &out && is_output(ctx.outputs, st.get())) {
      if (!reads_inputs || te::has_reduce(st->body) || st->shapes[0] != shape || st->dtypes[0] != out.dtypes[0])
        return std::nullopt;
      p.stored.push_back(st.get());
      continue;
    }
    if (st.get() != &out && !te::has_reduce(st->body) && reads_inputs) {
      views.insert(st.get());
      continue;
    }
    const Dims& d = st->shapes[0];
    bool rowwise = d.size() == shape.size() && std::equal(shape.begin(), shape.end() - 1, d.begin()) &&
                   (d.back() == shape.back() || d.back() == 1);
    if (!rowwise) return std::nullopt;
    if (te::has_reduce(st->body)) p.roots.push_back(st.get());
    p.local.insert(st.get());
  }
  for (const te::Stage* st : p.local)
    if (!reads_own_row(*st, p.local, shape)) return std::nullopt;
  if (p.roots.empty()) return std::nullopt;  // elementwise: the generic schedule is as good
  for (const te::Stage* st : shared_stages(ctx.outputs, ctx.stages, {}))
    if (p.local.count(st)) p.roots.push_back(st);
  return p;
}

// The block runs as one loop over the output's rows (knob "parallel": in
// parallel): each row's reductions and materialized values are computed
// inside it (compute_at), in cache, with no pass over whole intermediates
// and one parallel region instead of one per stage. A long row's reduction
// is split into vector-wide partial results (knob "rfactor").
class RowsRule final : public ScheduleRule {
 public:
  std::string_view name() const override { return "rows"; }
  bool program_level() const override { return true; }
  bool applies(const te::Stage& st, const RuleContext& ctx) const override { return plan_rows(ctx).has_value(); }
  std::vector<Knob> knobs(const te::Stage&, const RuleContext& ctx) const override {
    const RowPlan p = *plan_rows(ctx);
    return {switch_knob("parallel", work(p) >= ctx.target.parallel_grain), switch_knob("rfactor", true)};
  }
  bool apply(Schedule& s, const te::Stage&, const RuleContext& ctx, const KnobValues& values) const override {
    const RowPlan p = *plan_rows(ctx);
    const te::Stage& out = *p.out;
    // The output: rows fused into one loop, each row split into vectors.
    const int64_t lanes = lanes_of(ctx.target, out.dtypes[0]);
    std::string row = fuse_leading(s, out, out.axes.size() - 1);
    auto vectorize_row = [&](const te::Stage& st) {
      std::string last = st.axes.back().name();
      if (st.shapes[0].back() < lanes) return;
      s.split(st.name, last, lanes);
      s.vectorize(st.name, inner_name(last));
    };
    vectorize_row(out);
    const bool parallel = knob_or(values, "parallel", work(p) >= ctx.target.parallel_grain);
    if (parallel) s.parallel(out.name, row);
    for (const te::Stage* st : p.stored) {  // whole, before the rows: rows in parallel, each in vectors
      std::string rows = fuse_leading(s, *st, st->axes.size() - 1);
      vectorize_row(*st);
      if (parallel) s.parallel(st->name, rows);
    }
    const bool partials = knob_or(values, "rfactor", 1);
    for (const te::Stage* st : p.roots) {
      s.compute_at(st->name, out.name, row);
      if (!te::has_reduce(st->body)) {
        vectorize_row(*st);
        continue;
      }
      const auto* red = st->body.as<loop::ReduceNode>();
      if (!red || !partials) continue;  // a reduction inside a formula: computed per row as it is
      const int64_t* n = loop::as_const_int(red->axes.back().extent);
      if (!n || *n < lanes || lanes < 2 || st->dtypes[0] == DType::Bool || red->axes.size() != 1) continue;
      s.rfactor(st->name, red->axes.back().var.name(), lanes);
      place_partials(s, *st, fuse_leading(s, *st, st->axes.size()));
    }
    return true;
  }

 private:
  // Operations of the block: its row-wise stages and its outputs.
  static int64_t work(const RowPlan& p) {
    int64_t w = numel_of(p.out->shapes[0]);
    for (const te::Stage* st : p.stored) w += numel_of(st->shapes[0]);
    for (const te::Stage* st : p.local) w += numel_of(st->shapes[0]) * reduce_extent(*st);
    return w;
  }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_rows_rule() { return std::make_unique<RowsRule>(); }

}  // namespace tessera::schedule
