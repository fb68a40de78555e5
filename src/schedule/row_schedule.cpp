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

// The row-wise stages of a program: `local` every computed stage but the
// views, `roots` those computed per row (reductions, then shared values).
struct RowPlan {
  std::set<const te::Stage*> local;
  std::vector<const te::Stage*> roots;
};

// Row-wise blocks — one output, no contraction, every computed value either
// a row of the output's shape or a reduction of such rows over the last axis
// (layer norm, softmax, a residual add before them). Stages that only
// re-index block inputs (reshapes, transposes: views) stay inlined.
std::optional<RowPlan> plan_rows(const RuleContext& ctx) {
  const std::vector<te::Tensor>& outputs = ctx.outputs;
  if (outputs.size() != 1 || outputs[0].stage().kind != te::StageKind::Compute) return std::nullopt;
  const te::Stage& out = outputs[0].stage();
  const Dims& shape = out.shapes[0];
  if (shape.size() < 2 || out.num_outputs() != 1 || te::has_reduce(out.body) || numel_of(shape) == 0)
    return std::nullopt;
  std::set<const te::Stage*> views;  // compute stages reading block inputs only, through other views
  RowPlan p;
  for (const te::StagePtr& st : ctx.stages) {
    if (st->kind == te::StageKind::Placeholder) continue;
    if (st->kind != te::StageKind::Compute || st->num_outputs() != 1) return std::nullopt;
    if (te::is_conv(st->op_class) || st->op_class == te::OpClass::MatMul || st->op_class == te::OpClass::Pool)
      return std::nullopt;
    bool view = st.get() != &out && !te::has_reduce(st->body);
    for (const te::Tensor& in : st->inputs())
      view = view && (in.stage().kind == te::StageKind::Placeholder || views.count(&in.stage()));
    if (view) {
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
  for (const te::Stage* st : shared_stages(outputs, ctx.stages, {}))
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
  std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const override {
    return {switch_knob("parallel", work(st, *plan_rows(ctx)) >= ctx.target.parallel_grain),
            switch_knob("rfactor", true)};
  }
  bool apply(Schedule& s, const te::Stage& out, const RuleContext& ctx, const KnobValues& values) const override {
    const RowPlan p = *plan_rows(ctx);
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
    if (knob_or(values, "parallel", work(out, p) >= ctx.target.parallel_grain)) s.parallel(out.name, row);
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
  // Operations of the block: its row-wise stages and the output.
  static int64_t work(const te::Stage& out, const RowPlan& p) {
    int64_t w = numel_of(out.shapes[0]);
    for (const te::Stage* st : p.local) w += numel_of(st->shapes[0]) * reduce_extent(*st);
    return w;
  }
};

}  // namespace

std::unique_ptr<ScheduleRule> make_rows_rule() { return std::make_unique<RowsRule>(); }

}  // namespace tessera::schedule
