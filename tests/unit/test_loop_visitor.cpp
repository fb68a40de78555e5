// IRVisitor, IRMutator, substitute and use queries.
#include <gtest/gtest.h>

#include "loop/printer.h"
#include "loop/visitor.h"
#include "loop_kernels.h"

namespace tessera::loop {
namespace {

class LoadCounter : public IRVisitor {
 public:
  using IRVisitor::visit;
  int loads = 0, loops = 0;

 protected:
  void visit(const LoadNode* op) override {
    ++loads;
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    ++loops;
    IRVisitor::visit(op);
  }
};

// Turns every serial loop into a parallel one.
class Parallelize : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& s) override {
    Stmt body = mutate(op->body);
    return for_loop(op->var, op->min, op->extent, ForKind::Parallel, body);
  }
};

TEST(LoopVisitor, VisitsEveryNode) {
  LoadCounter c;
  c.visit(testing::matmul_kernel(4, 2, 3).body);
  EXPECT_EQ(c.loads, 3);
  EXPECT_EQ(c.loops, 3);
}

TEST(LoopVisitor, MutatorRebuildsOnlyWhatChanged) {
  Kernel k = testing::matmul_kernel(4, 2, 3);
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(k.body).same_as(k.body));  // nothing changed: same nodes
  Parallelize p;
  std::string text = to_string(p.mutate(k.body));
  EXPECT_NE(text.find("for (j, 0, 2) parallel {"), std::string::npos) << text;
  EXPECT_NE(text.find("for (k, 0, 3) parallel {"), std::string::npos) << text;
}

TEST(LoopVisitor, SubstituteRespectsBinders) {
  Var i("i"), j("j"), x("x");
  EXPECT_EQ(to_string(substitute(i * 2 + j, i, x + 1)), "(x + 1)*2 + j");
  // A let that rebinds i hides it inside its body but not in its value.
  EXPECT_EQ(to_string(substitute(let(i, i + 1, i * 2), i, x)), "(let i = x + 1 in i*2)");
  Buffer A("A", DType::F32);
  Stmt loop = for_loop(i, j, int_imm(4), ForKind::Serial, store(A, float_imm(1), i + j));
  EXPECT_EQ(to_string(substitute(loop, VarMap{{i.node(), x}, {j.node(), int_imm(7)}})),
            "for (i, 7, 4) {\n"
            "  A[i + 7] = 1.0f\n"
            "}\n");
}

TEST(LoopVisitor, UseQueries) {
  Kernel k = testing::matmul_kernel(4, 2, 3);
  Var i("i"), other("other");
  Buffer A("A", DType::F32), B("B", DType::F32);
  EXPECT_TRUE(uses_var(i * 2 + 1, i));
  EXPECT_FALSE(uses_var(i * 2 + 1, other));
  EXPECT_TRUE(uses_buffer(k.body, k.inputs[0]));
  EXPECT_TRUE(uses_buffer(k.body, k.outputs[0]));
  EXPECT_FALSE(uses_buffer(k.body, A));  // same name, different buffer
  EXPECT_TRUE(uses_buffer(store(B, load(A, i), i), A));
}

}  // namespace
}  // namespace tessera::loop
