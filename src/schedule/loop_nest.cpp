// A stage's loops under split / fuse / reorder / annotations, and building
// them into a loop nest.
#include "schedule/loop_nest.h"

#include <algorithm>

#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/unroll.h"
#include "loop/vectorize.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::schedule {

using loop::all_of;
using loop::Expr;
using loop::ForKind;
using loop::Stmt;
using loop::Var;

LoopNest::LoopNest(const te::Stage& stage, const std::vector<Expr>& mins, const std::vector<Expr>& extents,
                   const std::vector<Expr>& limits)
    : stage_(stage) {
  TESSERA_CHECK(stage.kind == te::StageKind::Compute, "schedule: ", stage.name, " is not a compute stage");
  TESSERA_CHECK(mins.size() == stage.axes.size() && extents.size() == stage.axes.size(),
                "schedule: domain of ", stage.name, " has the wrong rank");
  auto add = [&](const std::string& name, const Expr& extent, bool reduce) -> Var {
    TESSERA_CHECK(!find(name), "schedule: stage ", stage.name, " has two axes named '", name, "'");
    Var v(stage.name + "." + name);
    leaves_.push_back({name, v, loop::simplify(extent), ForKind::Serial, reduce});
    return v;
  };
  for (size_t i = 0; i < stage.axes.size(); ++i) {
    spatial_.push_back(loop::simplify(mins[i] + add(stage.axes[i].name(), extents[i], false)));
    last_.push_back(loop::simplify(mins[i] + extents[i] - 1));
    if (i < limits.size() && limits[i].defined()) {
      guards_.push_back(spatial_.back() < limits[i]);
      last_.back() = loop::simplify(loop::min(last_.back(), limits[i] - 1));
    }
  }
  if (te::is_top_reduce(stage))
    for (const auto& a : stage.body.as<loop::ReduceNode>()->axes)
      reduce_.push_back(loop::simplify(a.min + add(a.var.name(), a.extent, true)));
  domain_ = constant_iterations();
}

namespace {
// Iterations a schedule's splits may add beyond the domain: a factor of 64
// over it plus a million (partial tiles of default schedules stay far below:
// a 1x1 product tiled 8x32 runs 256 iterations).
constexpr int64_t kMaxOvershoot = 64, kOvershootSlack = int64_t{1} << 20;
// Copies of a body the unrolled and vectorized loops of one stage may make
// (a register tile: 8 rows x 32 lanes x 4 reduction steps is 1024).
constexpr int64_t kMaxUnrolledBody = 4096;
// The largest split factor of a loop whose extent is not a constant.
constexpr int64_t kMaxSymbolicSplit = int64_t{1} << 20;

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
}  // namespace

int64_t LoopNest::constant_iterations() const {
  int64_t n = 1;
  for (const Leaf& l : leaves_)
    if (const int64_t* e = loop::as_const_int(l.extent)) n = saturating_mul(n, std::max<int64_t>(*e, 1));
  return n;
}

void LoopNest::check_bounds(const Directive& step) const {
  const std::string& s = stage_.name;
  int64_t iterations = constant_iterations();
  TESSERA_CHECK(iterations <= saturating_mul(domain_, kMaxOvershoot) + kOvershootSlack, "schedule: ", step.to_text(),
                ": the loops of ", s, " would run ", iterations, " iterations over a domain of ", domain_,
                " (a split factor far beyond its loop's extent)");
  int64_t body = 1;
  for (const Leaf& l : leaves_) {
    // Loops past the unroller's and vectorizer's own limits stay serial.
    int64_t e = *loop::as_const_int(l.extent);
    if ((l.kind == ForKind::Unrolled && e <= loop::kMaxUnrollIterations) ||
        (l.kind == ForKind::Vectorized && e <= loop::kMaxVectorLanes))
      body = saturating_mul(body, e);
  }
  TESSERA_CHECK(body <= kMaxUnrolledBody, "schedule: ", step.to_text(), ": the unrolled and vectorized loops of ", s,
                " would copy its body ", body, " times (at most ", kMaxUnrolledBody, ")");
}

