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

// True when a stage's body is a guarded select (a padded copy of its input).
bool is_padding(const te::Stage& s) {
  return s.kind == te::StageKind::Compute && s.body.defined() && s.body.kind() == loop::ExprKind::Select &&
         !te::has_reduce(s.body);
}

// Register tiling for contractions (GEMM, convolution): the output is
// computed in mr x nr tiles accumulated in a local buffer (cache_write +
// compute_at), the nr columns (innermost output axis) vectorized and the mr
// rows unrolled, the reduction loops outside the tile; outer tiles run in
// parallel. The tile rows are the channel axis for convolutions (axis 1,
// NCHW) and the second-to-last axis otherwise.
bool schedule_contraction(Schedule& s, const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  if (shape.size() < 2 || !te::is_top_reduce(st) || st.dtypes[0] != DType::F32) return false;
  if (st.body.as<loop::ReduceNode>()->op != loop::ReduceOp::Sum) return false;
  if (st.tag.find("conv") == std::string::npos && st.tag.find("matmul") == std::string::npos) return false;
  size_t rank = shape.size();
  size_t jd = rank - 1;
  size_t id = (st.tag.find("conv") != std::string::npos && rank >= 3) ? 1 : rank - 2;
  int64_t lanes = target.vector_bytes / 4;
  int64_t ej = shape[jd], ei = shape[id];
  if (ej < lanes / 2) return false;
  int64_t nr = ej >= 2 * lanes ? 2 * lanes : lanes;
  int64_t mr = std::min<int64_t>(ei, nr > lanes ? 4 : 8);

  const std::string& name = st.name;
  std::string I = st.axes[id].name(), J = st.axes[jd].name();
  // Convolution weights [K, C, ...] that are constants are packed once into
  // [K/mr, C, ..., mr] so a tile's mr output channels read adjacent values.
  if (st.tag.find("conv") != std::string::npos)
    for (const te::Tensor& in : st.inputs())
      if (in.stage().kind == te::StageKind::Placeholder && target.constant_inputs.count(in.name()) &&
          in.rank() == static_cast<int>(rank) && in.dim(0) == ei && mr > 1) {
        s.cache_read(in.name(), name);
        s.layout(in.name() + "." + name, 0, mr);
        break;
      }
  s.cache_write(name);
  s.split(name, J, nr);
  s.split(name, I, mr);
  // Outer loops: the other axes in order with the row tiles placed where the row axis was.
  std::vector<std::string> outer;
  for (size_t d = 0; d < rank; ++d) {
    if (d == jd) continue;
    outer.push_back(d == id ? outer_name(I) : st.axes[d].name());
  }
  std::vector<std::string> full = outer;
  full.push_back(outer_name(J));
  full.push_back(inner_name(I));
  full.push_back(inner_name(J));
  s.reorder(name, full);
  std::string local = name + ".local";
  s.compute_at(local, name, outer_name(J));
  // Inside the tile: reduction loops outermost, then rows (unrolled), columns (vectorized).
  std::vector<std::string> lorder;
  for (const auto& a : st.body.as<loop::ReduceNode>()->axes) lorder.push_back(a.var.name());
  lorder.push_back(I);
  lorder.push_back(J);
  s.reorder(local, lorder);
  s.unroll(local, I);
  s.vectorize(local, J);
  s.vectorize(name, inner_name(J));
  // Parallel over the outer loops (fused) when there is enough work.
  int64_t work = numel_of(shape) * std::max<int64_t>(reduce_extent(st), 1);
  if (work >= target.parallel_grain) {
    std::string p = outer[0];
    for (size_t k = 1; k < outer.size(); ++k) {
      s.fuse(name, p, outer[k]);
      p = fused_name(p, outer[k]);
    }
    s.parallel(name, p);
  }
  return true;
}

}  // namespace

Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target) {
  Schedule s;
  auto stages = te::stages_of(outputs);
  for (const te::StagePtr& st : stages) {
    if (st->kind != te::StageKind::Compute) continue;
    bool root = is_output(outputs, st.get()) || te::has_reduce(st->body);
    if (!root) continue;
    if (schedule_contraction(s, *st, target)) {
      // Padded inputs of a tiled contraction are materialized once, so the
      // tile's inner loop reads without guards.
      for (const te::Tensor& in : st->inputs())
        if (is_padding(in.stage()) && !is_output(outputs, &in.stage())) {
          s.compute_root(in.name());
          schedule_generic(s, in.stage(), target);
        }
      continue;
    }
    schedule_generic(s, *st, target);
  }
  return s;
}

}  // namespace tessera::schedule
