// IRVisitor and IRMutator defaults, substitution and use queries.
#include "loop/visitor.h"

#include "support/error.h"

namespace tessera::loop {

// --- IRVisitor -------------------------------------------------------------------

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::IntImm: return visit(e.as<IntImmNode>());
    case ExprKind::FloatImm: return visit(e.as<FloatImmNode>());
    case ExprKind::Var: return visit(e.as<VarNode>());
    case ExprKind::Cast: return visit(e.as<CastNode>());
    case ExprKind::Not: return visit(e.as<NotNode>());
    case ExprKind::Select: return visit(e.as<SelectNode>());
    case ExprKind::Load: return visit(e.as<LoadNode>());
    case ExprKind::Ramp: return visit(e.as<RampNode>());
    case ExprKind::Broadcast: return visit(e.as<BroadcastNode>());
    case ExprKind::Call: return visit(e.as<CallNode>());
    case ExprKind::Let: return visit(e.as<LetNode>());
    case ExprKind::ProducerLoad: return visit(e.as<ProducerLoadNode>());
    case ExprKind::Reduce: return visit(e.as<ReduceNode>());
    default: return visit(e.as<BinaryNode>());
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::For: return visit(s.as<ForNode>());
    case StmtKind::Store: return visit(s.as<StoreNode>());
    case StmtKind::LetStmt: return visit(s.as<LetStmtNode>());
    case StmtKind::IfThenElse: return visit(s.as<IfThenElseNode>());
    case StmtKind::Allocate: return visit(s.as<AllocateNode>());
    case StmtKind::Block: return visit(s.as<BlockNode>());
    case StmtKind::Evaluate: return visit(s.as<EvaluateNode>());
  }
}

void IRVisitor::visit(const CastNode* op) { visit(op->value); }
void IRVisitor::visit(const BinaryNode* op) { visit(op->a); visit(op->b); }
void IRVisitor::visit(const NotNode* op) { visit(op->a); }
void IRVisitor::visit(const SelectNode* op) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit(const LoadNode* op) { visit(op->index); visit(op->predicate); }
void IRVisitor::visit(const RampNode* op) { visit(op->base); visit(op->stride); }
void IRVisitor::visit(const BroadcastNode* op) { visit(op->value); }
void IRVisitor::visit(const CallNode* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit(const LetNode* op) { visit(op->value); visit(op->body); }
void IRVisitor::visit(const ProducerLoadNode* op) {
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit(const ReduceNode* op) {
  for (const ReduceAxis& a : op->axes) { visit(a.min); visit(a.extent); }
  visit(op->source);
  visit(op->condition);
  visit(op->init);
}
void IRVisitor::visit(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit(const StoreNode* op) {
  visit(op->value);
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit(const LetStmtNode* op) { visit(op->value); visit(op->body); }
void IRVisitor::visit(const IfThenElseNode* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit(const AllocateNode* op) { visit(op->extent); visit(op->body); }
void IRVisitor::visit(const BlockNode* op) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit(const EvaluateNode* op) { visit(op->value); }

// --- IRMutator -------------------------------------------------------------------

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
    case ExprKind::IntImm: return visit(e.as<IntImmNode>(), e);
    case ExprKind::FloatImm: return visit(e.as<FloatImmNode>(), e);
    case ExprKind::Var: return visit(e.as<VarNode>(), e);
    case ExprKind::Cast: return visit(e.as<CastNode>(), e);
    case ExprKind::Not: return visit(e.as<NotNode>(), e);
    case ExprKind::Select: return visit(e.as<SelectNode>(), e);
    case ExprKind::Load: return visit(e.as<LoadNode>(), e);
    case ExprKind::Ramp: return visit(e.as<RampNode>(), e);
    case ExprKind::Broadcast: return visit(e.as<BroadcastNode>(), e);
    case ExprKind::Call: return visit(e.as<CallNode>(), e);
    case ExprKind::Let: return visit(e.as<LetNode>(), e);
    case ExprKind::ProducerLoad: return visit(e.as<ProducerLoadNode>(), e);
    case ExprKind::Reduce: return visit(e.as<ReduceNode>(), e);
    default: return visit(e.as<BinaryNode>(), e);
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::For: return visit(s.as<ForNode>(), s);
    case StmtKind::Store: return visit(s.as<StoreNode>(), s);
    case StmtKind::LetStmt: return visit(s.as<LetStmtNode>(), s);
    case StmtKind::IfThenElse: return visit(s.as<IfThenElseNode>(), s);
    case StmtKind::Allocate: return visit(s.as<AllocateNode>(), s);
    case StmtKind::Block: return visit(s.as<BlockNode>(), s);
    case StmtKind::Evaluate: return visit(s.as<EvaluateNode>(), s);
  }
  return s;
}

Expr IRMutator::visit(const CastNode* op, const Expr& e) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? e : cast(op->type, v);
}
Expr IRMutator::visit(const BinaryNode* op, const Expr& e) {
  Expr a = mutate(op->a), b = mutate(op->b);
  return a.same_as(op->a) && b.same_as(op->b) ? e : binary(op->kind, a, b);
}
Expr IRMutator::visit(const NotNode* op, const Expr& e) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? e : logical_not(a);
}
Expr IRMutator::visit(const SelectNode* op, const Expr& e) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
  return select(c, t, f);
}
Expr IRMutator::visit(const LoadNode* op, const Expr& e) {
  Expr i = mutate(op->index), p = mutate(op->predicate);
  return i.same_as(op->index) && p.same_as(op->predicate) ? e : load(op->buffer, i, p);
}
Expr IRMutator::visit(const ProducerLoadNode* op, const Expr& e) {
  std::vector<Expr> idx;
  bool changed = false;
  for (const Expr& i : op->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  return changed ? producer_load(op->producer, op->value_index, op->type, std::move(idx)) : e;
}
Expr IRMutator::visit(const ReduceNode* op, const Expr& e) {
  std::vector<ReduceAxis> axes;
  bool changed = false;
  for (const ReduceAxis& a : op->axes) {
    axes.push_back({a.var, mutate(a.min), mutate(a.extent)});
    changed |= !axes.back().min.same_as(a.min) || !axes.back().extent.same_as(a.extent);
  }
  Expr s = mutate(op->source), c = mutate(op->condition), i = mutate(op->init);
  changed |= !s.same_as(op->source) || !c.same_as(op->condition) || !i.same_as(op->init);
  return changed ? reduce(op->op, s, std::move(axes), c, i) : e;
}
Expr IRMutator::visit(const RampNode* op, const Expr& e) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  return b.same_as(op->base) && s.same_as(op->stride) ? e : ramp(b, s, op->lanes);
}
Expr IRMutator::visit(const BroadcastNode* op, const Expr& e) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? e : broadcast(v, op->lanes);
}
Expr IRMutator::visit(const CallNode* op, const Expr& e) {
  std::vector<Expr> args;
  bool changed = false;
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    changed |= !args.back().same_as(a);
  }
  return changed ? call(op->type, op->name, std::move(args)) : e;
}
Expr IRMutator::visit(const LetNode* op, const Expr& e) {
  Expr v = mutate(op->value), b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? e : let(op->var, v, b);
}

