// Default schedules per op class.
#include "schedule/default_schedule.h"

#include "loop/visitor.h"

namespace tessera::schedule {

namespace {

bool is_output(const std::vector<te::Tensor>& outputs, const te::Stage* s) {
  for (const auto& t : outputs)
    if (&t.stage() == s) return true;
  return false;
}

int64_t reduce_extent(const te::Stage& s) {
  int64_t n = 1;
  if (!te::is_top_reduce(s)) return n;
  for (const auto& a : s.body.as<loop::ReduceNode>()->axes)
    if (const int64_t* e = loop::as_const_int(a.extent)) n *= std::max<int64_t>(*e, 1);
  return n;
}

// Generic rule: fuse the spatial loops into one, split off a vector-wide inner
// loop (vectorized when the stage has no top-level reduction) and run the
// outer part in parallel when the stage is big enough.
void schedule_generic(Schedule& s, const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  if (shape.empty()) return;
  int64_t numel = numel_of(shape);
  if (numel == 0) return;
  std::string loop = st.axes[0].name();
  for (size_t i = 1; i < st.axes.size(); ++i) {
    s.fuse(st.name, loop, st.axes[i].name());
    loop = fused_name(loop, st.axes[i].name());
  }
  int64_t lanes = std::max<int64_t>(1, target.vector_bytes / static_cast<int64_t>(std::max<size_t>(dtype_size(st.dtypes[0]), 1)));
  bool top_reduce = te::is_top_reduce(st);
  bool big = numel * reduce_extent(st) >= target.parallel_grain;
  if (!top_reduce && numel >= lanes && shape.back() >= lanes) {
    s.split(st.name, loop, lanes);
    s.vectorize(st.name, inner_name(loop));
    if (big) s.parallel(st.name, outer_name(loop));
  } else if (big) {
    s.parallel(st.name, loop);
  }
}

}  // namespace

Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target) {
  Schedule s;
  for (const te::StagePtr& st : te::stages_of(outputs)) {
    if (st->kind != te::StageKind::Compute) continue;
    bool root = is_output(outputs, st.get()) || te::has_reduce(st->body);
    if (!root) continue;
    schedule_generic(s, *st, target);
  }
  return s;
}

}  // namespace tessera::schedule
