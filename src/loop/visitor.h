// Base classes for passes over the loop IR: IRVisitor walks every node,
// IRMutator rebuilds the tree bottom-up, sharing every unchanged subtree.
// Derived classes override the visit overloads they care about (and write
// `using IRVisitor::visit;` / `using IRMutator::visit;` to keep the others).
#pragma once

#include <unordered_map>

#include "loop/stmt.h"

namespace tessera::loop {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  // Dispatches on the node kind; undefined expressions/statements are skipped.
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
  virtual void visit(const IntImmNode*) {}
  virtual void visit(const FloatImmNode*) {}
  virtual void visit(const VarNode*) {}
  virtual void visit(const CastNode* op);
  virtual void visit(const BinaryNode* op);
  virtual void visit(const NotNode* op);
  virtual void visit(const SelectNode* op);
  virtual void visit(const LoadNode* op);
  virtual void visit(const RampNode* op);
  virtual void visit(const BroadcastNode* op);
  virtual void visit(const CallNode* op);
  virtual void visit(const LetNode* op);
  virtual void visit(const ProducerLoadNode* op);
  virtual void visit(const ReduceNode* op);
  virtual void visit(const ForNode* op);
  virtual void visit(const StoreNode* op);
  virtual void visit(const LetStmtNode* op);
  virtual void visit(const IfThenElseNode* op);
  virtual void visit(const AllocateNode* op);
  virtual void visit(const BlockNode* op);
  virtual void visit(const EvaluateNode* op);
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  // Dispatches on the node kind; undefined in, undefined out.
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
  // Each overload gets the node and the handle that owns it, and returns the
  // handle itself when nothing changed.
  virtual Expr visit(const IntImmNode*, const Expr& e) { return e; }
  virtual Expr visit(const FloatImmNode*, const Expr& e) { return e; }
  virtual Expr visit(const VarNode*, const Expr& e) { return e; }
  virtual Expr visit(const CastNode* op, const Expr& e);
  virtual Expr visit(const BinaryNode* op, const Expr& e);
  virtual Expr visit(const NotNode* op, const Expr& e);
  virtual Expr visit(const SelectNode* op, const Expr& e);
  virtual Expr visit(const LoadNode* op, const Expr& e);
  virtual Expr visit(const RampNode* op, const Expr& e);
  virtual Expr visit(const BroadcastNode* op, const Expr& e);
  virtual Expr visit(const CallNode* op, const Expr& e);
  virtual Expr visit(const LetNode* op, const Expr& e);
  virtual Expr visit(const ProducerLoadNode* op, const Expr& e);
  virtual Expr visit(const ReduceNode* op, const Expr& e);
  virtual Stmt visit(const ForNode* op, const Stmt& s);
  virtual Stmt visit(const StoreNode* op, const Stmt& s);
  virtual Stmt visit(const LetStmtNode* op, const Stmt& s);
  virtual Stmt visit(const IfThenElseNode* op, const Stmt& s);
  virtual Stmt visit(const AllocateNode* op, const Stmt& s);
  virtual Stmt visit(const BlockNode* op, const Stmt& s);
  virtual Stmt visit(const EvaluateNode* op, const Stmt& s);
};

using VarMap = std::unordered_map<const VarNode*, Expr>;

// Replaces free occurrences of the mapped variables (a Let/LetStmt/For that
// rebinds a variable hides it from the map inside its body).
Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);
Expr substitute(const Expr& e, const Var& var, const Expr& value);
Stmt substitute(const Stmt& s, const Var& var, const Expr& value);

// True when `var` occurs in e / s.
bool uses_var(const Expr& e, const Var& var);
bool uses_var(const Stmt& s, const Var& var);
// True when s loads from or stores to `buf`.
bool uses_buffer(const Stmt& s, const Buffer& buf);

}  // namespace tessera::loop
