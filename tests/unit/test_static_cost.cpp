// The static cost model (src/cost): hardware descriptions (text and JSON
// round trips, the table, the probe), features of hand-written loop nests
// and of assembly text, the ranking metrics on hand-computed cases, fitting
// on synthetic groups, coefficient files, and the model ranking hand-written
// kernels the right way round (vectorized over scalar, register-tiled over
// untiled) from loop-IR and JIT machine-code features, for AVX2 and AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "cost/asm_features.h"
#include "cost/footprint.h"
#include "cost/hardware.h"
#include "cost/loop_features.h"
#include "cost/ranking_metrics.h"
#include "cost/static_features.h"
#include "cost/static_model.h"
#include "jit_test_util.h"
#include "loop/unroll.h"
#include "loop_kernels.h"
#include "support/error.h"
#include "tune/cost_eval.h"

namespace tessera::cost {
namespace {

using namespace loop;

// --- hand-written kernels ------------------------------------------------------

// Y = exp(X) over n elements: `lanes` at a time (n a multiple of lanes), or one by one.
Kernel exp_kernel(int64_t n, int lanes) {
  Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {n});
  Var i("i");
  Expr idx = lanes > 1 ? ramp(i * lanes, int_imm(1), lanes) : Expr(i);
  Stmt body = for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial, store(Y, call("exp", {load(X, idx)}), idx));
  return Kernel{lanes > 1 ? "exp_vector" : "exp_scalar", {X}, {Y}, body};
}

// Y = X * 2 + 1 (no call: LLVM may vectorize the scalar form itself).
Kernel axpb_kernel(int64_t n, int lanes) {
  Buffer X("X", DType::F32, {n}), Y("Y", DType::F32, {n});
  Var i("i");
  Expr idx = lanes > 1 ? ramp(i * lanes, int_imm(1), lanes) : Expr(i);
  Stmt body = for_loop(i, int_imm(0), int_imm(n / lanes), ForKind::Serial,
                       store(Y, load(X, idx) * float_imm(2) + float_imm(1), idx));
  return Kernel{lanes > 1 ? "axpb_vector" : "axpb_scalar", {X}, {Y}, body};
}

// C[M x N] = A[M x K] * B[K x N] with an mr x (2 * lanes) register tile: tiles
// in parallel, the tile accumulated in a small temporary over k, each step
// broadcasting one A value per row into two vector FMAs; rows and the two
// column vectors unrolled (then unroll_loops, as lowering does).
Kernel tiled_matmul_kernel(int64_t M, int64_t N, int64_t K, int lanes, int mr) {
  const int64_t nr = 2 * lanes;
  Buffer A("A", DType::F32, {M, K}), B("B", DType::F32, {K, N}), C("C", DType::F32, {M, N});
  Buffer acc("acc", DType::F32, {mr * nr});
  Var t("t"), k("k"), r("r"), c("c"), r2("r2"), c2("c2"), r3("r3"), c3("c3");
  Expr row0 = t / (N / nr) * mr, col0 = t % (N / nr) * nr;
  auto vec = [&](Expr base) { return ramp(std::move(base), int_imm(1), lanes); };
  Stmt init = for_loop(r, int_imm(0), int_imm(mr), ForKind::Unrolled,
                       for_loop(c, int_imm(0), int_imm(2), ForKind::Unrolled,
                                store(acc, broadcast(float_imm(0), lanes), vec(r * nr + c * lanes))));
  Expr a_at = (row0 + r2) * K + k;
  Expr b_at = vec(k * N + col0 + c2 * lanes);
  Stmt update = store(acc, load(acc, vec(r2 * nr + c2 * lanes)) + broadcast(load(A, a_at), lanes) * load(B, b_at),
                      vec(r2 * nr + c2 * lanes));
  Stmt kloop = for_loop(k, int_imm(0), int_imm(K), ForKind::Serial,
                        for_loop(r2, int_imm(0), int_imm(mr), ForKind::Unrolled,
                                 for_loop(c2, int_imm(0), int_imm(2), ForKind::Unrolled, update)));
  Stmt write = for_loop(r3, int_imm(0), int_imm(mr), ForKind::Unrolled,
                        for_loop(c3, int_imm(0), int_imm(2), ForKind::Unrolled,
                                 store(C, load(acc, vec(r3 * nr + c3 * lanes)),
                                       vec((row0 + r3) * N + col0 + c3 * lanes))));
  Stmt body = for_loop(t, int_imm(0), int_imm(M / mr * (N / nr)), ForKind::Parallel,
                       allocate(acc, int_imm(mr * nr), block({init, kloop, write})));
  return unroll_loops(Kernel{"matmul_tiled", {A, B}, {C}, body});
}