const Leaf* LoopNest::find(const std::string& name) const {
  for (const Leaf& l : leaves_)
    if (l.name == name) return &l;
  return nullptr;
}

Leaf& LoopNest::leaf(const std::string& name) {
  for (Leaf& l : leaves_)
    if (l.name == name) return l;
  std::string have;
  for (const Leaf& l : leaves_) have += (have.empty() ? "" : ", ") + l.name;
  TESSERA_FAIL("schedule: stage ", stage_.name, " has no loop '", name, "' (loops: ", have, ")");
}

void LoopNest::substitute_all(const Var& v, const Expr& value) {
  for (Expr& e : spatial_) e = loop::simplify(loop::substitute(e, v, value));
  for (Expr& e : reduce_) e = loop::simplify(loop::substitute(e, v, value));
  for (Expr& e : guards_) e = loop::simplify(loop::substitute(e, v, value));
}

void LoopNest::apply(const Directive& step) {
  const std::string& s = stage_.name;
  switch (step.kind) {
    case DirectiveKind::Split:
    case DirectiveKind::SplitShift: {
      int64_t f = step.ints.at(0);
      TESSERA_CHECK(f >= 1, "schedule: split ", s, " ", step.names[0], " by ", f, ": the factor must be >= 1");
      Leaf old = leaf(step.names[0]);
      TESSERA_CHECK(loop::as_const_int(old.extent) || f <= kMaxSymbolicSplit, "schedule: split ", s, " ", old.name,
                    " by ", f, ": at most ", kMaxSymbolicSplit, " for a loop of extent ", loop::to_string(old.extent));
      auto pos = std::find_if(leaves_.begin(), leaves_.end(), [&](const Leaf& l) { return l.name == old.name; });
      Leaf outer{outer_name(old.name), Var(s + "." + outer_name(old.name)), {}, ForKind::Serial, old.reduce};
      Leaf inner{inner_name(old.name), Var(s + "." + inner_name(old.name)), loop::int_imm(f), ForKind::Serial,
                 old.reduce};
      TESSERA_CHECK(!find(outer.name) && !find(inner.name), "schedule: split ", s, " ", old.name,
                    ": loop already split");
      outer.extent = loop::simplify((old.extent + (f - 1)) / f);
      const int64_t* e = loop::as_const_int(old.extent);
      Expr value = outer.var * f + inner.var;
      if (step.kind == DirectiveKind::SplitShift && e && *e % f != 0 && *e > f) {
        value = loop::min(outer.var * f, loop::int_imm(*e - f)) + inner.var;  // the last iteration shifted back
        shifted_ = true;
      } else if (!(e && *e % f == 0))
        guards_.push_back(value < old.extent);
      *pos = outer;
      leaves_.insert(pos + 1, inner);
      substitute_all(old.var, value);
      check_bounds(step);
      return;
    }
    case DirectiveKind::Fuse: {
      Leaf a = leaf(step.names[0]), b = leaf(step.names[1]);
      auto ia = std::find_if(leaves_.begin(), leaves_.end(), [&](const Leaf& l) { return l.name == a.name; });
      TESSERA_CHECK(ia + 1 != leaves_.end() && (ia + 1)->name == b.name, "schedule: fuse ", s, " ", a.name, " ",
                    b.name, ": ", a.name, " must be directly outside ", b.name);
      TESSERA_CHECK(a.reduce == b.reduce, "schedule: fuse ", s, ": cannot fuse a reduction loop with a spatial one");
      Leaf f{fused_name(a.name, b.name), Var(s + "." + fused_name(a.name, b.name)),
             loop::simplify(a.extent * b.extent), ForKind::Serial, a.reduce};
      *ia = f;
      leaves_.erase(ia + 1);
      substitute_all(a.var, f.var / b.extent);
      substitute_all(b.var, f.var % b.extent);
      return;
    }
    case DirectiveKind::Reorder: {
      std::vector<size_t> positions;
      std::vector<Leaf> picked;
      for (const auto& n : step.names) {
        const Leaf& l = leaf(n);
        size_t p = static_cast<size_t>(&l - leaves_.data());
        TESSERA_CHECK(std::find(positions.begin(), positions.end(), p) == positions.end(), "schedule: reorder ", s,
                      ": loop ", n, " named twice");
        positions.push_back(p);
        picked.push_back(l);
      }
      std::sort(positions.begin(), positions.end());
      for (size_t i = 0; i < positions.size(); ++i) leaves_[positions[i]] = picked[i];
      return;
    }
    case DirectiveKind::Vectorize:
    case DirectiveKind::Unroll:
    case DirectiveKind::Parallel: {
      Leaf& l = leaf(step.names[0]);
      if (step.kind == DirectiveKind::Parallel) {
        TESSERA_CHECK(!l.reduce, "schedule: parallel ", s, " ", l.name,
                      ": a reduction loop cannot run in parallel (iterations update the same element)");
        l.kind = ForKind::Parallel;
      } else {
        TESSERA_CHECK(loop::as_const_int(l.extent), "schedule: ", directive_kind_name(step.kind), " ", s, " ", l.name,
                      ": the loop's extent must be a constant, it is ", loop::to_string(l.extent));
        l.kind = step.kind == DirectiveKind::Vectorize ? ForKind::Vectorized : ForKind::Unrolled;
        check_bounds(step);
      }
      return;
    }
    case DirectiveKind::Accumulate: {
      const Leaf& l = leaf(step.names[0]);
      TESSERA_CHECK(l.reduce, "schedule: accumulate ", s, " ", l.name, ": not a reduction loop");
      TESSERA_CHECK(te::is_top_reduce(stage_), "schedule: accumulate ", s, ": the stage is not a reduction");
      accumulate_ = l.name;
      return;
    }
    default:
      TESSERA_FAIL("schedule: ", directive_kind_name(step.kind), " is not a loop step");
  }
}

