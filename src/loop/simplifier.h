// The simplifier's mutator (private to src/loop): expression rules live in
// simplify.cpp, statement rules and scoping in simplify_stmt.cpp.
#pragma once

#include <optional>

#include "loop/bounds.h"
#include "loop/visitor.h"

namespace tessera::loop {

class Simplifier : public IRMutator {
 public:
  explicit Simplifier(const VarBounds& vars) : bounds_(vars) {}
  using IRMutator::mutate;

  // Rules on already-simplified operands; each returns a simplified result.
  Expr add(const Expr& a, const Expr& b);
  Expr sub(const Expr& a, const Expr& b);
  Expr mul(const Expr& a, const Expr& b);
  Expr div(const Expr& a, const Expr& b);
  Expr mod(const Expr& a, const Expr& b);
  Expr min_max(ExprKind k, const Expr& a, const Expr& b);
  Expr compare(ExprKind k, const Expr& a, const Expr& b);
  Expr logic(ExprKind k, const Expr& a, const Expr& b);
  Expr negate(const Expr& a);  // logical not
  Expr select_of(const Expr& c, const Expr& t, const Expr& f);
  Expr cast_to(Type t, const Expr& v);
  Expr binary_of(ExprKind k, const Expr& a, const Expr& b);

  // Whether a comparison holds for every value of its variables (true), for
  // none (false), or neither can be shown.
  std::optional<bool> prove(ExprKind k, const Expr& a, const Expr& b);
  Interval bounds(const Expr& e) { return bounds_of(e, bounds_); }

 protected:
  using IRMutator::visit;
  Expr visit(const CastNode* op, const Expr& e) override;
  Expr visit(const BinaryNode* op, const Expr& e) override;
  Expr visit(const NotNode* op, const Expr& e) override;
  Expr visit(const SelectNode* op, const Expr& e) override;
  Expr visit(const LoadNode* op, const Expr& e) override;
  Expr visit(const RampNode* op, const Expr& e) override;
  Expr visit(const BroadcastNode* op, const Expr& e) override;
  Expr visit(const CallNode* op, const Expr& e) override;
  Expr visit(const LetNode* op, const Expr& e) override;
  Stmt visit(const ForNode* op, const Stmt& s) override;
  Stmt visit(const StoreNode* op, const Stmt& s) override;
  Stmt visit(const LetStmtNode* op, const Stmt& s) override;
  Stmt visit(const IfThenElseNode* op, const Stmt& s) override;
  Stmt visit(const AllocateNode* op, const Stmt& s) override;
  Stmt visit(const BlockNode* op, const Stmt& s) override;
  Stmt visit(const EvaluateNode* op, const Stmt& s) override;

  // Binds var's range for the lifetime of the returned guard.
  class ScopedBound {
   public:
    ScopedBound(VarBounds& m, const VarNode* v, Interval i);
    ~ScopedBound();
    ScopedBound(const ScopedBound&) = delete;
    ScopedBound& operator=(const ScopedBound&) = delete;

   private:
    VarBounds& map_;
    const VarNode* var_;
    std::optional<Interval> saved_;
  };
  // Narrows variable ranges by what `cond` (or its negation) implies.
  void learn(const Expr& cond, bool holds, VarBounds& into);

  VarBounds bounds_;
};

// i32 and i64: the types whose arithmetic is assumed not to overflow.
bool is_index_like(Type t);

}  // namespace tessera::loop
