// Simplifier statement rules: loop ranges as variable bounds, facts learned
// from if-conditions, extent-1 loops, constant branches and no-op removal.
#include "loop/scalar_ops.h"
#include "loop/simplifier.h"

namespace tessera::loop {

Simplifier::ScopedBound::ScopedBound(VarBounds& m, const VarNode* v, Interval i) : map_(m), var_(v) {
  if (auto it = m.find(v); it != m.end()) saved_ = it->second;
  m[v] = i;
}

Simplifier::ScopedBound::~ScopedBound() {
  if (saved_) map_[var_] = *saved_;
  else map_.erase(var_);
}

namespace {

// Matches `v` or `v + c` with v an i64 variable; returns v and sets offset.
const VarNode* var_plus_const(const Expr& e, int64_t& offset) {
  offset = 0;
  if (auto* v = e.as<VarNode>()) return v->type == index_type() ? v : nullptr;
  auto* b = e.as<BinaryNode>();
  if (!b || b->kind != ExprKind::Add || b->a.type() != index_type()) return nullptr;
  const int64_t* c = as_const_int(b->b);
  auto* v = b->a.as<VarNode>();
  if (!c || !v) return nullptr;
  offset = *c;
  return v;
}

ExprKind mirror(ExprKind k) {  // c < v  <=>  v > c
  switch (k) {
    case ExprKind::LT: return ExprKind::GT;
    case ExprKind::LE: return ExprKind::GE;
    case ExprKind::GT: return ExprKind::LT;
    case ExprKind::GE: return ExprKind::LE;
    default: return k;
  }
}

ExprKind negated(ExprKind k) {
  switch (k) {
    case ExprKind::EQ: return ExprKind::NE;
    case ExprKind::NE: return ExprKind::EQ;
    case ExprKind::LT: return ExprKind::GE;
    case ExprKind::LE: return ExprKind::GT;
    case ExprKind::GT: return ExprKind::LE;
    default: return ExprKind::LT;
  }
}

}  // namespace

void Simplifier::learn(const Expr& cond, bool holds, VarBounds& into) {
  if (auto* n = cond.as<NotNode>()) return learn(n->a, !holds, into);
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if ((b->kind == ExprKind::And && holds) || (b->kind == ExprKind::Or && !holds)) {
    learn(b->a, holds, into);
    learn(b->b, holds, into);
    return;
  }
  if (!is_comparison(b->kind) || b->a.type() != index_type()) return;
  ExprKind k = holds ? b->kind : negated(b->kind);
  Expr lhs = b->a, rhs = b->b;
  if (as_const_int(lhs)) {
    std::swap(lhs, rhs);
    k = mirror(k);
  }
  const int64_t* c = as_const_int(rhs);
  int64_t off = 0;
  const VarNode* v = var_plus_const(lhs, off);
  if (!c || !v) return;
  // v + off  k  c   =>   v  k  c - off
  int64_t bound;
  if (__builtin_sub_overflow(*c, off, &bound)) return;
  auto it = into.find(v);
  Interval r = it != into.end() ? it->second : Interval::everything();
  switch (k) {
    case ExprKind::EQ: r.min = std::max(r.min, bound); r.max = std::min(r.max, bound); break;
    case ExprKind::LT: if (bound != Interval::kNegInf) r.max = std::min(r.max, bound - 1); break;
    case ExprKind::LE: r.max = std::min(r.max, bound); break;
    case ExprKind::GT: if (bound != Interval::kPosInf) r.min = std::max(r.min, bound + 1); break;
    case ExprKind::GE: r.min = std::max(r.min, bound); break;
    default: return;
  }
  into[v] = r;
}

Stmt Simplifier::visit(const ForNode* op, const Stmt& s) {
  Expr min = mutate(op->min), extent = mutate(op->extent);
  const int64_t* n = as_const_int(extent);
  if (n && *n <= 0) return no_op();
  if (n && *n == 1) return mutate(substitute(op->body, op->var, min));
  Interval lo = bounds(min), ext = bounds(extent);
  Interval range{lo.min, Interval::kPosInf};
  int64_t last;
  if (lo.has_max() && ext.has_max() && !__builtin_add_overflow(lo.max, ext.max - 1, &last)) range.max = last;
  Stmt body;
  {
    ScopedBound scope(bounds_, op->var.node(), range);
    body = mutate(op->body);
  }
  if (is_no_op(body)) return no_op();
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return s;
  return for_loop(op->var, min, extent, op->for_kind, body);
}

Stmt Simplifier::visit(const StoreNode* op, const Stmt& s) {
  Expr value = mutate(op->value), index = mutate(op->index), pred = mutate(op->predicate);
  if (pred.defined()) {
    if (const int64_t* p = as_const_int(pred)) {
      if (*p == 0) return no_op();
      pred = Expr();
    }
  }
  if (auto* l = value.as<LoadNode>(); l && !pred.defined() && !l->predicate.defined() &&
                                      l->buffer.same_as(op->buffer) && equal(l->index, index))
    return no_op();  // A[i] = A[i]
  if (value.same_as(op->value) && index.same_as(op->index) && pred.same_as(op->predicate)) return s;
  return store(op->buffer, value, index, pred);
}

Stmt Simplifier::visit(const LetStmtNode* op, const Stmt& s) {
  Expr value = mutate(op->value);
  if (is_const(value) || value.as<VarNode>()) return mutate(substitute(op->body, op->var, value));
  Stmt body;
  {
    ScopedBound scope(bounds_, op->var.node(), bounds(value));
    body = mutate(op->body);
  }
  if (!uses_var(body, op->var)) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return s;
  return let_stmt(op->var, value, body);
}

Stmt Simplifier::visit(const IfThenElseNode* op, const Stmt& s) {
  Expr cond = mutate(op->cond);
  if (const int64_t* c = as_const_int(cond)) return *c ? mutate(op->then_case) : (op->else_case.defined() ? mutate(op->else_case) : no_op());
  auto branch = [&](const Stmt& st, bool holds) {
    VarBounds saved = bounds_;
    learn(cond, holds, bounds_);
    Stmt r = mutate(st);
    bounds_ = std::move(saved);
    return r;
  };
  Stmt then_case = branch(op->then_case, true);
  Stmt else_case = op->else_case.defined() ? branch(op->else_case, false) : Stmt();
  if (is_no_op(else_case)) else_case = Stmt();
  if (is_no_op(then_case)) {
    if (!else_case.defined()) return no_op();
    return if_then_else(negate(cond), else_case);
  }
  if (cond.same_as(op->cond) && then_case.same_as(op->then_case) && else_case.same_as(op->else_case)) return s;
  return if_then_else(cond, then_case, else_case);
}

Stmt Simplifier::visit(const AllocateNode* op, const Stmt& s) {
  Expr extent = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (is_no_op(body)) return no_op();
  if (!uses_buffer(body, op->buffer)) return body;
  if (extent.same_as(op->extent) && body.same_as(op->body)) return s;
  return allocate(op->buffer, extent, body);
}

Stmt Simplifier::visit(const BlockNode* op, const Stmt& s) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& st : op->stmts) {
    Stmt r = mutate(st);
    changed |= !r.same_as(st);
    if (is_no_op(r)) {
      changed = true;
    } else if (auto* inner = r.as<BlockNode>()) {  // flatten
      out.insert(out.end(), inner->stmts.begin(), inner->stmts.end());
      changed = true;
    } else {
      out.push_back(r);
    }
  }
  if (out.size() == 1) return out[0];
  return changed ? block(std::move(out)) : s;
}

Stmt Simplifier::visit(const EvaluateNode* op, const Stmt& s) {
  Expr v = mutate(op->value);
  if (is_const(v)) return no_op();
  return v.same_as(op->value) ? s : eval_stmt(v);
}

}  // namespace tessera::loop
