// hoist_invariant_guards: hand-written kernels run with the evaluator before
// and after (bit for bit), and the place each guard ends up: a condition's
// terms leave every loop, let and allocation they do not depend on, and
// stay where they read memory, use the bound variable or have an else.
#include <gtest/gtest.h>

#include <random>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/hoist_guards.h"
#include "loop/printer.h"
#include "loop/visitor.h"

namespace tessera::loop {
namespace {

using codegen::testing::expect_same_results;
using codegen::testing::random_tensor;

// The statement inside `s` past one For (or LetStmt, Allocate) of the expected kind.
Stmt body_of(const Stmt& s) {
  if (auto* f = s.as<ForNode>()) return f->body;
  if (auto* l = s.as<LetStmtNode>()) return l->body;
  if (auto* a = s.as<AllocateNode>()) return a->body;
  ADD_FAILURE() << "not a loop, let or allocation:\n" << to_string(s);
  return Stmt();
}
// The if at `s` (failing when there is none) and its condition's text.
const IfThenElseNode* if_at(const Stmt& s) {
  auto* i = s.as<IfThenElseNode>();
  EXPECT_NE(i, nullptr) << "no if at:\n" << to_string(s);
  return i;
}

// for i: for j: if (i < 2 && 0 < j): Y[i*5 + j] = X[i*5 + j] * 2
// -> for i: if (i < 2): for j: if (0 < j): ...
TEST(LoopHoistGuards, TermsLeaveTheLoopsTheyDoNotUse) {
  Buffer X("X", DType::F32, {20}), Y("Y", DType::F32, {20});
  Var i("i"), j("j");
  Expr at = Expr(i) * 5 + j;
  Kernel k{"guarded", {X}, {Y},
           for_loop(i, int_imm(0), int_imm(4), ForKind::Serial,
                    for_loop(j, int_imm(0), int_imm(5), ForKind::Vectorized,
                             if_then_else(Expr(i) < 2 && Expr(j) > 0, store(Y, load(X, at) * 2.0f, at))))};
  Kernel h = hoist_invariant_guards(k);
  const IfThenElseNode* outer = if_at(body_of(h.body));
  ASSERT_NE(outer, nullptr);
  EXPECT_TRUE(uses_var(outer->cond, i));
  EXPECT_FALSE(uses_var(outer->cond, j));
  auto* loop_j = outer->then_case.as<ForNode>();
  ASSERT_NE(loop_j, nullptr) << to_string(h);
  EXPECT_EQ(loop_j->for_kind, ForKind::Vectorized);
  const IfThenElseNode* inner = if_at(loop_j->body);
  ASSERT_NE(inner, nullptr);
  EXPECT_TRUE(uses_var(inner->cond, j));
  EXPECT_FALSE(uses_var(inner->cond, i));
  std::mt19937 rng(1);
  expect_same_results(k, h, {random_tensor(DType::F32, 20, rng), random_tensor(DType::F32, 20, rng)});
}

// A whole invariant condition leaves two loops and an allocation:
// for a: for b: alloc T: if (3 <= c): ... -> if (3 <= c): for a: for b: alloc T: ...
TEST(LoopHoistGuards, AWholeInvariantGuardLeavesEveryLoop) {
  Buffer X("X", DType::I64, {6}), Y("Y", DType::I64, {6}), T("T", DType::I64, {1});
  Var a("a"), b("b"), c("c");
  Expr at = Expr(a) * 3 + b;
  Stmt inner = block({store(T, load(X, at) + 1, int_imm(0)), store(Y, load(T, int_imm(0)) * 3, at)});
  Stmt body = for_loop(a, int_imm(0), int_imm(2), ForKind::Parallel,
                       for_loop(b, int_imm(0), int_imm(3), ForKind::Unrolled,
                                allocate(T, int_imm(1), if_then_else(Expr(c) >= 3, inner))));
  for (int64_t cv : {2, 3}) {
    SCOPED_TRACE(cv);
    Kernel k{"invariant", {X}, {Y}, let_stmt(c, int_imm(cv), body)};
    Kernel h = hoist_invariant_guards(k);
    // The let binds c, which the condition uses: the if stops inside it.
    const IfThenElseNode* top = if_at(body_of(h.body));
    ASSERT_NE(top, nullptr);
    EXPECT_TRUE(uses_var(top->cond, c));
    ASSERT_NE(top->then_case.as<ForNode>(), nullptr) << to_string(h);
    std::mt19937 rng(2);
    expect_same_results(k, h, {random_tensor(DType::I64, 6, rng, -50, 50), random_tensor(DType::I64, 6, rng, -50, 50)});
  }
}

// Terms that read memory, and ifs with an else, stay where they are; a term
// on a let's variable stays inside the let while the others leave it.
TEST(LoopHoistGuards, LoadsElsesAndBoundVariablesStay) {
  Buffer X("X", DType::F32, {8}), Y("Y", DType::F32, {8});
  Var i("i"), t("t");
  Stmt loads = for_loop(i, int_imm(0), int_imm(8), ForKind::Serial,
                        if_then_else(load(X, int_imm(0)) > 0.0f, store(Y, load(X, Expr(i)), Expr(i))));
  EXPECT_TRUE(hoist_invariant_guards(loads).same_as(loads));
  Var n("n");
  Stmt with_else = let_stmt(n, int_imm(4), for_loop(i, int_imm(0), int_imm(8), ForKind::Serial,
                                                     if_then_else(Expr(n) > 2, store(Y, load(X, Expr(i)), Expr(i)),
                                                                  store(Y, float_imm(0), Expr(i)))));
  EXPECT_TRUE(hoist_invariant_guards(with_else).same_as(with_else));
  // for i: let t = i + 1: if (i < 5 && 2 < t): Y[i] = X[i]
  // -> for i: if (i < 5): let t = i + 1: if (2 < t): Y[i] = X[i]
  Kernel k{"let", {X}, {Y},
           for_loop(i, int_imm(0), int_imm(8), ForKind::Serial,
                    let_stmt(t, Expr(i) + 1,
                             if_then_else(Expr(i) < 5 && Expr(t) > 2, store(Y, load(X, Expr(i)), Expr(i)))))};
  Kernel h = hoist_invariant_guards(k);
  const IfThenElseNode* outer = if_at(body_of(h.body));
  ASSERT_NE(outer, nullptr);
  EXPECT_FALSE(uses_var(outer->cond, t));
  const IfThenElseNode* inner = if_at(body_of(outer->then_case));
  ASSERT_NE(inner, nullptr);
  EXPECT_TRUE(uses_var(inner->cond, t));
  std::mt19937 rng(3);
  expect_same_results(k, h, {random_tensor(DType::F32, 8, rng), random_tensor(DType::F32, 8, rng)});
}

}  // namespace
}  // namespace tessera::loop