size_t LoopNest::position(const std::string& name) const {
  for (size_t i = 0; i < leaves_.size(); ++i)
    if (leaves_[i].name == name) return i;
  TESSERA_FAIL("schedule: stage ", stage_.name, " has no loop '", name, "' (renamed by a later split or fuse?)");
}

namespace {

// Wraps `body` in the given leaves (outermost first).
Stmt wrap(const std::vector<Leaf>& leaves, size_t from, size_t to, Stmt body) {
  for (size_t i = to; i-- > from;)
    body = loop::for_loop(leaves[i].var, loop::int_imm(0), leaves[i].extent, leaves[i].kind, body);
  return body;
}

Stmt guarded(const std::vector<Expr>& conds, Stmt body) {
  Expr all = all_of(conds);
  return all.defined() ? loop::if_then_else(all, body) : body;
}

// Copies of `leaves` with fresh variables (a second nest over the same
// loops); `fresh` maps the old variables to the new.
std::vector<Leaf> fresh_copies(const std::vector<Leaf>& leaves, loop::VarMap& fresh) {
  std::vector<Leaf> copy = leaves;
  for (Leaf& l : copy) {
    Var v(l.var.name());
    fresh[l.var.node()] = v;
    l.var = v;
  }
  return copy;
}

// Row-major index over loops of constant extents (innermost stride 1).
Expr flat_index(const std::vector<Leaf>& leaves) {
  Expr idx = loop::int_imm(0);
  int64_t stride = 1;
  for (size_t i = leaves.size(); i-- > 0;) {
    idx = leaves[i].var * stride + idx;
    stride *= *loop::as_const_int(leaves[i].extent);
  }
  return loop::simplify(idx);
}

// Each of `es` with the variables of `map` replaced.
std::vector<Expr> substituted(const std::vector<Expr>& es, const loop::VarMap& map) {
  std::vector<Expr> r;
  for (const Expr& e : es) r.push_back(loop::substitute(e, map));
  return r;
}

}  // namespace

