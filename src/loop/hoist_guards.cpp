// Loop-invariant guards hoisted out of loops (see hoist_guards.h).
#include "loop/hoist_guards.h"

#include <vector>

#include "loop/visitor.h"

namespace tessera::loop {

namespace {

// True when evaluating `e` reads no memory and calls nothing (moving it
// across statements cannot change its value, only its variables matter).
bool pure(const Expr& e) {
  struct Finder : IRVisitor {
    bool impure = false;
    using IRVisitor::visit;
    void visit(const LoadNode*) override { impure = true; }
    void visit(const CallNode*) override { impure = true; }
    void visit(const ProducerLoadNode*) override { impure = true; }
    void visit(const ReduceNode*) override { impure = true; }
  } f;
  f.visit(e);
  return !f.impure;
}

// The terms of a conjunction a && b && ...
void conjuncts(const Expr& e, std::vector<Expr>& out) {
  if (auto* b = e.as<BinaryNode>(); b && b->kind == ExprKind::And) {
    conjuncts(b->a, out);
    conjuncts(b->b, out);
    return;
  }
  out.push_back(e);
}

class Hoister : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    Expr outer;
    Stmt inner = split(body, [&](const Expr& t) { return !uses_var(t, op->var); }, outer);
    if (!outer.defined()) return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body);
    return if_then_else(outer, for_loop(op->var, op->min, op->extent, op->for_kind, inner));
  }
  Stmt visit(const LetStmtNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    Expr outer;
    Stmt inner = split(body, [&](const Expr& t) { return !uses_var(t, op->var); }, outer);
    if (!outer.defined()) return body.same_as(op->body) ? s : let_stmt(op->var, op->value, body);
    return if_then_else(outer, let_stmt(op->var, op->value, inner));
  }
  Stmt visit(const AllocateNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    Expr outer;
    Stmt inner = split(body, [](const Expr&) { return true; }, outer);  // pure terms read no buffer
    if (!outer.defined()) return body.same_as(op->body) ? s : allocate(op->buffer, op->extent, body);
    return if_then_else(outer, allocate(op->buffer, op->extent, inner));
  }

 private:
  // When `body` is an if without else, the pure scalar terms of its
  // condition that `movable` accepts go to `outer` and the rest stays
  // around its statement (returned); otherwise `body` as it is.
  template <typename F>
  static Stmt split(const Stmt& body, F movable, Expr& outer) {
    auto* in = body.as<IfThenElseNode>();
    if (!in || in->else_case.defined() || !in->cond.type().is_scalar()) return body;
    std::vector<Expr> terms, out, stay;
    conjuncts(in->cond, terms);
    for (const Expr& t : terms) (pure(t) && movable(t) ? out : stay).push_back(t);
    if (out.empty()) return body;
    outer = all_of(out);
    return stay.empty() ? in->then_case : if_then_else(all_of(stay), in->then_case);
  }
};

}  // namespace

Stmt hoist_invariant_guards(const Stmt& s) {
  Hoister h;
  return h.mutate(s);
}

Kernel hoist_invariant_guards(const Kernel& k) {
  return Kernel{k.name, k.inputs, k.outputs, hoist_invariant_guards(k.body)};
}

}  // namespace tessera::loop