// Hardware descriptions are probed once per ISA.
const HardwareDesc& host_desc(Isa isa) {
  static std::map<Isa, HardwareDesc> cache;
  auto it = cache.find(isa);
  if (it == cache.end()) it = cache.emplace(isa, probe_hardware(isa)).first;
  return it->second;
}

// --- hardware descriptions ---------------------------------------------------------

TEST(HardwareDesc, TextAndJsonRoundTrip) {
  for (const HardwareDesc& h : known_hardware()) {
    SCOPED_TRACE(h.name);
    EXPECT_EQ(HardwareDesc::parse(h.to_string()), h);
    EXPECT_EQ(HardwareDesc::from_json(h.to_json()), h);
  }
  HardwareDesc odd = known_hardware().front();
  odd.name = "odd-1";
  odd.ghz = 2.3456789012345678;
  odd.mem_gbps = 1.0 / 3.0;
  odd.fma_units = 0.5;
  EXPECT_EQ(HardwareDesc::parse(odd.to_string()), odd);
  EXPECT_EQ(HardwareDesc::from_json(odd.to_json()), odd);
  EXPECT_NE(odd.to_string().find("name=odd-1 isa=avx512 vector_bytes=64"), std::string::npos) << odd.to_string();
}

TEST(HardwareDesc, ErrorsNameTheField) {
  std::string text = known_hardware().front().to_string();
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string without_ghz = text.substr(0, text.find(" ghz=")) + text.substr(text.find(" mem_gbps="));
  EXPECT_NE(message([&] { HardwareDesc::parse(without_ghz); }).find("'ghz' is missing"), std::string::npos);
  EXPECT_NE(message([&] { HardwareDesc::parse(text + " turbo=1"); }).find("unknown field 'turbo'"), std::string::npos);
  EXPECT_NE(message([&] { HardwareDesc::parse(text.replace(text.find("cores="), 6, "cores=x")); }).find("'cores'"),
            std::string::npos);
  EXPECT_NE(message([] { find_hardware("no-such-cpu"); }).find("xeon-platinum-8272cl"), std::string::npos);
  EXPECT_THROW(HardwareDesc::from_json("[1, 2]"), Error);
}

TEST(HardwareDesc, KnownTable) {
  EXPECT_GE(known_hardware().size(), 4u);
  bool avx2 = false, avx512 = false;
  for (const HardwareDesc& h : known_hardware()) {
    avx2 |= h.isa == Isa::AVX2;
    avx512 |= h.isa == Isa::AVX512;
    EXPECT_EQ(find_hardware(h.name), h);
    EXPECT_EQ(h.vector_bytes, h.isa == Isa::AVX512 ? 64 : 32) << h.name;
  }
  EXPECT_TRUE(avx2 && avx512);
}