Stmt LoopNest::build(const StoreFn& store, const LoadFn& load_self) const {
  if (!accumulate_.empty()) {
    size_t at = position(accumulate_);
    size_t from = accumulated_from(at);
    return wrap(leaves_, 0, from, accumulated(at, from, store, load_self));
  }
  loop::VarMap axis_map;
  for (size_t i = 0; i < stage_.axes.size(); ++i) axis_map[stage_.axes[i].node()] = spatial_[i];
  if (!te::is_top_reduce(stage_)) {
    Expr value = loop::substitute(stage_.body, axis_map);
    return wrap(leaves_, 0, leaves_.size(), guarded(guards_, store(spatial_, value)));
  }
  auto* red = stage_.body.as<loop::ReduceNode>();
  for (size_t i = 0; i < red->axes.size(); ++i) axis_map[red->axes[i].var.node()] = reduce_[i];
  Expr source = loop::substitute(red->source, axis_map);
  Expr init = loop::substitute(red->init, axis_map);
  Expr update = loop::reduce_combine(red->op, load_self(spatial_, Expr()), source);
  std::vector<Expr> conds = guards_;
  if (red->condition.defined()) conds.push_back(loop::substitute(red->condition, axis_map));
  // The init runs where the first reduction loop starts, over the spatial loops inside it.
  size_t first_reduce = leaves_.size();
  for (size_t i = 0; i < leaves_.size(); ++i)
    if (leaves_[i].reduce) {
      first_reduce = i;
      break;
    }
  std::vector<Leaf> init_leaves;
  for (size_t i = first_reduce; i < leaves_.size(); ++i)
    if (!leaves_[i].reduce) init_leaves.push_back(leaves_[i]);
  std::vector<Expr> init_guards;
  for (const Expr& g : guards_) {
    bool spatial_only = true;
    for (const Leaf& l : leaves_)
      if (l.reduce && loop::uses_var(g, l.var)) spatial_only = false;
    if (spatial_only) init_guards.push_back(g);
  }
  // The init nest gets its own copies of the spatial loops it needs.
  loop::VarMap fresh;
  std::vector<Leaf> init_copy = fresh_copies(init_leaves, fresh);
  Stmt init_nest = wrap(init_copy, 0, init_copy.size(),
                        guarded(substituted(init_guards, fresh),
                                store(substituted(spatial_, fresh), loop::substitute(init, fresh))));
  Stmt update_nest = wrap(leaves_, first_reduce, leaves_.size(), guarded(conds, store(spatial_, update)));
  return wrap(leaves_, 0, first_reduce, loop::block({init_nest, update_nest}));
}

size_t LoopNest::accumulated_from(size_t at) const {
  // Spatial loops of one iteration (an axis the tile covers whole) and no
  // guard may sit among the reduce loops: their one element's total still
  // starts once.
  auto single = [&](const Leaf& l) {
    const int64_t* e = loop::as_const_int(l.extent);
    if (l.reduce || !e || *e != 1) return false;
    for (const Expr& g : guards_)
      if (loop::uses_var(g, l.var)) return false;
    return true;
  };
  size_t from = at;
  while (from > 0 && (leaves_[from - 1].reduce || single(leaves_[from - 1]))) --from;
  while (from < at && !leaves_[from].reduce) ++from;
  for (size_t i = 0; i < from; ++i)
    if (leaves_[i].reduce) return at;  // a spatial loop between reduce loops outside: no total to start early
  if (from == at || shifted_) return at;
  // The total starts from the init; each block joins it with the combiner.
  // With an identity init, the first block's join is combine(identity, sum)
  // where the old nest stored the sum: the same number for a sum (a block
  // summed from +0 is never -0, and 0 + x is x), not for max (maxnum(-inf,
  // NaN) is -inf), so other combiners keep the select.
  auto* red = stage_.body.as<loop::ReduceNode>();
  const bool identity_init = loop::equal(red->init, loop::reduce_identity(red->op, red->init.type()));
  if (identity_init && red->op != loop::ReduceOp::Sum) return at;
  return from;
}