Stmt IRMutator::visit(const ForNode* op, const Stmt& s) {
  Expr m = mutate(op->min), x = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (m.same_as(op->min) && x.same_as(op->extent) && b.same_as(op->body)) return s;
  return for_loop(op->var, m, x, op->for_kind, b);
}
Stmt IRMutator::visit(const StoreNode* op, const Stmt& s) {
  Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
  if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return s;
  return store(op->buffer, v, i, p);
}
Stmt IRMutator::visit(const LetStmtNode* op, const Stmt& s) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? s : let_stmt(op->var, v, b);
}
Stmt IRMutator::visit(const IfThenElseNode* op, const Stmt& s) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), f = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && f.same_as(op->else_case)) return s;
  return if_then_else(c, t, f);
}
Stmt IRMutator::visit(const AllocateNode* op, const Stmt& s) {
  Expr x = mutate(op->extent);
  Stmt b = mutate(op->body);
  return x.same_as(op->extent) && b.same_as(op->body) ? s : allocate(op->buffer, x, b);
}
Stmt IRMutator::visit(const BlockNode* op, const Stmt& s) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt& st : op->stmts) {
    stmts.push_back(mutate(st));
    changed |= !stmts.back().same_as(st);
  }
  return changed ? block(std::move(stmts)) : s;
}
Stmt IRMutator::visit(const EvaluateNode* op, const Stmt& s) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? s : eval_stmt(v);
}

// --- substitution and queries -------------------------------------------------------

namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op, const Expr& e) override {
    auto it = map_.find(op);
    return it == map_.end() ? e : it->second;
  }
  // A binder of a mapped variable hides it inside its body.
  template <class Node, class Result, class Rebuild>
  Result scoped(const Node* op, const Result& self, Rebuild rebuild) {
    auto it = map_.find(op->var.node());
    if (it == map_.end()) return rebuild();
    Expr saved = it->second;
    map_.erase(it);
    Result r = rebuild();
    map_[op->var.node()] = saved;
    return r;
  }
  Expr visit(const LetNode* op, const Expr& e) override {
    Expr v = mutate(op->value);
    Expr b = scoped(op, e, [&] { return mutate(op->body); });
    return v.same_as(op->value) && b.same_as(op->body) ? e : let(op->var, v, b);
  }
  Stmt visit(const LetStmtNode* op, const Stmt& s) override {
    Expr v = mutate(op->value);
    Stmt b = scoped(op, s, [&] { return mutate(op->body); });
    return v.same_as(op->value) && b.same_as(op->body) ? s : let_stmt(op->var, v, b);
  }
  Stmt visit(const ForNode* op, const Stmt& s) override {
    Expr m = mutate(op->min), x = mutate(op->extent);
    Stmt b = scoped(op, s, [&] { return mutate(op->body); });
    if (m.same_as(op->min) && x.same_as(op->extent) && b.same_as(op->body)) return s;
    return for_loop(op->var, m, x, op->for_kind, b);
  }

 private:
  VarMap map_;
};

class UseFinder : public IRVisitor {
 public:
  const VarNode* var = nullptr;
  const BufferNode* buf = nullptr;
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit(const VarNode* op) override { found |= op == var; }
  void visit(const LoadNode* op) override {
    found |= op->buffer.get() == buf;
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    found |= op->buffer.get() == buf;
    IRVisitor::visit(op);
  }
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  Substituter s(map);
  return s.mutate(e);
}
Stmt substitute(const Stmt& st, const VarMap& map) {
  if (map.empty()) return st;
  Substituter s(map);
  return s.mutate(st);
}
Expr substitute(const Expr& e, const Var& var, const Expr& value) { return substitute(e, VarMap{{var.node(), value}}); }
Stmt substitute(const Stmt& s, const Var& var, const Expr& value) { return substitute(s, VarMap{{var.node(), value}}); }

bool uses_var(const Expr& e, const Var& var) {
  UseFinder f;
  f.var = var.node();
  f.visit(e);
  return f.found;
}
bool uses_var(const Stmt& s, const Var& var) {
  UseFinder f;
  f.var = var.node();
  f.visit(s);
  return f.found;
}
bool uses_buffer(const Stmt& s, const Buffer& buf) {
  UseFinder f;
  f.buf = buf.get();
  f.visit(s);
  return f.found;
}

}  // namespace tessera::loop
