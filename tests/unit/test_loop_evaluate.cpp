// The loop-IR reference evaluator on hand-written kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "loop/evaluate.h"
#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop_kernels.h"
#include "support/error.h"

namespace tessera::loop {
namespace {

TEST(LoopEvaluate, MatmulMatchesHandComputedValues) {
  Kernel k = testing::matmul_kernel(2, 2, 3);
  // A = [[1 2 3] [4 5 6]], B = [[7 8] [9 10] [11 12]] -> C = [[58 64] [139 154]]
  Tensor A = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B = Tensor::from<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor C = Tensor::from<float>({2, 2}, {-1, -1, -1, -1});  // overwritten by the init store
  run_kernel(k, {A, B, C});
  EXPECT_EQ(std::vector<float>(C.span<float>().begin(), C.span<float>().end()),
            (std::vector<float>{58, 64, 139, 154}));
}

TEST(LoopEvaluate, VectorRelu) {
  Tensor X(DType::F32, {16}), Y(DType::F32, {16});
  for (int i = 0; i < 16; ++i) X.data<float>()[i] = static_cast<float>(i - 8);
  run_kernel(testing::relu_vector_kernel(16), {X, Y});
  for (int i = 0; i < 16; ++i) EXPECT_EQ(Y.data<float>()[i], std::max(0.0f, static_cast<float>(i - 8))) << i;
}

TEST(LoopEvaluate, PaddedConvSkipsOutOfRangeTaps) {
  Tensor X = Tensor::from<float>({4}, {1, 2, 3, 4});
  Tensor W = Tensor::from<float>({3}, {1, 10, 100});
  Tensor Y(DType::F32, {4});
  Kernel k = testing::conv1d_padded_kernel(4);
  run_kernel(k, {X, W, Y});
  // Y[x] = X[x-1]*1 + X[x]*10 + X[x+1]*100 with zeros outside.
  std::vector<float> want{0 + 10 + 200, 1 + 20 + 300, 2 + 30 + 400, 3 + 40 + 0};
  EXPECT_EQ(std::vector<float>(Y.span<float>().begin(), Y.span<float>().end()), want);
  Tensor Y2(DType::F32, {4});
  run_kernel(simplify(k), {X, W, Y2});
  EXPECT_EQ(std::vector<float>(Y2.span<float>().begin(), Y2.span<float>().end()), want);
}

TEST(LoopEvaluate, ScalarSemantics) {
  Evaluator ev;
  Var x("x");
  ev.bind(x, EvalValue::of_int(index_type(), -7));
  EXPECT_EQ(ev.eval(x / 2).int_lane(0), -4);
  EXPECT_EQ(ev.eval(x % 2).int_lane(0), 1);
  EXPECT_EQ(ev.eval(x % -2).int_lane(0), -1);
  EXPECT_EQ(ev.eval(x / 0).int_lane(0), 0);
  EXPECT_EQ(ev.eval(ramp(x, int_imm(3), 4)).to_string(), "[-7, -4, -1, 2]");
  EXPECT_EQ(ev.eval(select(ramp(x, int_imm(3), 4) < 0, broadcast(int_imm(1), 4), broadcast(int_imm(0), 4)))
                .to_string(),
            "[1, 1, 1, 0]");
  Type i8{DType::I8, 1};
  EXPECT_EQ(ev.eval(cast(i8, x * 20)).int_lane(0), 116);  // -140 wraps to 116
  EXPECT_EQ(ev.eval(cast({DType::I32, 1}, float_imm(1e10))).int_lane(0), 2147483647);  // saturates
  EXPECT_FLOAT_EQ(static_cast<float>(ev.eval(call("exp", {float_imm(1)})).float_lane(0)), 2.7182817f);
  EXPECT_EQ(ev.eval(min(float_imm(NAN), float_imm(1))).float_lane(0), 1.0);  // a < b ? a : b
  Var t("t");
  EXPECT_EQ(ev.eval(let(t, x * x, t + t)).int_lane(0), 98);
}

TEST(LoopEvaluate, PredicatedLoadsAndStores) {
  Buffer A("A", DType::I32, {6}), B("B", DType::I32, {8});
  Tensor a = Tensor::from<int32_t>({6}, {1, 2, 3, 4, 5, 6});
  Tensor b(DType::I32, {8});
  Var o("o");
  Expr idx = ramp(o * 4, int_imm(1), 4);
  Expr valid = idx < 6;  // the last vector overhangs A
  Stmt s = for_loop(o, int_imm(0), int_imm(2), ForKind::Serial,
                    store(B, load(A, idx, valid) * int_imm(10, {DType::I32, 1}), idx));
  run_kernel(Kernel{"tail", {A}, {B}, s}, {a, b});
  EXPECT_EQ(std::vector<int32_t>(b.span<int32_t>().begin(), b.span<int32_t>().end()),
            (std::vector<int32_t>{10, 20, 30, 40, 50, 60, 0, 0}));
}

TEST(LoopEvaluate, AllocateGivesAScopedTemporary) {
  Buffer T("T", DType::F64), O("O", DType::F64, {3});
  Var i("i");
  Type f64{DType::F64, 1};
  Stmt s = allocate(T, int_imm(3),
                    block({for_loop(i, int_imm(0), int_imm(3), ForKind::Serial,
                                    store(T, cast(f64, i) * float_imm(0.5, f64), i)),
                           for_loop(i, int_imm(0), int_imm(3), ForKind::Serial,
                                    store(O, load(T, int_imm(2) - i), i))}));
  Tensor out(DType::F64, {3});
  run_kernel(Kernel{"rev", {}, {O}, s}, {out});
  EXPECT_EQ(out.data<double>()[0], 1.0);
  EXPECT_EQ(out.data<double>()[2], 0.0);
}

TEST(LoopEvaluate, ErrorsNameTheBuffer) {
  Kernel k = testing::matmul_kernel(2, 2, 3);
  Tensor A(DType::F32, {2, 3}), B(DType::F32, {3, 2}), C(DType::F32, {2, 2});
  EXPECT_THROW(run_kernel(k, {A, B}), Error);
  EXPECT_THROW(run_kernel(k, {A, B, Tensor(DType::F64, {2, 2})}), Error);
  EXPECT_THROW(run_kernel(k, {A, B, Tensor(DType::F32, {5})}), Error);
  Buffer X("X", DType::F32);
  Var i("i");
  Stmt oob = for_loop(i, int_imm(0), int_imm(5), ForKind::Serial, store(X, float_imm(1), i));
  try {
    run_kernel(Kernel{"oob", {}, {X}, oob}, {Tensor(DType::F32, {4})});
    FAIL() << "expected an out-of-bounds error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("store to 'X' at element 4, outside its 4 elements"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera::loop