TEST(HardwareProbe, PlausibleValues) {
  const HardwareDesc& h = host_desc(Isa::Host);
  SCOPED_TRACE(h.to_string());
  EXPECT_EQ(h.name, "host-" + std::string(isa_name(h.isa)));
  EXPECT_GE(h.cores, 1);
  EXPECT_GT(h.ghz, 0.5);
  EXPECT_LT(h.ghz, 6.0);
  EXPECT_GT(h.mem_gbps, 1.0);
  EXPECT_GE(h.fma_units, 1.0);
  EXPECT_LE(h.fma_units, 4.0);
  EXPECT_EQ(h.fma_units, std::round(h.fma_units)) << "whole FMA units";
  EXPECT_GT(h.l1d, 0);
  EXPECT_GE(h.l2, h.l1d);
  EXPECT_GE(h.l3, h.l2 / 4);  // some machines have an L3 smaller than the sum of L2s, none this small
  EXPECT_EQ(HardwareDesc::parse(h.to_string()), h);
}

// --- features ----------------------------------------------------------------------

HardwareDesc test_hw(Isa isa = Isa::AVX512) {
  HardwareDesc h = find_hardware(isa == Isa::AVX512 ? "xeon-platinum-8272cl" : "xeon-e5-2673-v4");
  h.cores = 4;
  return h;
}

TEST(StaticCostFeatures, CountsOfAVectorLoop) {
  // relu over 8 * 1024 elements, 8 lanes at a time, outer loop parallel.
  Kernel k = loop::testing::relu_vector_kernel(8 * 1024);
  LoopFeatures avx512 = loop_features(k, test_hw(Isa::AVX512), 4);
  EXPECT_EQ(avx512.total[Op::Loads], 1024);
  EXPECT_EQ(avx512.total[Op::Stores], 1024);
  EXPECT_EQ(avx512.total[Op::LoadBytes], 8 * 1024 * 4);
  EXPECT_EQ(avx512.total[Op::OtherFloat], 1024);  // max
  EXPECT_EQ(avx512.total[Op::Flops], 8 * 1024);
  EXPECT_DOUBLE_EQ(avx512.vector_lanes, 8);
  EXPECT_EQ(avx512.parallel_extent, 1024);
  EXPECT_DOUBLE_EQ(avx512.parallel_balance, 1);
  EXPECT_DOUBLE_EQ(avx512.parallel_speedup, 4);
  EXPECT_EQ(avx512.parallel_launches, 1);
  EXPECT_DOUBLE_EQ(avx512.footprint, 2 * 8 * 1024 * 4);  // both buffers, whole lines
  // 8 f32 lanes are one instruction in either ISA; 16 would be two AVX2 ones.
  EXPECT_EQ(loop_features(exp_kernel(64, 16), test_hw(Isa::AVX2), 4).total[Op::Loads], 4 * 2);
  EXPECT_EQ(loop_features(exp_kernel(64, 16), test_hw(Isa::AVX512), 4).total[Op::Loads], 4);
  EXPECT_EQ(loop_features(exp_kernel(64, 16), test_hw(Isa::AVX512), 4).total[Op::MathVector], 4);
  EXPECT_EQ(loop_features(exp_kernel(64, 1), test_hw(Isa::AVX512), 4).total[Op::MathScalar], 64);
}

TEST(StaticCostFeatures, MatmulFmaAndBalance) {
  // 37 rows in parallel over 4 threads: 10 rows for the busiest thread.
  Kernel k = loop::testing::matmul_kernel(37, 19, 23);
  LoopFeatures f = loop_features(k, test_hw(), 4);
  EXPECT_EQ(f.total[Op::Fma], 37 * 19 * 23);  // C + A * B contracted
  EXPECT_EQ(f.total[Op::Mul], 0);
  EXPECT_EQ(f.total[Op::Flops], 2 * 37 * 19 * 23);
  EXPECT_EQ(f.loops, 3);
  EXPECT_EQ(f.max_depth, 3);
  EXPECT_DOUBLE_EQ(f.innermost_extent, 23);
  EXPECT_DOUBLE_EQ(f.parallel_balance, 10 / (37 / 4.0));
  EXPECT_DOUBLE_EQ(f.parallel_speedup, 3.7);
}

