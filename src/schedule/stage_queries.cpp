// Questions the default schedules ask of a stage (see stage_queries.h).
#include "schedule/stage_queries.h"

#include <algorithm>

#include "loop/visitor.h"

namespace tessera::schedule {

// True when `s` computes one of `outputs`.
bool is_output(const std::vector<te::Tensor>& outputs, const te::Stage* s) {
  for (const auto& t : outputs)
    if (&t.stage() == s) return true;
  return false;
}

// Lanes of a vector of `dtype` elements on the target.
int64_t lanes_of(const TargetInfo& target, DType dtype) {
  return std::max<int64_t>(1, target.vector_bytes / static_cast<int64_t>(std::max<size_t>(dtype_size(dtype), 1)));
}

// Iterations of the stage's top-level reduction (1 without one; constant axes only).
int64_t reduce_extent(const te::Stage& s) {
  int64_t n = 1;
  if (!te::is_top_reduce(s)) return n;
  for (const auto& a : s.body.as<loop::ReduceNode>()->axes)
    if (const int64_t* e = loop::as_const_int(a.extent)) n *= std::max<int64_t>(*e, 1);
  return n;
}

// True when some read of `in` in `st` has an index that uses `v`.
bool reads_use(const te::Stage& st, const te::Stage& in, const loop::Var& v) {
  struct Finder : loop::IRVisitor {
    const te::Stage* in;
    const loop::VarNode* v;
    bool inside = false, found = false;
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      bool saved = inside;
      inside = inside || op->producer.get() == in;
      IRVisitor::visit(op);
      inside = saved;
    }
    void visit(const loop::VarNode* op) override { found |= inside && op == v; }
  } f;
  f.in = &in;
  f.v = v.node();
  f.visit(st.body);
  return f.found;
}

// The dimension of `in` that every read of it in `st` indexes with exactly
// `v`; -1 when none does or the reads disagree.
int dim_indexed_by(const te::Stage& st, const te::Stage& in, const loop::Var& v) {
  struct Finder : loop::IRVisitor {
    const te::Stage* in;
    const loop::Var* v;
    int dim = -2;  // -2: no read yet
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      if (op->producer.get() == in) {
        int found = -1;
        for (size_t d = 0; d < op->indices.size(); ++d)
          if (loop::equal(op->indices[d], *v)) found = static_cast<int>(d);
        dim = dim == -2 || dim == found ? found : -1;
      }
      IRVisitor::visit(op);
    }
  } f;
  f.in = &in;
  f.v = &v;
  f.visit(st.body);
  return f.dim < 0 ? -1 : f.dim;
}

}  // namespace tessera::schedule
