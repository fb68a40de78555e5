// Symbolic interval analysis for compute_at bound inference.
#include "schedule/region.h"

#include "loop/simplify.h"
#include "loop/visitor.h"

namespace tessera::schedule {

using loop::Expr;
using loop::ExprKind;

namespace {

Expr smin(const Expr& a, const Expr& b) { return loop::simplify(loop::min(a, b)); }
Expr smax(const Expr& a, const Expr& b) { return loop::simplify(loop::max(a, b)); }

}  // namespace

std::optional<SymRange> symbolic_range(const Expr& e, const SymRanges& vars) {
  if (!e.type().is_int() || !e.type().is_scalar()) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::IntImm: return SymRange{e, e};
    case ExprKind::Var: {
      auto it = vars.find(e.as<loop::VarNode>());
      if (it == vars.end()) return SymRange{e, e};
      return it->second;
    }
    case ExprKind::Cast: {
      auto* op = e.as<loop::CastNode>();
      if (!op->value.type().is_int()) return std::nullopt;
      auto r = symbolic_range(op->value, vars);
      if (!r) return std::nullopt;
      return SymRange{loop::simplify(loop::cast(e.type(), r->lo)), loop::simplify(loop::cast(e.type(), r->hi))};
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max: {
      auto* op = e.as<loop::BinaryNode>();
      auto a = symbolic_range(op->a, vars);
      auto b = symbolic_range(op->b, vars);
      if (!a || !b) return std::nullopt;
      switch (e.kind()) {
        case ExprKind::Add: return SymRange{loop::simplify(a->lo + b->lo), loop::simplify(a->hi + b->hi)};
        case ExprKind::Sub: return SymRange{loop::simplify(a->lo - b->hi), loop::simplify(a->hi - b->lo)};
        case ExprKind::Min: return SymRange{smin(a->lo, b->lo), smin(a->hi, b->hi)};
        case ExprKind::Max: return SymRange{smax(a->lo, b->lo), smax(a->hi, b->hi)};
        default: break;
      }
      // Mul, Div, Mod need a constant right operand.
      const int64_t* c = loop::as_const_int(op->b);
      const int64_t* ca = loop::as_const_int(op->a);
      if (e.kind() == ExprKind::Mul && !c && ca) return symbolic_range(op->b * op->a, vars);
      if (!c) return std::nullopt;
      if (e.kind() == ExprKind::Mul) {
        if (*c >= 0) return SymRange{loop::simplify(a->lo * *c), loop::simplify(a->hi * *c)};
        return SymRange{loop::simplify(a->hi * *c), loop::simplify(a->lo * *c)};
      }
      if (*c <= 0) return std::nullopt;
      if (e.kind() == ExprKind::Div) return SymRange{loop::simplify(a->lo / *c), loop::simplify(a->hi / *c)};
      // Mod: exact when the operand is fixed, else [0, c - 1].
      if (loop::equal(a->lo, a->hi)) return SymRange{e, e};
      return SymRange{loop::make_int_const(e.type(), 0), loop::make_int_const(e.type(), *c - 1)};
    }
    case ExprKind::Select: {
      auto* op = e.as<loop::SelectNode>();
      auto t = symbolic_range(op->true_value, vars), f = symbolic_range(op->false_value, vars);
      if (!t || !f) return std::nullopt;
      return SymRange{smin(t->lo, f->lo), smax(t->hi, f->hi)};
    }
    default: return std::nullopt;
  }
}

namespace {

class RegionCollector : public loop::IRVisitor {
 public:
  RegionCollector(const te::Stage* p, int vi) : producer_(p), value_index_(vi) {}
  bool failed = false;
  bool found = false;
  std::vector<SymRange> region;
  using IRVisitor::visit;

 protected:
  void visit(const loop::ForNode* op) override {
    auto lo = symbolic_range(op->min, vars_);
    auto hi = symbolic_range(loop::simplify(op->min + op->extent - 1), vars_);
    if (!lo || !hi) {
      failed = true;
      return;
    }
    vars_[op->var.node()] = {lo->lo, hi->hi};
    visit(op->body);
    vars_.erase(op->var.node());
  }
  void visit(const loop::LetStmtNode* op) override {
    auto r = symbolic_range(op->value, vars_);
    if (r) vars_[op->var.node()] = *r;
    else if (op->value.type().is_int()) failed = true;
    visit(op->body);
    vars_.erase(op->var.node());
  }
  void visit(const loop::ProducerLoadNode* op) override {
    IRVisitor::visit(op);
    if (op->producer.get() != producer_ || op->value_index != value_index_) return;
    std::vector<SymRange> r;
    for (const Expr& i : op->indices) {
      auto x = symbolic_range(i, vars_);
      if (!x) {
        failed = true;
        return;
      }
      r.push_back(*x);
    }
    if (!found) {
      region = r;
      found = true;
      return;
    }
    for (size_t d = 0; d < r.size(); ++d) {
      region[d].lo = smin(region[d].lo, r[d].lo);
      region[d].hi = smax(region[d].hi, r[d].hi);
    }
  }

 private:
  const te::Stage* producer_;
  int value_index_;
  SymRanges vars_;
};

}  // namespace

std::optional<std::vector<SymRange>> region_read(const loop::Stmt& s, const te::Stage* producer, int value_index) {
  RegionCollector c(producer, value_index);
  c.visit(s);
  if (c.failed) return std::nullopt;
  return c.region;
}

}  // namespace tessera::schedule