TEST(StaticCostFeatures, FootprintsAndTraffic) {
  // A column of B (stride N) touches one line per row; a row of A is contiguous.
  Buffer A("A", DType::F32, {256, 256}), B("B", DType::F32, {256, 256});
  Var i("i"), k("k");
  Access a, b;
  a.buffer = A.get(), a.index = affine_index(i * 256 + k), a.buffer_bytes = 256 * 256 * 4;
  b.buffer = B.get(), b.index = affine_index(k * 256 + i), b.buffer_bytes = 256 * 256 * 4;
  ASSERT_TRUE(a.index.affine && b.index.affine);
  VarExtents over_k{{k.node(), 256}};
  EXPECT_DOUBLE_EQ(footprint_bytes({&a}, over_k, 64), 1024);
  EXPECT_DOUBLE_EQ(footprint_bytes({&b}, over_k, 64), 256 * 64);
  VarExtents over_both{{k.node(), 256}, {i.node(), 16}};
  EXPECT_DOUBLE_EQ(footprint_bytes({&b}, over_both, 64), 256 * 64);  // 16 columns share the lines
  EXPECT_DOUBLE_EQ(footprint_bytes({&a, &a}, over_k, 64), 1024);      // an access counted once
  // A division is one opaque term, varying over the values interval analysis gives it.
  AffineIndex quarter = affine_index(i / 4 * 256 + k);
  ASSERT_TRUE(quarter.affine);
  EXPECT_EQ(quarter.opaque.size(), 1u);
  Access q = a;
  q.index = quarter;
  EXPECT_DOUBLE_EQ(footprint_bytes({&q}, VarExtents{{i.node(), 16}}, 64), 4 * 64);  // rows 0..3, one line each

  // The untiled product of 256^3 moves more bytes into L1 than the tiled one.
  HardwareDesc hw = test_hw();
  LoopFeatures untiled = loop_features(loop::testing::matmul_kernel(256, 256, 256), hw, 4);
  LoopFeatures tiled = loop_features(tiled_matmul_kernel(256, 256, 256, 16, 4), hw, 4);
  EXPECT_DOUBLE_EQ(untiled.footprint, 3 * 256 * 256 * 4);
  EXPECT_DOUBLE_EQ(tiled.footprint, untiled.footprint);  // the accumulator lives in registers
  EXPECT_GT(untiled.traffic_l2, 2 * tiled.traffic_l2);
  EXPECT_GE(untiled.traffic_l2, untiled.traffic_l3);
  EXPECT_GE(untiled.traffic_l3, untiled.traffic_dram);
  EXPECT_EQ(tiled.total[Op::Fma], 256 * 256 * 256 / 16);
  EXPECT_EQ(tiled.total[Op::LocalAccesses] > 0, true);
  EXPECT_DOUBLE_EQ(tiled.stores_per_inner, 8);
}