Stmt LoopNest::accumulated(size_t at, size_t from, const StoreFn& store, const LoadFn& load_self) const {
  auto* red = stage_.body.as<loop::ReduceNode>();
  const std::string where = "schedule: accumulate " + stage_.name + " " + accumulate_;
  // Reduce loops outside: each block is summed from the combiner's identity
  // and joins the element's partial result at the write-back, or the init on
  // their first iteration.
  std::vector<Expr> at_start;
  for (size_t i = 0; i < at; ++i)
    if (leaves_[i].reduce) at_start.push_back(loop::eq(leaves_[i].var, 0));
  Expr first = all_of(at_start);
  TESSERA_CHECK(!(shifted_ && first.defined()), where,
                ": a shifted split recomputes elements, which reduction loops outside the accumulate loop would then "
                "update twice; use split");
  std::vector<Leaf> inner;  // the spatial loops inside: the accumulator's dims
  for (size_t i = at + 1; i < leaves_.size(); ++i) {
    if (leaves_[i].reduce) continue;
    TESSERA_CHECK(loop::as_const_int(leaves_[i].extent), where, ": loop ", leaves_[i].name,
                  " inside it has extent ", loop::to_string(leaves_[i].extent), "; the accumulator needs constant ones");
    inner.push_back(leaves_[i]);
  }
  auto uses = [&](const Expr& e, bool reduce) {
    for (size_t i = at; i < leaves_.size(); ++i)
      if (leaves_[i].reduce == reduce && loop::uses_var(e, leaves_[i].var)) return true;
    return false;
  };
  // Guards on the loops outside skip the whole block; guards on the
  // reduction inside skip updates; guards on the accumulator's elements skip
  // their read and write-back, while their updates run on clamped indices
  // (in bounds, results unused) — except guards on vector lanes, which mask
  // the updates too: a clamped lane index would turn the vector's contiguous
  // loads into gathers.
  auto on_lanes = [&](const Expr& g) {
    for (const Leaf& l : inner)
      if (l.kind == loop::ForKind::Vectorized && loop::uses_var(g, l.var)) return true;
    return false;
  };
  std::vector<Expr> outer_g, update_g, element_g, clamp_g;
  for (const Expr& g : guards_) {
    (uses(g, true) ? update_g : uses(g, false) ? element_g : outer_g).push_back(g);
    if (!uses(g, true) && uses(g, false)) (on_lanes(g) ? update_g : clamp_g).push_back(g);
  }
  std::vector<Expr> clamped = spatial_;
  for (size_t d = 0; d < spatial_.size(); ++d) {
    bool guarded_dim = false;  // some clamped element guard tests an inner loop this axis uses
    for (const Expr& g : clamp_g)
      for (const Leaf& l : inner) guarded_dim |= loop::uses_var(g, l.var) && loop::uses_var(spatial_[d], l.var);
    if (guarded_dim) clamped[d] = loop::simplify(loop::min(spatial_[d], last_[d]));
  }
  loop::VarMap axis_map;
  for (size_t i = 0; i < stage_.axes.size(); ++i) axis_map[stage_.axes[i].node()] = clamped[i];
  for (size_t i = 0; i < red->axes.size(); ++i) axis_map[red->axes[i].var.node()] = reduce_[i];
  if (red->condition.defined()) update_g.push_back(loop::substitute(red->condition, axis_map));
  int64_t size = 1;
  for (const Leaf& l : inner) size *= *loop::as_const_int(l.extent);
  loop::Buffer acc(stage_.name + ".acc", stage_.dtypes[0], {size});
  Expr idx = flat_index(inner);
  Stmt update = loop::store(
      acc, loop::reduce_combine(red->op, loop::load(acc, idx), loop::substitute(red->source, axis_map)), idx);
  update = wrap(leaves_, at, leaves_.size(), guarded(update_g, update));
  // Read-in and write-back over their own copies of the accumulator's loops.
  loop::VarMap in_map, out_map;
  std::vector<Leaf> in_loops = fresh_copies(inner, in_map), out_loops = fresh_copies(inner, out_map);
  std::vector<Expr> out_idx = substituted(spatial_, out_map);
  Expr result = loop::load(acc, flat_index(out_loops));
  Expr in_at = flat_index(in_loops);
  Stmt read_in = loop::store(acc, loop::substitute(loop::substitute(red->init, axis_map), in_map), in_at);
  if (from < at) {
    // Only reduce loops (and single-iteration spatial ones) outside, from
    // `from` to the block: the elements
    // start from the init once, before them; each block is summed from the
    // identity (as in the nest below) and joins them at its write-back with
    // no select on the first block (whose masked loads of the element and
    // of the init ran in every block) and no prefetch (the elements were
    // just written). The numbers are the select's: combine(init, block 1),
    // then combine(total, block k). The stack buffers start zero-filled;
    // stored over at once, the compiler drops that clearing too.
    // The total is kept in memory across the blocks (loop::keep_in_memory):
    // in registers beside the block's accumulators it would not fit, and
    // the compiler then spilled accumulators inside the block's loops.
    const Expr identity = loop::reduce_identity(red->op, red->init.type());
    std::vector<Expr> out_domain = substituted(element_g, out_map);
    Expr total = load_self(out_idx, all_of(out_domain));
    result = loop::reduce_combine(red->op, total, result);
    Stmt write_back = wrap(out_loops, 0, out_loops.size(), guarded(out_domain, store(out_idx, result)));
    std::vector<Stmt> block_body{wrap(in_loops, 0, in_loops.size(), loop::store(acc, identity, in_at)), update,
                                 write_back};
    if (const auto* l = total.as<loop::LoadNode>()) block_body.push_back(loop::keep_in_memory(l->buffer));
    Stmt block = loop::allocate(acc, loop::int_imm(size), loop::block(std::move(block_body)));
    // Guards on the reduce loops outside skip a block; the others skip the
    // total as well (none use the single-iteration loops among them).
    std::vector<Expr> block_g, total_g;
    for (const Expr& g : outer_g) {
      bool on_reduce = false;
      for (size_t i = from; i < at; ++i) on_reduce |= loop::uses_var(g, leaves_[i].var);
      (on_reduce ? block_g : total_g).push_back(g);
    }
    loop::VarMap start_map;
    std::vector<Leaf> start_loops;
    for (size_t i = from; i < at; ++i)
      if (!leaves_[i].reduce) start_loops.push_back(leaves_[i]);  // the single-iteration ones
    start_loops.insert(start_loops.end(), inner.begin(), inner.end());
    start_loops = fresh_copies(start_loops, start_map);
    Stmt start = wrap(start_loops, 0, start_loops.size(),
                      guarded(substituted(element_g, start_map),
                              store(substituted(spatial_, start_map),
                                    loop::substitute(loop::substitute(red->init, axis_map), start_map))));
    return guarded(total_g, loop::block({start, wrap(leaves_, from, at, guarded(block_g, block))}));
  }
  if (first.defined()) {
    // The block's sum starts from the identity and joins the partial result
    // (or the init, on the first block) at the write-back: the element is
    // read after the block, not before, and prefetched at its start (the
    // loads do not stall the block; the stores find their lines), and each
    // block's terms round off among themselves rather than against the
    // running total (a chain of thousands of terms rounds off far more).
    const Expr identity = loop::reduce_identity(red->op, red->init.type());
    read_in = loop::block({loop::store(acc, identity, in_at),
                           loop::prefetch(load_self(substituted(clamped, in_map), Expr()))});
    if (loop::equal(red->init, identity)) {
      Expr partial = load_self(out_idx, loop::logical_not(first));
      result = loop::select(first, result, loop::reduce_combine(red->op, partial, result));
    } else {
      std::vector<Expr> in_domain = substituted(element_g, out_map);  // read where the element is in the domain
      in_domain.insert(in_domain.begin(), loop::logical_not(first));
      Expr init_out = loop::substitute(loop::substitute(red->init, axis_map), out_map);
      result =
          loop::reduce_combine(red->op, loop::select(first, init_out, load_self(out_idx, all_of(in_domain))), result);
    }
  }
  read_in = wrap(in_loops, 0, in_loops.size(), read_in);
  Stmt write_back =
      wrap(out_loops, 0, out_loops.size(), guarded(substituted(element_g, out_map), store(out_idx, result)));
  return guarded(outer_g, loop::allocate(acc, loop::int_imm(size), loop::block({read_in, update, write_back})));
}

