// Guard chains resolved per interval around their loops (see unswitch_guards.h).
#include "schedule/unswitch_guards.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "loop/bounds.h"
#include "loop/simplify.h"
#include "loop/visitor.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

using loop::Expr;
using loop::ExprKind;
using loop::Stmt;

namespace {

// True when `e` is integer index arithmetic on variables and constants only.
bool index_arithmetic(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::Var: return e.type().is_scalar();
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max: {
      auto* b = e.as<loop::BinaryNode>();
      return index_arithmetic(b->a) && index_arithmetic(b->b);
    }
    default: return false;
  }
}

}  // namespace

std::optional<GuardCut> guard_cut(const Expr& guard) {
  if (!te::is_guard(guard)) return std::nullopt;
  Expr c = te::unguard(guard);
  auto* b = c.as<loop::BinaryNode>();
  if (!b || !c.type().is_scalar()) return std::nullopt;
  ExprKind k = b->kind;
  Expr e = b->a;
  const int64_t* v = loop::as_const_int(b->b);
  if (!v) {  // constant first: k < e is e > k
    v = loop::as_const_int(b->a);
    e = b->b;
    switch (k) {
      case ExprKind::LT: k = ExprKind::GT; break;
      case ExprKind::LE: k = ExprKind::GE; break;
      case ExprKind::GT: k = ExprKind::LT; break;
      case ExprKind::GE: k = ExprKind::LE; break;
      default: break;
    }
  }
  if (!v || !index_arithmetic(e) || loop::as_const_int(e)) return std::nullopt;
  switch (k) {
    case ExprKind::LT: return GuardCut{e, *v, true};
    case ExprKind::LE: return GuardCut{e, *v + 1, true};
    case ExprKind::GE: return GuardCut{e, *v, false};
    case ExprKind::GT: return GuardCut{e, *v + 1, false};
    default: return std::nullopt;
  }
}

namespace {

// The variables a statement binds (loops, lets, reductions inside
// formulas) anywhere inside it.
std::vector<loop::Var> bound_inside(const Stmt& s) {
  struct Finder : loop::IRVisitor {
    std::vector<loop::Var> vars;
    using IRVisitor::visit;
    void visit(const loop::ForNode* op) override {
      vars.push_back(op->var);
      IRVisitor::visit(op);
    }
    void visit(const loop::LetStmtNode* op) override {
      vars.push_back(op->var);
      IRVisitor::visit(op);
    }
    void visit(const loop::LetNode* op) override {
      vars.push_back(op->var);
      IRVisitor::visit(op);
    }
    void visit(const loop::ReduceNode* op) override {
      for (const loop::ReduceAxis& a : op->axes) vars.push_back(a.var);
      IRVisitor::visit(op);
    }
  } f;
  f.visit(s);
  return f.vars;
}

// The cuts of the guarded selects in `s` whose expression uses none of `inner`.
std::vector<GuardCut> invariant_cuts(const Stmt& s, const std::vector<loop::Var>& inner) {
  struct Finder : loop::IRVisitor {
    const std::vector<loop::Var>* inner;
    std::vector<GuardCut> cuts;
    using IRVisitor::visit;
    void visit(const loop::SelectNode* op) override {
      if (std::optional<GuardCut> c = guard_cut(op->cond)) {
        bool invariant = true;
        for (const loop::Var& v : *inner) invariant = invariant && !loop::uses_var(c->e, v);
        if (invariant) cuts.push_back(*c);
      }
      IRVisitor::visit(op);
    }
  } f;
  f.inner = &inner;
  f.visit(s);
  return f.cuts;
}

// `s` with every guarded select on `e` decided for e in a range that ends
// at `hi` (none: unbounded) and starts at the threshold before it, so each
// cut falls at or outside its ends.
class Decide : public loop::IRMutator {
 public:
  Decide(Expr e, std::optional<int64_t> hi) : e_(std::move(e)), hi_(hi) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const loop::SelectNode* op, const Expr& x) override {
    std::optional<GuardCut> c = guard_cut(op->cond);
    if (c && loop::equal(c->e, e_)) {
      // e < threshold holds on the whole range when it ends at or before the threshold.
      bool lt = hi_ && *hi_ <= c->threshold;
      return mutate(lt == c->below ? op->true_value : op->false_value);
    }
    return IRMutator::visit(op, x);
  }