TEST(StaticCostFeatures, AssemblyLoopsAndClasses) {
  const char* text = R"(	.text
f:
	pushq	%rbx
	vxorps	%xmm0, %xmm0, %xmm0
.LBB0_1:
	vmovups	%zmm3, 64(%rsp)
.LBB0_2:
	vbroadcastss	(%rdi,%rcx,4), %zmm1
	vmovups	(%rsi,%rcx,4), %zmm2
	vfmadd231ps	%zmm1, %zmm2, %zmm0
	vfmadd231ps	(%rdx){1to16}, %zmm2, %zmm4
	vpermps	%zmm2, %zmm5, %zmm6
	vgatherdps	(%rax,%zmm7,4), %zmm8 {%k1}
	vmovups	128(%rsp), %zmm9
	vaddss	%xmm1, %xmm2, %xmm3
	addq	$16, %rcx
	cmpq	%r8, %rcx
	jne	.LBB0_2
	vmovups	%zmm0, (%r9)   # store the tile
	decq	%r10
	jne	.LBB0_1
	popq	%rbx
	retq
)";
  AsmFeatures f = asm_features(text);
  EXPECT_EQ(f.loops, 2);
  EXPECT_EQ(f.innermost_loops, 1);
  const AsmCounts& in = f.inner;
  EXPECT_EQ(in[AsmOp::Instructions], 11);
  EXPECT_EQ(in[AsmOp::Fma], 2);
  EXPECT_EQ(in[AsmOp::FloatArith], 1);
  EXPECT_EQ(in[AsmOp::ScalarFloat], 1);
  EXPECT_EQ(in[AsmOp::Broadcasts], 2);
  EXPECT_EQ(in[AsmOp::Shuffles], 1);
  EXPECT_EQ(in[AsmOp::Gathers], 1);
  EXPECT_EQ(in[AsmOp::Loads], 5);  // broadcast, vmovups, folded broadcast, gather, reload
  EXPECT_EQ(in[AsmOp::Stores], 0);
  EXPECT_EQ(in[AsmOp::Reloads], 1);
  EXPECT_EQ(in[AsmOp::Spills], 0);
  EXPECT_EQ(in[AsmOp::Anchor], 16 + 16 + 1);
  EXPECT_EQ(in[AsmOp::Chain], 1);  // zmm0 and zmm4 each accumulate once per iteration
  EXPECT_EQ(f.whole[AsmOp::Spills], 1);
  EXPECT_EQ(f.whole[AsmOp::Stores], 3);  // push, spill, tile store
  EXPECT_EQ(asm_features("not assembly at all").loops, 0);

  // An accumulator renamed between two registers is still one chain (LLVM's
  // unrolled scalar reduction); a polynomial on loaded values carries none.
  const char* reduction = R"(.LBB1_4:
	vmovss	-12(%rax,%rcx,4), %xmm1
	vfmadd132ss	-3072(%rdx), %xmm0, %xmm1
	vmovss	-8(%rax,%rcx,4), %xmm0
	vfmadd132ss	-2048(%rdx), %xmm1, %xmm0
	vmovss	-4(%rax,%rcx,4), %xmm1
	vfmadd132ss	-1024(%rdx), %xmm0, %xmm1
	vmovss	(%rax,%rcx,4), %xmm0
	vfmadd132ss	(%rdx), %xmm1, %xmm0
	addq	$4, %rcx
	jne	.LBB1_4
)";
  EXPECT_EQ(asm_features(reduction).inner[AsmOp::Chain], 4);
  const char* polynomial = R"(.LBB2_1:
	vmovups	(%rdi,%rcx), %ymm0
	vfmadd213ps	%ymm2, %ymm1, %ymm0
	vfmadd213ps	%ymm3, %ymm1, %ymm0
	vmovups	%ymm0, (%rsi,%rcx)
	jne	.LBB2_1
)";
  EXPECT_EQ(asm_features(polynomial).inner[AsmOp::Chain], 0);
}

TEST(StaticCostFeatures, DescribeNamesEveryFeature) {
  Kernel k = exp_kernel(256, 16);
  StaticFeatures f = static_features({&k, nullptr}, test_hw(), 4);
  std::string d = f.describe();
  EXPECT_EQ(static_cast<int>(std::count(d.begin(), d.end(), '\n')), kFeatureCount);
  EXPECT_NE(d.find("ir_math_vector=16\n"), std::string::npos) << d;
  EXPECT_NE(d.find("asm_available=0\n"), std::string::npos) << d;
  EXPECT_GT(f[Feature::EstSeconds], 0);
}

// --- ranking metrics ---------------------------------------------------------