// --- reductions inside formulas ----------------------------------------------------

namespace {

struct Hoisted {
  loop::Buffer acc;
  const loop::ReduceNode* reduce;
  std::vector<Expr> conds;  // select conditions on the path to the reduction
};

// Replaces the outermost Reduce nodes of an expression by reads of accumulators.
class ReduceExtractor : public loop::IRMutator {
 public:
  std::vector<Hoisted> hoisted;
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const loop::SelectNode* op, const Expr& e) override {
    Expr c = mutate(op->cond);
    Expr cond = te::unguard(op->cond);  // the reduction runs only where its branch is taken
    conds_.push_back(cond);
    Expr t = mutate(op->true_value);
    conds_.back() = loop::logical_not(cond);
    Expr f = mutate(op->false_value);
    conds_.pop_back();
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return loop::select(c, t, f);
  }
  Expr visit(const loop::ReduceNode* op, const Expr& e) override {
    loop::Buffer acc("acc" + std::to_string(counter_++), op->type.dtype, {1});
    hoisted.push_back({acc, op, conds_});
    return loop::load(acc, loop::int_imm(0));
  }

 private:
  std::vector<Expr> conds_;
  int counter_ = 0;
};

class InnerReductionLowerer : public loop::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const loop::StoreNode* op, const Stmt& s) override {
    if (!te::has_reduce(op->value)) return s;
    ReduceExtractor ex;
    Expr value = ex.mutate(op->value);
    Stmt result = loop::store(op->buffer, value, op->index, op->predicate);
    for (auto it = ex.hoisted.rbegin(); it != ex.hoisted.rend(); ++it) {
      const loop::ReduceNode* r = it->reduce;
      Expr zero = loop::int_imm(0);
      loop::VarMap fresh;
      std::vector<Var> vars;
      for (const auto& a : r->axes) {
        vars.emplace_back(a.var.name());
        fresh[a.var.node()] = vars.back();
      }
      Expr source = loop::substitute(r->source, fresh);
      Stmt update = loop::store(it->acc, loop::reduce_combine(r->op, loop::load(it->acc, zero), source), zero);
      if (r->condition.defined()) update = loop::if_then_else(loop::substitute(r->condition, fresh), update);
      for (size_t i = r->axes.size(); i-- > 0;)
        update = loop::for_loop(vars[i], r->axes[i].min, r->axes[i].extent, loop::ForKind::Serial, update);
      update = mutate(update);  // reductions inside the source
      Stmt compute = loop::block({loop::store(it->acc, r->init, zero), update});
      compute = guarded(it->conds, compute);
      result = loop::allocate(it->acc, loop::int_imm(1), loop::block({compute, result}));
    }
    return result;
  }
};

}  // namespace

Stmt lower_inner_reductions(const Stmt& s) {
  InnerReductionLowerer l;
  return l.mutate(s);
}

}  // namespace tessera::schedule
