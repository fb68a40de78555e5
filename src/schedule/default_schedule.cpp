// Default schedules per op class.
#include "schedule/default_schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "loop/visitor.h"
#include "schedule/contraction_schedule.h"
#include "schedule/stage_queries.h"
#include "schedule/winograd_schedule.h"

namespace tessera::schedule {

namespace {

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

// Fuses the stage's first `count` axes into one loop; returns its name.
std::string fuse_leading(Schedule& s, const te::Stage& st, size_t count) {
  std::string loop = st.axes[0].name();
  for (size_t i = 1; i < count; ++i) {
    s.fuse(st.name, loop, st.axes[i].name());
    loop = fused_name(loop, st.axes[i].name());
  }
  return loop;
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

// Generic rule: the spatial loops fused into one, a vector-wide inner loop
// split off (vectorized when the stage has no top-level reduction) and the
// outer part run in parallel when the stage is big enough. When the last
// dimension is not a whole number of vectors, vectors would straddle rows
// (gathers, index division per lane): then only the outer dimensions are
// fused and each row is split into vectors, its tail masked. Rows of whole
// vectors are split the same way (no tail): indices and guards then use the
// outer indices instead of divisions of one fused index per lane (padding a
// blocked [N, C, H, W, 16] image: one test per vector).
// Returns the outermost loop it leaves ("" for a stage without loops).
std::string schedule_generic(Schedule& s, const te::Stage& st, const TargetInfo& target) {
  const Dims& shape = st.shapes[0];
  if (shape.empty()) return "";
  int64_t numel = numel_of(shape);
  if (numel == 0) return "";
  int64_t lanes = lanes_of(target, st.dtypes[0]);
  bool top_reduce = te::is_top_reduce(st);
  bool big = numel * reduce_extent(st) >= target.parallel_grain;
  bool in_place = reads_in_place(st);
  bool rows = !top_reduce && shape.size() > 1 && (shape.back() % lanes != 0 ? shape.back() >= 4 && !in_place : true);
  std::string loop = fuse_leading(s, st, rows ? st.axes.size() - 1 : st.axes.size());
  if (rows) {
    std::string last = st.axes.back().name();
    s.split(st.name, last, lanes);
    s.vectorize(st.name, inner_name(last));
    if (big) s.parallel(st.name, loop);
    return loop;
  }
  if (!top_reduce && numel >= lanes && (in_place || shape.back() >= lanes)) {
    s.split(st.name, loop, lanes);
    s.vectorize(st.name, inner_name(loop));
    if (big) s.parallel(st.name, outer_name(loop));
    return outer_name(loop);
  }
  if (big) s.parallel(st.name, loop);
  return loop;
}

// True when a stage is cheap enough to recompute at every read of a
// contraction's inner loop: with the stages inlined into it, one read of
// memory besides scalars, a few arithmetic operations, no selects (padding, concatenation)
// or calls; with `value_selects`, selects between values (a Clip's) count as
// operations and up to six are allowed (a few taps per input, not a GEMM's K).
bool cheap_prologue(const std::vector<te::Tensor>& outputs, const te::Stage& st, bool value_selects = false) {
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

// The vector-wide partial results of an rfactor'ed reduction (stage.rf):
// computed inside the stage's `loop` ("" : at root), its other reduction
// axes outside the split last one, the lanes vectorized.
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

// Row reductions — the last reduction axis runs along the innermost
// dimension of an input (softmax, layer norm, ReduceMean over the last axis)
// — are split into vector-wide partial results (rfactor): the partials are
// computed for each output element inside its loop, the reduction outside
// the vectorized lanes, then combined.
bool schedule_row_reduction(Schedule& s, const te::Stage& st, const TargetInfo& target) {
  if (!te::is_top_reduce(st) || st.num_outputs() != 1) return false;
  const auto* red = st.body.as<loop::ReduceNode>();
  const loop::ReduceAxis& r = red->axes.back();
  const int64_t* n = loop::as_const_int(r.extent);
  int64_t lanes = lanes_of(target, st.dtypes[0]);
  if (!n || *n < lanes || lanes < 2 || st.dtypes[0] == DType::Bool) return false;
  bool contiguous = false;
  for (const te::Tensor& in : st.inputs()) contiguous |= dim_indexed_by(st, in.stage(), r.var) == in.rank() - 1;
  if (!contiguous) return false;
  s.rfactor(st.name, r.var.name(), lanes);
  place_partials(s, st, schedule_generic(s, st, target));
  return true;
}

// Reductions over outer axes whose output's last axis runs along every
// input's contiguous last dimension (average pools over a blocked image's
// plane, sums down columns): that axis is split into vectors kept as the
// innermost loop, with the reduction loops around them — each vector lane
// accumulates its own output, reading whole vectors of the input.
bool schedule_lane_reduction(Schedule& s, const te::Stage& st, const TargetInfo& target) {
  if (!te::is_top_reduce(st) || st.num_outputs() != 1 || st.dtypes[0] == DType::Bool) return false;
  const Dims& shape = st.shapes[0];
  const int64_t lanes = lanes_of(target, st.dtypes[0]);
  if (shape.size() < 2 || lanes < 2 || shape.back() % lanes != 0) return false;
  const loop::Var& last = st.axes.back();
  bool read = false;
  for (const te::Tensor& in : st.inputs()) {
    if (!reads_use(st, in.stage(), last)) continue;
    if (dim_indexed_by(st, in.stage(), last) != in.rank() - 1) return false;
    read = true;
  }
  if (!read) return false;
  std::string outer = fuse_leading(s, st, st.axes.size() - 1);
  s.split(st.name, last.name(), lanes);
  std::vector<std::string> order{outer, outer_name(last.name())};
  for (const auto& a : st.body.as<loop::ReduceNode>()->axes) order.push_back(a.var.name());
  order.push_back(inner_name(last.name()));
  s.reorder(st.name, order);
  s.vectorize(st.name, inner_name(last.name()));
  if (numel_of(shape) * reduce_extent(st) >= target.parallel_grain) s.parallel(st.name, outer);
  return true;
}

// True when the schedule already materializes the stage.
bool rooted(const Schedule& s, const std::string& stage) {
  for (const Step& step : s.steps)
    if (step.kind == StepKind::ComputeRoot && step.stage == stage) return true;
  return false;
}

// Computed inputs of a tiled contraction or window reduction (padding, and
// the ops of a fused block before it) are materialized once, so the inner
// loop reads plain memory without guards or recomputation; only a cheap
// elementwise prologue (a ReLU) is applied as the input is read. What a
// padded copy reads is materialized first unless cheap: formulas under its
// guards would not vectorize.
void materialize_inputs(Schedule& s, const std::vector<te::Tensor>& outputs, const te::Stage& st,
                        const TargetInfo& target) {
  auto needs_root = [&](const te::Tensor& in) {
    return in.stage().kind == te::StageKind::Compute && !rooted(s, in.name()) && !is_output(outputs, &in.stage()) &&
           !te::has_reduce(in.stage().body) && !cheap_prologue(outputs, in.stage());
  };
  // A depthwise blocked convolution reads its padded input with guards
  // alike across lanes: one test and a masked vector load per tap, cheaper
  // than copying the whole image when each input is read only a few times
  // — unless the copy also computes something (a SiLU before it).
  auto padding_in_place = [&](const te::Tensor& in) {
    if (st.op_class != te::OpClass::DepthwiseConvBlocked || !lane_uniform_guards(in.stage(), target)) return false;
    for (const te::Tensor& in2 : in.stage().inputs())
      if (in2.stage().kind != te::StageKind::Placeholder && !cheap_prologue(outputs, in2.stage(), true)) return false;
    return true;
  };
  for (const te::Tensor& in : st.inputs()) {
    if (!needs_root(in) || padding_in_place(in)) continue;
    s.compute_root(in.name());
    schedule_generic(s, in.stage(), target);
    // Under guards that are alike across a vector's lanes (a blocked image's
    // padding tests pixels, the lanes are channels) any formula vectorizes.
    if (lane_uniform_guards(in.stage(), target)) continue;
    for (const te::Tensor& in2 : in.stage().inputs())
      if (needs_root(in2)) {
        s.compute_root(in2.name());
        schedule_generic(s, in2.stage(), target);
      }
  }
}

// Inlined stages that several stages read (a fused block's shared values:
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

// Inlined stages that several stages read (a fused block's shared values:
// a concatenation feeding two reshapes, a mask used twice) or that a reader
// broadcasts are materialized once unless cheap, instead of being recomputed
// at every read — except inside a contraction's epilogue, which stays
// inlined into its output.
void materialize_shared(Schedule& s, const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                        const std::set<const te::Stage*>& tiled, const TargetInfo& target) {
  for (const te::Stage* st : shared_stages(outputs, stages, tiled)) {
    if (rooted(s, st->name)) continue;
    s.compute_root(st->name);
    schedule_generic(s, *st, target);
  }
}

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

// Row-wise blocks — one output, no contraction, every computed value either
// a row of the output's shape or a reduction of such rows over the last axis
// (layer norm, softmax, a residual add before them) — run as one parallel
// loop over the rows: each row's reductions and materialized values are
// computed inside it (compute_at), in cache, with no pass over whole
// intermediates and one parallel region instead of one per stage. Stages
// that only re-index block inputs (reshapes, transposes) stay inlined.
bool schedule_rows(Schedule& s, const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                   const TargetInfo& target) {
  if (outputs.size() != 1 || outputs[0].stage().kind != te::StageKind::Compute) return false;
  const te::Stage& out = outputs[0].stage();
  const Dims& shape = out.shapes[0];
  if (shape.size() < 2 || out.num_outputs() != 1 || te::has_reduce(out.body) || numel_of(shape) == 0) return false;
  std::set<const te::Stage*> views;  // compute stages reading block inputs only, through other views
  std::set<const te::Stage*> local;  // the other compute stages: row-wise
  std::vector<const te::Stage*> roots;  // computed per row, besides the output
  for (const te::StagePtr& st : stages) {
    if (st->kind == te::StageKind::Placeholder) continue;
    if (st->kind != te::StageKind::Compute || st->num_outputs() != 1) return false;
    if (te::is_conv(st->op_class) || st->op_class == te::OpClass::MatMul || st->op_class == te::OpClass::Pool)
      return false;
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
    if (!rowwise) return false;
    if (te::has_reduce(st->body)) roots.push_back(st.get());
    local.insert(st.get());
  }
  for (const te::Stage* st : local)
    if (!reads_own_row(*st, local, shape)) return false;
  if (roots.empty()) return false;  // elementwise: the generic schedule is as good
  for (const te::Stage* st : shared_stages(outputs, stages, {}))
    if (local.count(st)) roots.push_back(st);
  // The output: rows fused into one parallel loop, each row split into vectors.
  int64_t lanes = lanes_of(target, out.dtypes[0]);
  std::string row = fuse_leading(s, out, out.axes.size() - 1);
  auto vectorize_row = [&](const te::Stage& st) {
    std::string last = st.axes.back().name();
    if (st.shapes[0].back() < lanes) return;
    s.split(st.name, last, lanes);
    s.vectorize(st.name, inner_name(last));
  };
  vectorize_row(out);
  int64_t work = 0;
  for (const te::Stage* st : local) work += numel_of(st->shapes[0]) * reduce_extent(*st);
  if (work + numel_of(shape) >= target.parallel_grain) s.parallel(out.name, row);
  for (const te::Stage* st : roots) {
    s.compute_at(st->name, out.name, row);
    if (!te::has_reduce(st->body)) {
      vectorize_row(*st);
      continue;
    }
    // A row's reduction: vector-wide partial results when the row is long.
    const auto* red = st->body.as<loop::ReduceNode>();
    if (!red) continue;  // a reduction inside a formula: computed per row as it is
    const int64_t* n = loop::as_const_int(red->axes.back().extent);
    if (!n || *n < lanes || lanes < 2 || st->dtypes[0] == DType::Bool || red->axes.size() != 1) continue;
    s.rfactor(st->name, red->axes.back().var.name(), lanes);
    place_partials(s, *st, fuse_leading(s, *st, st->axes.size()));
  }
  return true;
}

}  // namespace

Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target) {
  Schedule s;
  auto stages = te::stages_of(outputs);
  std::set<const te::Stage*> done;   // epilogues scheduled with their contraction
  std::set<const te::Stage*> tiled;  // contractions finished by an epilogue
  if (schedule_rows(s, outputs, stages, target)) return s;
  for (const te::StagePtr& st : stages) {
    if (st->kind != te::StageKind::Compute || done.count(st.get())) continue;
    // Winograd transforms: tiles of unrolled points, finished by their epilogue.
    if (st->op_class == te::OpClass::WinogradInput || st->op_class == te::OpClass::WinogradOutput) {
      const te::Stage* sink = epilogue_of(outputs, stages, *st);
      if ((sink || is_output(outputs, st.get())) && schedule_winograd_transform(s, *st, sink ? *sink : *st, lanes_of(target, DType::F32),
                                      target.parallel_grain)) {
        if (sink) done.insert(sink);
        materialize_inputs(s, outputs, *st, target);
        continue;
      }
    }
    bool root = is_output(outputs, st.get()) || te::has_reduce(st->body);
    if (!root) continue;
    const te::Stage* epilogue = epilogue_of(outputs, stages, *st);
    if (schedule_contraction(s, *st, target, epilogue)) {
      if (epilogue) done.insert(epilogue), tiled.insert(st.get());
      materialize_inputs(s, outputs, *st, target);
      continue;
    }
    if (schedule_row_reduction(s, *st, target)) continue;
    if (schedule_lane_reduction(s, *st, target)) {
      if (st->op_class != te::OpClass::Reduce) materialize_inputs(s, outputs, *st, target);
      continue;
    }
    // Window reductions not tiled (narrow depthwise convolutions, pools)
    // read each input element many times: materialize what they read too.
    if (te::is_top_reduce(*st) && st->op_class != te::OpClass::Reduce) materialize_inputs(s, outputs, *st, target);
    schedule_generic(s, *st, target);
  }
  materialize_shared(s, outputs, stages, tiled, target);
  return s;
}

}  // namespace tessera::schedule