TEST(StaticCostMetrics, PairwiseAccuracyByHand) {
  // Group 1: measured 1 < 2 < 3, predicted order 1, 3, 2: pairs (1,2) ok, (1,3) ok, (2,3) wrong.
  // Group 2: measured 5, 5, 1: the tied pair is skipped; (5a,1) wrong, (5b,1) predicted tie: half.
  CostGroups measured{{1, 2, 3}, {5, 5, 1}};
  CostGroups predicted{{0.1, 0.3, 0.2}, {1, 2, 2}};
  EXPECT_DOUBLE_EQ(pairwise_accuracy(measured, predicted), (2 + 0 + 0.5) / 5);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({{1, 2, 3}}, {{7, 8, 9}}), 1);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({{1}, {}}, {{1}, {}}), 0.5);
  EXPECT_THROW(pairwise_accuracy({{1, 2}}, {{1}}), Error);
}

TEST(StaticCostMetrics, PeakScoreByHand) {
  // Costs 4, 1, 2 (throughputs 0.25, 1, 0.5); predicted order: 4, 2, 1.
  CostGroups measured{{4, 1, 2}};
  CostGroups predicted{{0, 2, 1}};
  EXPECT_DOUBLE_EQ(peak_score(measured, predicted, 1), 0.25);
  EXPECT_DOUBLE_EQ(peak_score(measured, predicted, 2), (0.25 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(peak_score(measured, predicted, 3), (0.25 + 0.5 + 1) / 3);
  EXPECT_DOUBLE_EQ(peak_score(measured, predicted, 10), (0.25 + 0.5 + 1) / 3);  // k cut to the group
  // A second group of one candidate (score 1) weighs a third.
  EXPECT_DOUBLE_EQ(peak_score({{4, 1, 2}, {3}}, {{0, 2, 1}, {0}}, 1), (0.25 * 3 + 1) / 4);
  EXPECT_THROW(peak_score(measured, predicted, 0), Error);
}

// --- the model ---------------------------------------------------------------------

// Synthetic groups: the measured cost follows the spill ratio and the
// compute part, which the default (the estimate alone) ignores.
std::vector<FitGroup> synthetic_groups(uint64_t seed, int groups, int per_group) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<FitGroup> out;
  for (int g = 0; g < groups; ++g) {
    FitGroup fg;
    for (int i = 0; i < per_group; ++i) {
      StaticFeatures f;
      f[Feature::Ghz] = 2;
      f[Feature::AsmAvailable] = 1;
      f[Feature::AsmFma] = 1000;
      double spills = 2000 * u(rng);
      f[Feature::AsmSpills] = spills;
      double compute = 1e6 * (1 + 3 * u(rng));
      f[Feature::ComputeCycles] = compute;
      f[Feature::FrontEndCycles] = 1e5;
      f[Feature::L1Cycles] = 1e5;
      f[Feature::OverheadSeconds] = 1e-7;
      f[Feature::ParallelBalance] = 1;
      f[Feature::EstSeconds] = 1e-3 * (1 + u(rng));  // noise
      double seconds = compute / 2e9 * (1 + spills / 1000.0) * (1 + 0.05 * u(rng));
      fg.features.push_back(f);
      fg.seconds.push_back(seconds);
    }
    out.push_back(std::move(fg));
  }
  return out;
}

TEST(StaticCostModel, FitImprovesPairwiseAccuracy) {
  StaticModel model(test_hw(), 4);
  std::vector<FitGroup> train = synthetic_groups(1, 8, 24), test = synthetic_groups(2, 8, 24);
  auto accuracy = [&](const std::vector<FitGroup>& gs) {
    CostGroups y, p;
    for (const FitGroup& g : gs) {
      y.push_back(g.seconds);
      p.push_back(model.predict_features(g.features));
    }
    return pairwise_accuracy(y, p);
  };
  double before = accuracy(test);
  double train_after = model.fit(train);
  double after = accuracy(test);
  EXPECT_LT(before, 0.65);
  EXPECT_GT(after, before + 0.2);
  EXPECT_GT(train_after, 0.85);
  EXPECT_NE(model.coefficients(), StaticModel::default_coefficients());
}

// tune-fit's evaluation: the figures come from the half it fitted on, judged
// on the other half; the coefficients it keeps are those a fit from the
// defaults on every candidate gives.
TEST(StaticCostModel, EvaluationKeepsTheCoefficientsOfAFitOnEveryCandidate) {
  const std::vector<FitGroup> groups = synthetic_groups(3, 6, 20);
  StaticModel evaluated(test_hw(), 4), all(test_hw(), 4), half(test_hw(), 4);
  tune::CostEval e = tune::fit_and_evaluate(evaluated, groups, tune::CostEvalOptions{});
  all.fit(groups);
  EXPECT_EQ(evaluated.coefficients(), all.coefficients());
  EXPECT_EQ(e.refit_candidates, 6 * 20);
  EXPECT_EQ(e.train_candidates + e.test_candidates, 6 * 20);
  EXPECT_GT(e.pairwise_fitted, e.pairwise_default + 0.2);  // judged on the half not fitted on
  tune::CostEvalOptions no_refit;
  no_refit.refit_all = false;
  tune::CostEval h = tune::fit_and_evaluate(half, groups, no_refit);
  EXPECT_EQ(h.refit_candidates, 0);
  EXPECT_DOUBLE_EQ(h.pairwise_fitted, e.pairwise_fitted);
  EXPECT_NE(half.coefficients(), all.coefficients());
}

// Where the model wins and loses pairs: the judged pairs by the op of each
// task's first node, each op's accuracy over its own tasks' pairs, the op
// with the most pairs first.
TEST(StaticCostModel, JudgementByTaskOp) {
  std::vector<FitGroup> groups = synthetic_groups(4, 3, 12);
  groups[0].task = "MatMul node 'a' + Add node 'b'";
  groups[1].task = "tessera.ConvBlocked node 'c'";
  groups[2].task = "MatMul node 'd'";
  StaticModel model(test_hw(), 4);
  model.fit(synthetic_groups(5, 6, 20));
  const tune::CostEval e = tune::judge(model, groups);
  auto accuracy = [&](const StaticModel& m, std::vector<size_t> idx) {
    CostGroups y, p;
    for (size_t g : idx) {
      y.push_back(groups[g].seconds);
      p.push_back(m.predict_features(groups[g].features));
    }
    return std::make_pair(comparable_pairs(y), pairwise_accuracy(y, p));
  };
  const StaticModel defaults(test_hw(), 4);
  ASSERT_EQ(e.by_op.size(), 2u);
  EXPECT_EQ(e.by_op[0].op, "MatMul");
  EXPECT_EQ(e.by_op[0].pairs, accuracy(model, {0, 2}).first);
  EXPECT_DOUBLE_EQ(e.by_op[0].pairwise_fitted, accuracy(model, {0, 2}).second);
  EXPECT_DOUBLE_EQ(e.by_op[0].pairwise_default, accuracy(defaults, {0, 2}).second);
  EXPECT_EQ(e.by_op[1].op, "tessera.ConvBlocked");
  EXPECT_EQ(e.by_op[1].pairs, accuracy(model, {1}).first);
  EXPECT_DOUBLE_EQ(e.by_op[1].pairwise_fitted, accuracy(model, {1}).second);
  EXPECT_GT(e.by_op[0].pairwise_fitted, e.by_op[0].pairwise_default);
  EXPECT_NE(e.text().find("tessera.ConvBlocked"), std::string::npos);
}

TEST(StaticCostModel, CoefficientsSaveAndLoad) {
  std::string path = (std::filesystem::temp_directory_path() / ("tessera_static_cost_" + std::to_string(::getpid()) + ".json")).string();
  std::filesystem::remove(path);
  StaticModel a(find_hardware("xeon-e5-2673-v4"));
  std::vector<double> w = StaticModel::default_coefficients();
  w[static_cast<int>(Term::SpillRatio)] = 0.75;
  a.set_coefficients(w);
  a.save(path);
  StaticModel b(find_hardware("epyc-7452"));
  b.save(path);  // a second hardware's entry beside the first
  StaticModel c(find_hardware("xeon-e5-2673-v4"));
  c.load(path);
  EXPECT_EQ(c.coefficients(), w);
  StaticModel d(find_hardware("epyc-7452"));
  d.load(path);
  EXPECT_EQ(d.coefficients(), StaticModel::default_coefficients());
  StaticModel e(find_hardware("xeon-platinum-8380"));
  try {
    e.load(path);
    ADD_FAILURE() << "loaded coefficients of another machine";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("no coefficients for hardware 'xeon-platinum-8380'"), std::string::npos);
  }
  std::filesystem::remove(path);
}

