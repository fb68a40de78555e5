// Tensor expressions lowered to loop IR (no schedule): results from the loop
// evaluator compared with plain C++ loops written here, and the JIT compared
// with the evaluator on both ISAs.
#include <gtest/gtest.h>

#include <cmath>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "schedule/lower.h"
#include "support/error.h"
#include "te/tensor_expr.h"
#include "random_tensor.h"

namespace tessera {
namespace {

using loop::Expr;
using te::Indices;
using TE = te::Tensor;

using tessera::testing::random_f32;

// Runs a kernel on inputs with the evaluator; returns the outputs.
std::vector<Tensor> eval(const loop::Kernel& k, const std::vector<Tensor>& ins) {
  std::vector<Tensor> args = ins;
  for (const auto& b : k.outputs) args.emplace_back(b.dtype(), b.dims());
  loop::run_kernel(k, args);
  return std::vector<Tensor>(args.begin() + static_cast<long>(ins.size()), args.end());
}

void expect_close(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

struct Matmul {
  int64_t m = 5, k = 7, n = 6;
  TE a = te::placeholder({m, k}, DType::F32, "a");
  TE b = te::placeholder({k, n}, DType::F32, "b");
  TE c = te::compute(
      {m, n},
      [&](const Indices& i) {
        auto r = te::reduce_axis(k, "r");
        return te::sum(a(i[0], r.var) * b(r.var, i[1]), {r});
      },
      "c", te::OpClass::MatMul, {"i", "j"});
  Tensor av = random_f32({m, k}, 1), bv = random_f32({k, n}, 2);
  std::vector<float> want() const {
    std::vector<float> w(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float s = 0;
        for (int64_t r = 0; r < k; ++r) s += av.data<float>()[i * k + r] * bv.data<float>()[r * n + j];
        w[static_cast<size_t>(i * n + j)] = s;
      }
    return w;
  }
};

TEST(TensorExpr, BuildsStagesAndPrints) {
  Matmul mm;
  EXPECT_EQ(mm.c.shape(), (Dims{5, 6}));
  EXPECT_EQ(mm.c.dtype(), DType::F32);
  EXPECT_TRUE(te::is_top_reduce(mm.c.stage()));
  auto ins = mm.c.stage().inputs();
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_TRUE(ins[0].same_as(mm.a));
  EXPECT_TRUE(ins[1].same_as(mm.b));
  std::string text = te::to_string({mm.c});
  EXPECT_NE(text.find("c[i, j] = sum(a[i, r]*b[r, j] over r in [0, +7))  (f32[5x6], matmul)"), std::string::npos) << text;
  EXPECT_NE(text.find("a: placeholder f32[5x7]"), std::string::npos) << text;
  EXPECT_THROW(mm.a(loop::int_imm(0)), Error);  // wrong rank
  EXPECT_EQ(mm.c.dim(-1), 6);
  EXPECT_EQ(mm.c.dim(-2), 5);
  EXPECT_THROW(mm.c.dim(2), Error);
  EXPECT_THROW(mm.c.dim(-3), Error);
}

TEST(TensorExpr, InlineComposesFormulas) {
  TE x = te::placeholder({4}, DType::F32, "x");
  TE y = te::compute({4}, [&](const Indices& i) { return x(i[0]) * 2.0f; }, "y");
  TE z = te::compute({4}, [&](const Indices& i) { return y(i[0]) + y(3 - i[0]); }, "z");
  Expr composed = te::inline_tensor(z.stage().body, y);
  EXPECT_EQ(loop::to_string(composed), "x[i0]*2.0f + x[3 - i0]*2.0f");
  EXPECT_THROW(te::formula_at(x, {loop::int_imm(0)}), Error);  // a placeholder has no formula
}

TEST(TeLower, MatmulMatchesLoops) {
  Matmul mm;
  loop::Kernel k = schedule::lower("matmul", {mm.a, mm.b}, {mm.c});
  expect_close(eval(k, {mm.av, mm.bv})[0], mm.want());
  std::string ir = loop::to_string(k);
  EXPECT_NE(ir.find("for (c.r, 0, 7)"), std::string::npos) << ir;
}

TEST(TeLower, ElementwiseChainIsInlined) {
  TE x = te::placeholder({3, 4}, DType::F32, "x");
  TE y = te::compute({3, 4}, [&](const Indices& i) { return x(i[0], i[1]) * 3.0f; }, "y");
  TE z = te::compute({3, 4}, [&](const Indices& i) { return loop::max(y(i[0], i[1]), 0.5f); }, "z");
  loop::Kernel k = schedule::lower("chain", {x}, {z});
  std::string ir = loop::to_string(k);
  EXPECT_EQ(ir.find("allocate"), std::string::npos) << "y should be inlined:\n" << ir;
  Tensor xv = random_f32({3, 4}, 3);
  std::vector<float> want;
  for (int i = 0; i < 12; ++i) want.push_back(std::max(xv.data<float>()[i] * 3.0f, 0.5f));
  expect_close(eval(k, {xv})[0], want);
}

TEST(TeLower, ReductionInsideFormula) {
  // out[i, j] = exp(x[i, j] - max_r x[i, r]) / sum_r exp(x[i, r] - max_s x[i, s])
  int64_t n = 3, m = 5;
  TE x = te::placeholder({n, m}, DType::F32, "x");
  TE mx = te::compute({n}, [&](const Indices& i) {
    auto r = te::reduce_axis(m, "r");
    return te::max_of(x(i[0], r.var), {r});
  }, "mx");
  TE den = te::compute({n}, [&](const Indices& i) {
    auto r = te::reduce_axis(m, "r");
    return te::sum(loop::call("exp", {x(i[0], r.var) - mx(i[0])}), {r});
  }, "den");
  TE out = te::compute({n, m}, [&](const Indices& i) {
    return loop::call("exp", {x(i[0], i[1]) - mx(i[0])}) / den(i[0]);
  }, "softmax");
  loop::Kernel k = schedule::lower("softmax", {x}, {out});
  Tensor xv = random_f32({n, m}, 4);
  std::vector<float> want;
  for (int64_t i = 0; i < n; ++i) {
    float mxv = -INFINITY, s = 0;
    for (int64_t j = 0; j < m; ++j) mxv = std::max(mxv, xv.data<float>()[i * m + j]);
    for (int64_t j = 0; j < m; ++j) s += std::exp(xv.data<float>()[i * m + j] - mxv);
    for (int64_t j = 0; j < m; ++j) want.push_back(std::exp(xv.data<float>()[i * m + j] - mxv) / s);
  }
  expect_close(eval(k, {xv})[0], want);
  // Inlining a reduction into the formula (accumulator form) gives the same numbers.
  loop::Kernel k2 = schedule::lower("softmax2", {x}, {out}, schedule::Schedule().compute_inline("mx"));
  expect_close(eval(k2, {xv})[0], want);
}

TEST(TeLower, PaddingReadsArePredicated) {
  // 1-D convolution with zero padding 1: reads outside x are guarded.
  int64_t n = 6;
  TE x = te::placeholder({n}, DType::F32, "x");
  TE w = te::placeholder({3}, DType::F32, "w");
  TE padded = te::compute({n + 2}, [&](const Indices& i) {
    return te::if_then_else(i[0] >= 1 && i[0] < n + 1, x(i[0] - 1), te::constant(DType::F32, 0));
  }, "pad");
  TE y = te::compute({n}, [&](const Indices& i) {
    auto r = te::reduce_axis(3, "r");
    return te::sum(padded(i[0] + r.var) * w(r.var), {r});
  }, "conv");
  loop::Kernel k = schedule::lower("conv1d", {x, w}, {y});
  std::string ir = loop::to_string(k);
  EXPECT_NE(ir.find(" if "), std::string::npos) << "predicated load expected:\n" << ir;
  Tensor xv = random_f32({n}, 5), wv = random_f32({3}, 6);
  std::vector<float> want;
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int64_t r = 0; r < 3; ++r) {
      int64_t j = i + r - 1;
      s += (j >= 0 && j < n ? xv.data<float>()[j] : 0.0f) * wv.data<float>()[r];
    }
    want.push_back(s);
  }
  expect_close(eval(k, {xv, wv})[0], want);  // the evaluator bounds-checks every load
}

TEST(TeLower, ExternStage) {
  TE x = te::placeholder({4}, DType::F32, "x");
  // Prefix sum written as loop IR directly.
  auto outs = te::extern_stage({{4}}, {DType::F32}, {x}, [](const auto& ins, const auto& o) {
    loop::Var i("i");
    Expr prev = loop::select(i > 0, loop::load(o[0], loop::max(i - 1, 0)), loop::float_imm(0));
    return loop::for_loop(i, loop::int_imm(0), loop::int_imm(4), loop::ForKind::Serial,
                          loop::store(o[0], prev + loop::load(ins[0], i), i));
  }, "cumsum");
  TE y = te::compute({4}, [&](const Indices& i) { return outs[0](i[0]) * 2.0f; }, "y");
  loop::Kernel k = schedule::lower("ext", {x}, {y});
  Tensor xv = random_f32({4}, 7);
  std::vector<float> want;
  float s = 0;
  for (int i = 0; i < 4; ++i) want.push_back(2 * (s += xv.data<float>()[i]));
  expect_close(eval(k, {xv})[0], want);
}

// An extern stage with two outputs (a running sum and the total, as an
// LSTM writes Y and Y_h) of which the program reads one: the other still
// gets a buffer to be written to (it was looked up and not found), and
// either output alone, or both, lower and compute right.
TEST(TeLower, ExternStageWithOutputsNotRead) {
  TE x = te::placeholder({4}, DType::F32, "x");
  auto outs = te::extern_stage({{4}, {1}}, {DType::F32, DType::F32}, {x}, [](const auto& ins, const auto& o) {
    loop::Var i("i");
    Expr prev = loop::select(i > 0, loop::load(o[0], loop::max(i - 1, 0)), loop::float_imm(0));
    Expr sum = prev + loop::load(ins[0], i);
    return loop::for_loop(i, loop::int_imm(0), loop::int_imm(4), loop::ForKind::Serial,
                          loop::block({loop::store(o[0], sum, i), loop::store(o[1], sum, loop::int_imm(0))}));
  }, "cumsum");
  Tensor xv = random_f32({4}, 7);
  std::vector<float> running;
  float s = 0;
  for (int i = 0; i < 4; ++i) running.push_back(s += xv.data<float>()[i]);
  TE y = te::compute({4}, [&](const Indices& i) { return outs[0](i[0]) * 2.0f; }, "y");
  TE total = te::compute({1}, [&](const Indices& i) { return outs[1](i[0]) + 1.0f; }, "total");
  std::vector<float> doubled;
  for (float r : running) doubled.push_back(2 * r);
  expect_close(eval(schedule::lower("first", {x}, {y}), {xv})[0], doubled);
  expect_close(eval(schedule::lower("second", {x}, {total}), {xv})[0], {s + 1});
  // The stage's outputs as kernel outputs, the second only.
  expect_close(eval(schedule::lower("direct", {x}, {outs[1]}), {xv})[0], {s});
}

TEST(TeLower, Errors) {
  Matmul mm;
  EXPECT_THROW(schedule::lower("bad", {mm.a}, {mm.c}), Error);             // b not an input
  EXPECT_THROW(schedule::lower("bad", {mm.a, mm.b}, {mm.a}), Error);       // output is an input
  EXPECT_THROW(schedule::lower("bad", {mm.a, mm.b}, {mm.c}, schedule::Schedule().split("c", "q", 2)), Error);
  EXPECT_THROW(schedule::lower("bad", {mm.a, mm.b}, {mm.c}, schedule::Schedule().parallel("c", "r")), Error);
  EXPECT_THROW(schedule::lower("bad", {mm.a, mm.b}, {mm.c}, schedule::Schedule().compute_inline("c")), Error);
  EXPECT_THROW(schedule::lower("bad", {mm.a, mm.b}, {mm.c}, schedule::Schedule().compute_root("nope")), Error);
}

class TeLowerJit : public codegen::testing::JitIsaTest {};

TEST_P(TeLowerJit, LoweredKernelsMatchEvaluator) {
  Matmul mm;
  loop::Kernel k = schedule::lower("matmul", {mm.a, mm.b}, {mm.c});
  Tensor out(DType::F32, {mm.m, mm.n});
  codegen::testing::expect_jit_matches(k, {mm.av, mm.bv, out}, options());
}

INSTANTIATE_TEST_SUITE_P(Jit, TeLowerJit, ::testing::Values(codegen::Isa::AVX512, codegen::Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera
