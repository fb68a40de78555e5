// Questions the default schedules ask of a stage (see stage_queries.h).
#include "schedule/stage_queries.h"

#include <algorithm>

#include <map>
#include <set>

#include "loop/bounds.h"
#include "loop/simplify.h"
#include "loop/visitor.h"
#include "schedule/unswitch_guards.h"

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

// Elements of the stage's constant inputs (weights) and of its output and
// other inputs (activations).
Footprint footprint(const te::Stage& st, const TargetInfo& target) {
  Footprint f{0, numel_of(st.shapes[0])};
  for (const te::Tensor& in : st.inputs())
    (target.constant_inputs.count(in.name()) ? f.weights : f.activations) += numel_of(in.shape());
  return f;
}

// Bytes of the stage's constant inputs (weights), each at its own element type.
int64_t weight_bytes(const te::Stage& st, const TargetInfo& target) {
  int64_t bytes = 0;
  for (const te::Tensor& in : st.inputs())
    if (target.constant_inputs.count(in.name())) bytes += numel_of(in.shape()) * static_cast<int64_t>(dtype_size(in.dtype()));
  return bytes;
}

// True when every read of the stage is at its own output position in a
// tensor of its own shape (elementwise on equal shapes): the fused index
// then addresses every tensor alike and vectors are contiguous.
bool reads_in_place(const te::Stage& st) {
  struct Checker : loop::IRVisitor {
    const te::Stage* st;
    bool ok = true;
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      auto* p = static_cast<const te::Stage*>(op->producer.get());
      bool same = p->shapes[static_cast<size_t>(op->value_index)] == st->shapes[0] && op->indices.size() == st->axes.size();
      for (size_t d = 0; same && d < op->indices.size(); ++d)  // a dim of 1 may be read at 0
        same = loop::equal(op->indices[d], st->axes[d]) ||
               (st->shapes[0][d] == 1 && loop::is_const_int(op->indices[d], 0));
      ok = ok && same;
      IRVisitor::visit(op);
    }
  } c;
  c.st = &st;
  c.visit(st.body);
  return c.ok;
}

// True when the stage's formula has a guarded select (if_then_else).
bool has_guard(const te::Stage& st) {
  struct Finder : loop::IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const loop::SelectNode* op) override {
      found |= te::is_guard(op->cond);
      IRVisitor::visit(op);
    }
  } f;
  f.visit(st.body);
  return f.found;
}

int guard_cut_axis(const te::Stage& st) {
  struct Finder : loop::IRVisitor {
    const te::Stage* st;
    int axis = -1;
    using IRVisitor::visit;
    loop::VarBounds bounds;  // each axis over its dim: (c * 16 + lane) / 16 tests c alone
    // True when `e` reads no variable but the stage's axes (not a reduction's).
    bool only_axes(const loop::Expr& e) const {
      struct Vars : loop::IRVisitor {
        const loop::VarBounds* axes;
        bool other = false;
        using IRVisitor::visit;
        void visit(const loop::VarNode* op) override { other = other || !axes->count(op); }
      } v;
      v.axes = &bounds;
      v.visit(e);
      return !v.other;
    }
    void visit(const loop::SelectNode* op) override {
      if (std::optional<GuardCut> c = guard_cut(op->cond)) {
        loop::Expr e = loop::simplify(c->e, bounds);
        loop::Interval range = loop::bounds_of(e, bounds);
        // A cut every position falls on one side of (a reorder's test of
        // padding lanes the dim has none of) splits nothing.
        const bool decided = range.has_min() && range.has_max() &&
                             (range.max < c->threshold || range.min >= c->threshold);
        if (decided || !only_axes(e)) return IRVisitor::visit(op);
        for (size_t a = 0; a < st->axes.size(); ++a)
          if (loop::uses_var(e, st->axes[a])) axis = std::max(axis, static_cast<int>(a));
      }
      IRVisitor::visit(op);
    }
  } f;
  f.st = &st;
  for (size_t a = 0; a < st.axes.size(); ++a) f.bounds[st.axes[a].node()] = {0, st.shapes[0][a] - 1};
  f.visit(st.body);
  return f.axis;
}

// True when the stage is split into whole vectors of its last axis and no
// guard of its formula reads that axis: each guard is one test per vector.
bool lane_uniform_guards(const te::Stage& st, const TargetInfo& target) {
  const int64_t lanes = lanes_of(target, st.dtypes[0]);
  if (st.shapes[0].size() < 2 || st.shapes[0].back() % lanes != 0) return false;
  struct Finder : loop::IRVisitor {
    const loop::VarNode* last;
    bool in_guard = false, found = false;
    using IRVisitor::visit;
    void visit(const loop::SelectNode* op) override {
      bool saved = in_guard;
      in_guard = te::is_guard(op->cond);
      visit(op->cond);
      in_guard = saved;
      visit(op->true_value);
      visit(op->false_value);
    }
    void visit(const loop::VarNode* op) override { found |= in_guard && op == last; }
  } f;
  f.last = st.axes.back().node();
  f.visit(st.body);
  return !f.found;
}