// The model ranks hand-written kernels for the host's description of each ISA,
// from loop-IR features alone and with the JIT's machine code.
class StaticCostRanking : public codegen::testing::JitIsaTest {
 protected:
  int lanes() const { return GetParam() == Isa::AVX512 ? 16 : 8; }
  StaticModel model() const { return StaticModel(host_desc(GetParam()), 0); }
  codegen::JitOptions jit_options() const {
    codegen::JitOptions o;
    o.isa = GetParam();
    return o;
  }
  // Predicted costs of (fast, slow), with and without machine code; the fast one must win in both.
  void expect_ranked(const Kernel& fast, const Kernel& slow) const {
    StaticModel m = model();
    std::vector<double> ir = m.predict({{&fast, nullptr}, {&slow, nullptr}});
    EXPECT_LT(ir[0], ir[1]) << "loop IR only\n" << fast.name << ":\n" << m.features({&fast, nullptr}).describe()
                            << slow.name << ":\n" << m.features({&slow, nullptr}).describe();
    auto jf = codegen::jit_compile(fast, jit_options()), js = codegen::jit_compile(slow, jit_options());
    std::vector<double> mc = m.predict({{&fast, jf.get()}, {&slow, js.get()}});
    EXPECT_LT(mc[0], mc[1]) << "with machine code\n" << fast.name << ":\n" << m.features({&fast, jf.get()}).describe()
                            << slow.name << ":\n" << m.features({&slow, js.get()}).describe();
  }
};

TEST_P(StaticCostRanking, VectorizedOverScalarElementwise) {
  Kernel vec = exp_kernel(1 << 16, lanes()), scalar = exp_kernel(1 << 16, 1);
  expect_ranked(vec, scalar);
  // Without a call, loop IR alone still sees 8 or 16 times the instructions.
  StaticModel m = model();
  Kernel va = axpb_kernel(1 << 16, lanes()), sa = axpb_kernel(1 << 16, 1);
  std::vector<double> p = m.predict({{&va, nullptr}, {&sa, nullptr}});
  EXPECT_LT(p[0], p[1]);
}

TEST_P(StaticCostRanking, TiledOverUntiledMatmul) {
  const int64_t n = 256;
  Kernel tiled = tiled_matmul_kernel(n, n, n, lanes(), 4), untiled = loop::testing::matmul_kernel(n, n, n);
  // The tiled kernel computes the same product (within float rounding).
  std::mt19937 rng(5);
  std::vector<Tensor> a = {codegen::testing::random_tensor(DType::F32, n * n, rng),
                           codegen::testing::random_tensor(DType::F32, n * n, rng), Tensor(DType::F32, {n * n})};
  std::vector<Tensor> b = codegen::testing::clones(a);
  codegen::jit_compile(tiled, jit_options())->run(a);
  codegen::jit_compile(untiled, jit_options())->run(b);
  for (int64_t i = 0; i < n * n; i += 97) ASSERT_NEAR(a[2].get_double(i), b[2].get_double(i), 1e-3) << i;
  expect_ranked(tiled, untiled);
}

INSTANTIATE_TEST_SUITE_P(StaticCost, StaticCostRanking, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera::cost