 private:
  Expr e_;
  std::optional<int64_t> hi_;
};

// Guard cuts simplified with the bounds of the loops around them: a
// blocked channel read back through a reorder, (c * 16 + lane) / 16 < 2,
// tests c alone and does not vary in the lanes' loop; a cut the bounds
// decide (a test of padding lanes a dim has none of) is its branch.
class SimplifyCuts : public loop::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const loop::ForNode* op, const Stmt& s) override {
    loop::Interval lo = loop::bounds_of(op->min, bounds_);
    loop::Interval hi = loop::bounds_of(loop::simplify(op->min + op->extent - 1), bounds_);
    bounds_[op->var.node()] = {lo.min, hi.max};
    Stmt r = IRMutator::visit(op, s);
    bounds_.erase(op->var.node());
    return r;
  }
  Expr visit(const loop::SelectNode* op, const Expr& x) override {
    std::optional<GuardCut> c = guard_cut(op->cond);
    if (!c) return IRMutator::visit(op, x);
    Expr e = loop::simplify(c->e, bounds_);
    loop::Interval range = loop::bounds_of(e, bounds_);
    if (range.has_max() && range.max < c->threshold)  // below the threshold everywhere
      return mutate(c->below ? op->true_value : op->false_value);
    if (range.has_min() && range.min >= c->threshold) return mutate(c->below ? op->false_value : op->true_value);
    if (loop::equal(e, c->e)) return IRMutator::visit(op, x);
    Expr cond = c->below ? e < c->threshold : e >= c->threshold;
    return te::if_then_else(cond, mutate(op->true_value), mutate(op->false_value));
  }

 private:
  loop::VarBounds bounds_;
};

class Unswitcher : public loop::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const loop::ForNode* op, const Stmt& s) override {
    std::vector<loop::Var> inner = bound_inside(s);
    std::vector<GuardCut> cuts = invariant_cuts(op->body, inner);
    if (cuts.empty()) return IRMutator::visit(op, s);
    // The expression with the most distinct thresholds.
    const Expr* best = nullptr;
    std::vector<int64_t> thresholds;
    for (const GuardCut& c : cuts) {
      std::vector<int64_t> t;
      for (const GuardCut& d : cuts)
        if (loop::equal(c.e, d.e)) t.push_back(d.threshold);
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      if (t.size() > thresholds.size()) {
        best = &c.e;
        thresholds = std::move(t);
      }
    }
    if (static_cast<int>(thresholds.size()) + 1 > kMaxUnswitchCopies) return IRMutator::visit(op, s);
    Expr e = *best;
    // Copy i covers [thresholds[i - 1], thresholds[i]) (unbounded at the ends);
    // each copy's loop is unswitched no further, its inner loops are.
    auto copy = [&](size_t i) {
      std::optional<int64_t> hi;
      if (i < thresholds.size()) hi = thresholds[i];
      Decide d(e, hi);
      Stmt body = mutate(d.mutate(op->body));
      return loop::for_loop(op->var, op->min, op->extent, op->for_kind, body);
    };
    // A balanced tree of tests over copies [first, last).
    std::function<Stmt(size_t, size_t)> tree = [&](size_t first, size_t last) -> Stmt {
      if (last - first == 1) return copy(first);
      size_t mid = first + (last - first) / 2;  // copies before mid have e < thresholds[mid - 1]
      return loop::if_then_else(e < thresholds[mid - 1], tree(first, mid), tree(mid, last));
    };
    return tree(0, thresholds.size() + 1);
  }
};

}  // namespace

Stmt unswitch_guards(const Stmt& s) {
  SimplifyCuts c;
  Unswitcher u;
  return u.mutate(c.mutate(s));
}

}  // namespace tessera::schedule
