// Simplifier rules, each with its before/after text.
#include <gtest/gtest.h>

#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/visitor.h"
#include "loop_kernels.h"

namespace tessera::loop {
namespace {

std::string S(const Expr& e, const VarBounds& b = {}) { return to_string(simplify(e, b)); }
std::string S(const Stmt& s) { return to_string(simplify(s)); }

Expr I(int64_t v) { return int_imm(v); }

TEST(LoopSimplify, FoldsIntegerConstantsWithFloorSemantics) {
  EXPECT_EQ(S(I(2) + I(3) * I(4)), "14");
  EXPECT_EQ(S(I(7) / I(-2)), "-4");
  EXPECT_EQ(S(I(-7) / I(2)), "-4");
  EXPECT_EQ(S(I(-7) / I(-2)), "3");
  EXPECT_EQ(S(I(-7) % I(3)), "2");
  EXPECT_EQ(S(I(7) % I(-3)), "-2");
  EXPECT_EQ(S(I(-6) % I(3)), "0");
  EXPECT_EQ(S(I(5) / I(0)), "0");
  EXPECT_EQ(S(I(5) % I(0)), "0");
  EXPECT_EQ(S(min(I(3), I(-5))), "-5");
  EXPECT_EQ(S(max(I(3), I(-5))), "3");
  Type i8{DType::I8, 1};
  EXPECT_EQ(S(int_imm(100, i8) + int_imm(100, i8)), "(i8)-56");  // wraps to the type
  EXPECT_EQ(S(I(3) < I(4) && I(2) >= I(5)), "false");
  EXPECT_EQ(S(cast({DType::I32, 1}, float_imm(-2.75))), "(i32)-2");
  EXPECT_EQ(S(cast({DType::U8, 1}, I(300))), "(u8)44");
}

TEST(LoopSimplify, FoldsFloatConstants) {
  EXPECT_EQ(S(float_imm(1.5) * 2.0f + 0.25f), "3.25f");
  EXPECT_EQ(S(float_imm(1) / 3.0f), "0.33333334f");  // rounded to f32
  EXPECT_EQ(S(float_imm(-7) % 2.0f), "1.0f");         // floor modulo
  EXPECT_EQ(S(call("sqrt", {float_imm(16)})), "4.0f");
  EXPECT_EQ(S(cast({DType::F32, 1}, I(3))), "3.0f");
  EXPECT_EQ(S(float_imm(1) < float_imm(2)), "true");
}

TEST(LoopSimplify, AlgebraicIdentities) {
  Var x("x"), y("y");
  Var f("f", {DType::F32, 1});
  EXPECT_EQ(S(x + 0), "x");
  EXPECT_EQ(S(0 + x), "x");
  EXPECT_EQ(S(x - 0), "x");
  EXPECT_EQ(S(x * 1), "x");
  EXPECT_EQ(S(x * 0), "0");
  EXPECT_EQ(S(x / 1), "x");
  EXPECT_EQ(S(x % 1), "0");
  EXPECT_EQ(S(x - x), "0");
  EXPECT_EQ(S(x + y - y), "x");
  EXPECT_EQ(S(x + y - x), "y");
  EXPECT_EQ(S(x - (x + 3)), "-3");
  EXPECT_EQ(S(x - y + y), "x");
  EXPECT_EQ(S(x * 3 + x * 5), "x*8");
  EXPECT_EQ(S(f * 1.0f), "f");
  EXPECT_EQ(S(f * 0.0f), "f*0.0f");  // not an identity for floats (inf, NaN)
  EXPECT_EQ(S(f + 0.0f), "f + 0.0f");  // -0.0 + 0.0 is +0.0
  EXPECT_EQ(S(f - 0.0f), "f");
  EXPECT_EQ(S(min(x, x)), "x");
  EXPECT_EQ(S(select(bool_imm(true), x, y)), "x");
  EXPECT_EQ(S(select(bool_imm(false), x, y)), "y");
  EXPECT_EQ(S(select(x < y, x, x)), "x");
  EXPECT_EQ(S(select(!(x < y), x, y)), "select(x >= y, x, y)");
  EXPECT_EQ(S(select(!(f < 3.0f), x, y)), "select(f < 3.0f, y, x)");
  EXPECT_EQ(S((x < 3) && bool_imm(true)), "x < 3");
  EXPECT_EQ(S((x < 3) || bool_imm(true)), "true");
  EXPECT_EQ(S(!(x < 3)), "x >= 3");
  EXPECT_EQ(S(!!(x < 3)), "x < 3");
  EXPECT_EQ(S(!(f < 3.0f)), "!(f < 3.0f)");  // NaN: !(f < 3) is not f >= 3
  EXPECT_EQ(S(x < x + 1), "true");
  EXPECT_EQ(S(eq(x, x)), "true");
  EXPECT_EQ(S(cast(index_type(), x)), "x");
}

TEST(LoopSimplify, CanonicalConstantPlacement) {
  Var x("x"), y("y");
  EXPECT_EQ(S(3 + x), "x + 3");
  EXPECT_EQ(S(2 * x), "x*2");
  EXPECT_EQ(S(min(3, x)), "min(x, 3)");
  EXPECT_EQ(S(eq(I(3), x)), "x == 3");
  EXPECT_EQ(S(x + 3 + 4), "x + 7");
  EXPECT_EQ(S(x + 2 + y), "x + y + 2");
  EXPECT_EQ(S(x + (y + 2)), "x + y + 2");
  EXPECT_EQ(S(x - 3), "x + -3");
  EXPECT_EQ(S(x + 5 - y), "x - y + 5");
  EXPECT_EQ(S(min(min(x, 7), 3)), "min(x, 3)");
  EXPECT_EQ(S(max(max(x, 7), 3)), "max(x, 7)");
}

TEST(LoopSimplify, IndexArithmetic) {
  Var x("x"), y("y");
  EXPECT_EQ(S((x * 4 + 2) / 4), "x");
  EXPECT_EQ(S((x * 4 + 2) % 4), "2");
  EXPECT_EQ(S((x * 3) * 4), "x*12");
  EXPECT_EQ(S((x + 1) * 4), "x*4 + 4");
  EXPECT_EQ(S((x * 8 + y) / 4), "x*2 + y/4");
  EXPECT_EQ(S((x * 8 + y) % 4), "y%4");
  EXPECT_EQ(S((x + 5) / 4), "(x + 1)/4 + 1");
  EXPECT_EQ(S((x + 5) % 4), "(x + 1)%4");
  EXPECT_EQ(S((x / 2) / 3), "x/6");
  EXPECT_EQ(S((x % 12) % 4), "x%4");
  EXPECT_EQ(S((x * 6) / 3), "x*2");
  EXPECT_EQ(S((x * 6) % 3), "0");
  EXPECT_EQ(S((x * 4 + 2) / -4), "x*-1 + -1");  // floor((4x + 2) / -4) == -x - 1
}

// Floor division and modulo recombine: x/c*c + x%c == x and
// (x/c)%k*c + x%c == x%(c*k), in any operand order, for every x (checked on
// negative and positive values by folding both sides).
TEST(LoopSimplify, DivModRecombination) {
  Var x("x"), y("y");
  EXPECT_EQ(S(x / 6 * 6 + x % 6), "x");
  EXPECT_EQ(S(x % 6 + x / 6 * 6), "x");
  EXPECT_EQ(S(x / 56 % 56 * 56 + x % 56), "x%3136");
  EXPECT_EQ(S(x / 3136 * 3136 + (x / 56 % 56 * 56 + x % 56)), "x");
  EXPECT_EQ(S(y + x / 6 * 6 + x % 6), "y + x");
  EXPECT_EQ(S(x / 6 * 5 + x % 6), "x/6*5 + x%6");  // scale differs: unchanged
  for (const Expr& e : {x / 6 * 6 + x % 6, x / 4 % 3 * 4 + x % 4, x / 3136 * 3136 + (x / 56 % 56 * 56 + x % 56)})
    for (int64_t v = -400; v <= 400; v += 7)
      EXPECT_EQ(S(substitute(simplify(e), x, I(v))), S(substitute(e, x, I(v)))) << to_string(e) << " at " << v;
}

TEST(LoopSimplify, VectorRampsAndBroadcasts) {
  Var x("x"), y("y");
  Expr r = ramp(x, I(1), 4);
  EXPECT_EQ(S(r + broadcast(I(2), 4)), "ramp(x + 2, 1, 4)");
  EXPECT_EQ(S(broadcast(y, 4) + r), "ramp(y + x, 1, 4)");
  EXPECT_EQ(S(r + ramp(y, I(2), 4)), "ramp(x + y, 3, 4)");
  EXPECT_EQ(S(r - ramp(y, I(1), 4)), "x4(x - y)");
  EXPECT_EQ(S(r * broadcast(I(2), 4)), "ramp(x*2, 2, 4)");
  EXPECT_EQ(S(ramp(x, I(0), 4)), "x4(x)");
  EXPECT_EQ(S(broadcast(x, 4) * broadcast(y, 4)), "x4(x*y)");
  EXPECT_EQ(S(ramp(x * 8, I(1), 8) / broadcast(I(8), 8)), "x8(x)");
  EXPECT_EQ(S(ramp(x * 8, I(1), 8) % broadcast(I(8), 8)), "ramp(0, 1, 8)");
  EXPECT_EQ(S(ramp(x, I(4), 4) / broadcast(I(2), 4)), "ramp(x/2, 2, 4)");
  // Lanes inside one block the base starts (base a multiple of 16, 16 | 3136).
  EXPECT_EQ(S(ramp(x * 16, I(1), 16) / broadcast(I(3136), 16)), "x16(x*16/3136)");
  EXPECT_EQ(S(ramp(x * 16, I(1), 16) % broadcast(I(3136), 16)), "ramp(x*16%3136, 1, 16)");
  EXPECT_EQ(S(ramp(x * 8, I(1), 16) / broadcast(I(3136), 16)), "ramp(x*8, 1, 16)/x16(3136)");  // may cross
  EXPECT_EQ(S(broadcast(I(3), 4) < broadcast(I(4), 4)), "x4(true)");
}

TEST(LoopSimplify, UsesKnownRanges) {
  Var i("i"), x("x");
  VarBounds b{{i.node(), Interval{0, 127}}};
  EXPECT_EQ(S(i < 128, b), "true");
  EXPECT_EQ(S(i >= 128, b), "false");
  EXPECT_EQ(S(i < 64, b), "i < 64");
  EXPECT_EQ(S(min(i, 127), b), "i");
  EXPECT_EQ(S(max(i, 0), b), "i");
  EXPECT_EQ(S(min(i, -1), b), "-1");
  EXPECT_EQ(S(i / 128, b), "0");
  EXPECT_EQ(S(i % 128, b), "i");
  EXPECT_EQ(S((i + 128) / 128, b), "1");
  EXPECT_EQ(S(min(x, x + 2)), "x");
  EXPECT_EQ(S(max(x, x + 2)), "x + 2");
  EXPECT_EQ(S(i % 128), "i%128");  // unknown without the range
  Type i32{DType::I32, 1}, u8{DType::U8, 1};
  EXPECT_EQ(S(cast(index_type(), cast(i32, i)) + 1, b), "i + 1");  // the round trip is exact in range
  EXPECT_EQ(S(cast(index_type(), cast(u8, i * 4)), b), "i64(u8(i*4))");  // may wrap
  EXPECT_EQ(S(cast(index_type(), cast(i32, x))), "i64(i32(x))");
}

TEST(LoopSimplify, RemovesIfProvedByLoopRange) {
  Buffer A("A", DType::F32);
  Var i("i");
  Stmt s = for_loop(i, I(0), I(128), ForKind::Serial,
                    if_then_else(i < 128, store(A, float_imm(1), min(i, 127))));
  EXPECT_EQ(S(s),
            "for (i, 0, 128) {\n"
            "  A[i] = 1.0f\n"
            "}\n");
  Stmt never = for_loop(i, I(0), I(128), ForKind::Serial,
                        if_then_else(i >= 128, store(A, float_imm(1), i), store(A, float_imm(2), i)));
  EXPECT_EQ(S(never),
            "for (i, 0, 128) {\n"
            "  A[i] = 2.0f\n"
            "}\n");
}

TEST(LoopSimplify, LearnsFromIfConditions) {
  Buffer A("A", DType::F32);
  Var i("i");
  Stmt s = for_loop(i, I(0), I(128), ForKind::Serial,
                    if_then_else(i < 10, if_then_else(i < 20, store(A, float_imm(1), i)),
                                 store(A, float_imm(2), max(i, 10))));
  EXPECT_EQ(S(s),
            "for (i, 0, 128) {\n"
            "  if (i < 10) {\n"
            "    A[i] = 1.0f\n"
            "  } else {\n"
            "    A[i] = 2.0f\n"
            "  }\n"
            "}\n");
}

TEST(LoopSimplify, RemovesExtentOneLoopsAndNoOps) {
  Buffer A("A", DType::F32), T("T", DType::F32);
  Var i("i"), k("k"), v("v");
  Stmt s = block({
      for_loop(k, I(3), I(1), ForKind::Serial, store(A, float_imm(1), k * 2)),  // runs once, k = 3
      for_loop(i, I(0), I(0), ForKind::Serial, store(A, float_imm(2), i)),       // never runs
      eval_stmt(I(0)),
      block({block({}), let_stmt(v, I(5), store(A, load(A, v), v))}),           // A[5] = A[5]
      allocate(T, I(8), store(A, float_imm(3), I(0))),                            // T unused
      if_then_else(bool_imm(false), store(A, float_imm(4), I(1))),
  });
  EXPECT_EQ(S(s), "A[6] = 1.0f\nA[0] = 3.0f\n");
  EXPECT_TRUE(is_no_op(simplify(for_loop(i, I(0), I(4), ForKind::Serial, eval_stmt(I(1))))));
}

TEST(LoopSimplify, LetsOfConstantsAreSubstituted) {
  Var x("x"), y("y"), t("t");
  EXPECT_EQ(S(let(t, I(4), x * t + t)), "x*4 + 4");
  EXPECT_EQ(S(let(t, x + y, t * 2)), "(let t = x + y in t*2)");
  EXPECT_EQ(S(let(t, x + y, x)), "x");  // unused
}

TEST(LoopSimplify, MatmulKernelIsAFixedPoint) {
  Kernel k = testing::matmul_kernel(4, 2, 3);
  EXPECT_EQ(to_string(simplify(k)), to_string(k));
}

TEST(LoopSimplify, PaddedConvBoundsChecksSplitByRange) {
  // With r unrolled away by hand (r = 1), the window check is always true.
  Buffer X("X", DType::F32), Y("Y", DType::F32);
  Var x("x");
  Expr in = x + 1;
  Stmt s = for_loop(x, I(0), I(8), ForKind::Serial,
                    if_then_else(in >= 1 && in < 9, store(Y, load(X, in - 1), x)));
  EXPECT_EQ(S(s),
            "for (x, 0, 8) {\n"
            "  Y[x] = X[x]\n"
            "}\n");
}

}  // namespace
}  // namespace tessera::loop