// True when a stage is cheap enough to recompute at every read of a
// contraction's inner loop: with the stages inlined into it, one read of
// memory besides scalars, a few arithmetic operations, no selects (padding, concatenation)
// or calls; with `value_selects`, selects between values (a Clip's) count as
// operations and up to six are allowed (a few taps per input, not a GEMM's K).
bool cheap_prologue(const std::vector<te::Tensor>& outputs, const te::Stage& st, bool value_selects) {
  struct Counter : loop::IRVisitor {
    const std::vector<te::Tensor>* outputs;
    std::set<const te::Stage*> loaded;  // tensors read (a clamp reads its input thrice, one load)
    int ops = 0;
    bool select = false;
    using IRVisitor::visit;
    void visit(const loop::ProducerLoadNode* op) override {
      auto* p = static_cast<const te::Stage*>(op->producer.get());
      if (p->kind == te::StageKind::Compute && !is_output(*outputs, p) && !te::has_reduce(p->body))
        visit(p->body);  // inlined where it is read
      else if (numel_of(p->shapes[0]) > 1)
        loaded.insert(p);  // (a scalar, Clip's bounds, stays in a register)
      IRVisitor::visit(op);
    }
    void visit(const loop::BinaryNode* op) override {
      ++ops;
      IRVisitor::visit(op);
    }
    void visit(const loop::SelectNode* op) override {
      if (value_selects && !te::is_guard(op->cond)) ++ops;  // a clamp's select is one more operation
      else select = true;
      IRVisitor::visit(op);
    }
    void visit(const loop::CallNode* op) override {
      select = true;
      IRVisitor::visit(op);
    }
    bool value_selects = false;
  } c;
  c.value_selects = value_selects;
  c.outputs = &outputs;
  c.visit(st.body);
  return !c.select && c.loaded.size() <= 1 && c.ops <= (value_selects ? 6 : 2);
}

// True when the schedule already materializes the stage.
bool rooted(const Schedule& s, const std::string& stage) {
  for (const Directive& step : s.directives)
    if (step.kind == DirectiveKind::ComputeRoot && step.stage == stage) return true;
  return false;
}

bool placed(const Schedule& s, const std::string& stage) {
  for (const Directive& step : s.directives)
    if ((step.kind == DirectiveKind::ComputeRoot || step.kind == DirectiveKind::ComputeAt) && step.stage == stage)
      return true;
  return false;
}

// Stages to materialize in a program: inlined stages that several stages read (a fused block's shared values:
// a concatenation feeding two reshapes, a mask used twice) or that a reader
// broadcasts are materialized once unless cheap, instead of being recomputed
// at every read — except inside a contraction's epilogue, which stays
// inlined into its output.
std::vector<const te::Stage*> shared_stages(const std::vector<te::Tensor>& outputs,
                                            const std::vector<te::StagePtr>& stages,
                                            const std::set<const te::Stage*>& tiled) {
  std::map<const te::Stage*, int> readers;
  for (const te::StagePtr& st : stages)
    for (const te::Tensor& in : st->inputs()) ++readers[&in.stage()];
  std::set<const te::Stage*> in_epilogue(tiled.begin(), tiled.end());
  for (const te::StagePtr& st : stages)  // producers first: the chains below tiled contractions
    for (const te::Tensor& in : st->inputs())
      if (in_epilogue.count(&in.stage()) && !te::has_reduce(st->body)) in_epilogue.insert(st.get());
  // Stages whose formula picks between inputs by position (concatenation,
  // padding) are materialized when another such stage reads them, directly
  // or through inlined stages: nested picks evaluate every branch per lane.
  std::set<const te::Stage*> picks_below;  // inlined stages that read a pick through inlined stages
  std::set<const te::Stage*> nested;       // picks read by a later pick
  for (const te::StagePtr& st : stages) {
    bool reads_pick = false;
    for (const te::Tensor& in : st->inputs()) reads_pick |= picks_below.count(&in.stage()) > 0;
    if (reads_pick && has_guard(*st))
      for (const te::Tensor& in : st->inputs())
        if (picks_below.count(&in.stage())) nested.insert(&in.stage());
    bool inlined = st->kind == te::StageKind::Compute && !is_output(outputs, st.get()) && !te::has_reduce(st->body);
    if (inlined && (has_guard(*st) || reads_pick)) picks_below.insert(st.get());
  }
  // Stages a reader broadcasts (a layer norm's 1/sqrt(var + eps) per row,
  // read by every element of the row) would be recomputed per element read.
  std::set<const te::Stage*> broadcast;
  for (const te::StagePtr& st : stages)
    for (const te::Tensor& in : st->inputs())
      if (numel_of(st->shapes[0]) >= 4 * numel_of(in.stage().shapes[0])) broadcast.insert(&in.stage());
  std::vector<const te::Stage*> r;
  for (const te::StagePtr& st : stages) {
    bool recomputed = readers[st.get()] >= 2 || nested.count(st.get()) || broadcast.count(st.get());
    if (st->kind != te::StageKind::Compute || !recomputed || is_output(outputs, st.get()) || te::has_reduce(st->body) ||
        in_epilogue.count(st.get()) || cheap_prologue(outputs, *st))
      continue;
    r.push_back(st.get());
  }
  return r;
}

}  // namespace tessera::schedule
