// Helpers for vectorize_loops' tests (test_loop_vectorize.cpp: hand-written
// kernels; test_loop_vectorize_random.cpp: seeded random programs): the loops
// left in a kernel's body, and the fixture of their one JIT suite.
#pragma once

#include "jit_test_util.h"
#include "loop/stmt.h"
#include "loop/visitor.h"

namespace tessera::loop::testing {

// Loops of each kind in s.
inline int count_loops(const Stmt& s, ForKind kind) {
  struct Counter : IRVisitor {
    ForKind kind;
    int n = 0;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      n += op->for_kind == kind;
      IRVisitor::visit(op);
    }
  } c;
  c.kind = kind;
  c.visit(s);
  return c.n;
}

// Whether a loop over `v` is left in s.
inline bool has_loop(const Stmt& s, const Var& v) {
  struct Finder : IRVisitor {
    const VarNode* var;
    bool found = false;
    using IRVisitor::visit;
    void visit(const ForNode* op) override {
      found = found || op->var.node() == var;
      IRVisitor::visit(op);
    }
  } f;
  f.var = v.node();
  f.visit(s);
  return f.found;
}

// The JIT tests of both files are one suite (Jit/LoopVectorizeJit.*, for
// AVX-512 and AVX2), so they share this fixture; test_loop_vectorize.cpp
// instantiates the suite once, for the tests of both.
class LoopVectorizeJit : public codegen::testing::JitIsaTest {};

}  // namespace tessera::loop::testing
