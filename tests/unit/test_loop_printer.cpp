// Loop IR construction checks and the printer's text form.
#include <gtest/gtest.h>

#include "loop/printer.h"
#include "loop_kernels.h"
#include "support/error.h"

namespace tessera::loop {
namespace {

TEST(LoopPrinter, Matmul) {
  EXPECT_EQ(to_string(testing::matmul_kernel(4, 2, 3)),
            "kernel matmul(A: f32[4x3], B: f32[3x2]) -> (C: f32[4x2]) {\n"
            "  for (i, 0, 4) parallel {\n"
            "    for (j, 0, 2) {\n"
            "      C[i*2 + j] = 0.0f\n"
            "      for (k, 0, 3) {\n"
            "        C[i*2 + j] = C[i*2 + j] + A[i*3 + k]*B[k*2 + j]\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(LoopPrinter, ElementwiseVectorLoop) {
  EXPECT_EQ(to_string(testing::relu_vector_kernel(64)),
            "kernel relu(X: f32[64]) -> (Y: f32[64]) {\n"
            "  for (o, 0, 8) parallel {\n"
            "    Y[ramp(o*8, 1, 8)] = max(X[ramp(o*8, 1, 8)], x8(0.0f))\n"
            "  }\n"
            "}\n");
  // A vectorized loop before vectorization, with a math call and a select.
  Buffer X("X", DType::F32), Y("Y", DType::F32);
  Var o("o"), v("v");
  Expr x = load(X, o * 8 + v);
  Stmt s = for_loop(v, int_imm(0), int_imm(8), ForKind::Vectorized,
                    store(Y, select(x < 0.0f, call("exp", {x}) - 1.0f, x), o * 8 + v));
  EXPECT_EQ(to_string(s),
            "for (v, 0, 8) vectorized {\n"
            "  Y[o*8 + v] = select(X[o*8 + v] < 0.0f, exp(X[o*8 + v]) - 1.0f, X[o*8 + v])\n"
            "}\n");
}

TEST(LoopPrinter, PaddedConvWindowWithIf) {
  EXPECT_EQ(to_string(testing::conv1d_padded_kernel(8)),
            "kernel conv1d(X: f32[8], W: f32[3]) -> (Y: f32[8]) {\n"
            "  for (x, 0, 8) {\n"
            "    Y[x] = 0.0f\n"
            "    for (r, 0, 3) unrolled {\n"
            "      if (x + r >= 1 && x + r < 9) {\n"
            "        Y[x] = Y[x] + X[x + r - 1]*W[r]\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(LoopPrinter, ParenthesesFollowTheTree) {
  Var a("a"), b("b"), c("c");
  EXPECT_EQ(to_string((a + b) * c), "(a + b)*c");
  EXPECT_EQ(to_string(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(to_string(a - b - c), "a - b - c");
  EXPECT_EQ(to_string(a + (b + c)), "a + (b + c)");
  EXPECT_EQ(to_string(a / (b * c)), "a/(b*c)");
  EXPECT_EQ(to_string(!(a < b) || eq(a, b)), "!(a < b) || a == b");
  EXPECT_EQ(to_string(eq(a < b, c < a)), "(a < b) == (c < a)");
  EXPECT_EQ(to_string(a * -3), "a*-3");
}

TEST(LoopPrinter, TypesConstantsAndStatements) {
  Var x("x", {DType::I32, 1});
  EXPECT_EQ(to_string(x + 1), "x + (i32)1");
  EXPECT_EQ(to_string(cast({DType::F32, 1}, x)), "f32(x)");
  EXPECT_EQ(to_string(float_imm(2.5, {DType::F64, 1})), "2.5");
  EXPECT_EQ(to_string(float_imm(0.1)), "0.1f");
  EXPECT_EQ(to_string(float_imm(1.0, {DType::F16, 1})), "(f16)1.0");
  EXPECT_EQ(to_string(bool_imm(true)), "true");
  EXPECT_EQ(to_string(broadcast(int_imm(3), 4)), "x4(3)");
  Var v("v");
  EXPECT_EQ(to_string(let(v, int_imm(2), v * v)), "(let v = 2 in v*v)");
  Buffer T("T", DType::F32), O("O", DType::F32);
  Var i("i");
  Stmt s = allocate(T, int_imm(16),
                    block({let_stmt(v, i * 2, store(T, float_imm(1), v, v < 8)),
                           if_then_else(i < 3, store(O, load(T, i), i), store(O, float_imm(0), i)),
                           eval_stmt(call({DType::I32, 1}, "tessera_trace", {i}))}));
  EXPECT_EQ(to_string(s),
            "allocate T: f32[16] {\n"
            "  let v = i*2\n"
            "  T[v if v < 8] = 1.0f\n"
            "  if (i < 3) {\n"
            "    O[i] = T[i]\n"
            "  } else {\n"
            "    O[i] = 0.0f\n"
            "  }\n"
            "  tessera_trace(i)\n"
            "}\n");
}

TEST(LoopExpr, TypesAreCheckedAtConstruction) {
  Var i("i");
  Var f("f", {DType::F32, 1});
  EXPECT_EQ((i + 1).type(), index_type());
  EXPECT_EQ((i < 3).type(), bool_type());
  EXPECT_EQ((ramp(i, int_imm(1), 8) + i).type(), (Type{DType::I64, 8}));  // scalar broadcast
  EXPECT_EQ((f * 2).type(), (Type{DType::F32, 1}));
  EXPECT_THROW(i + f, Error);                     // i64 vs f32
  EXPECT_THROW(i && i, Error);                    // not bool
  EXPECT_THROW(ramp(i, int_imm(1), 8) + ramp(i, int_imm(1), 4), Error);
  Buffer A("A", DType::F32, {4});
  EXPECT_THROW(load(A, f), Error);                // index must be i64
  EXPECT_THROW(store(A, i, i), Error);            // value dtype must match the buffer
  EXPECT_THROW(if_then_else(i, no_op()), Error);  // condition must be bool
  EXPECT_THROW(call("exp", {i}), Error);          // math on floats only
  EXPECT_THROW(call("frobnicate", {f}), Error);
  EXPECT_THROW(i + 0.5, Error);                   // not an integer constant
  EXPECT_EQ((f + 1).type(), (Type{DType::F32, 1}));  // an integer literal next to a float is a float
  try {
    (void)(i + f);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Add operand types differ: i64 vs f32"), std::string::npos) << e.what();
  }
}

TEST(LoopExpr, StructuralEquality) {
  Var i("i"), j("j");
  EXPECT_TRUE(equal(i * 4 + j, i * 4 + j));
  EXPECT_FALSE(equal(i * 4 + j, j * 4 + i));
  EXPECT_FALSE(equal(Var("i"), i));  // same name, different variable
  EXPECT_TRUE(equal(float_imm(1.5), float_imm(1.5)));
  EXPECT_FALSE(equal(float_imm(0.0), float_imm(-0.0)));
  EXPECT_TRUE(is_const_int(broadcast(int_imm(7), 4), 7));
}

}  // namespace
}  // namespace tessera::loop
