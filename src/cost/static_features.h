// The static cost model's features of one candidate: a fixed-length, named
// vector of loop-IR features (loop_features.h), machine-code features
// (asm_features.h) scaled to the whole run, and an analytic estimate made of
// them for a hardware description (compute cycles over the FMA units and
// ports, each cache level's traffic over its bandwidth, memory over the
// machine's, the parallel split, launch overhead).
//
// The machine-code counts are per iteration of the innermost loops; they are
// scaled to the run by matching work: the loop IR's float element-operations
// over the whole run divided by those of one iteration of the machine code's
// innermost loops gives the iterations (LLVM's own unrolling and
// vectorization cancel out). Without float work, elements loaded and stored
// are matched instead.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "cost/cost_model.h"
#include "cost/hardware.h"

namespace tessera::cost {

// Every feature, in vector order. Counts are over the whole run unless named
// per thread or per iteration.
#define TESSERA_STATIC_FEATURES(X)                                                                   \
  /* loop IR: operations (machine instructions), memory, structure */                                \
  X(IrFlops, "ir_flops") X(IrFma, "ir_fma") X(IrMul, "ir_mul") X(IrAdd, "ir_add") X(IrDiv, "ir_div") \
  X(IrMathVector, "ir_math_vector") X(IrMathScalar, "ir_math_scalar") X(IrOtherFloat, "ir_other_float") \
  X(IrIntOps, "ir_int_ops") X(IrLoads, "ir_loads") X(IrStores, "ir_stores") X(IrLoadBytes, "ir_load_bytes") \
  X(IrStoreBytes, "ir_store_bytes") X(IrGatherLanes, "ir_gather_lanes") X(IrScatterLanes, "ir_scatter_lanes") \
  X(IrShuffles, "ir_shuffles") X(IrBroadcasts, "ir_broadcasts") X(IrLocalAccesses, "ir_local_accesses")   \
  X(IrVectorLanes, "ir_vector_lanes") X(IrLoops, "ir_loops") X(IrMaxDepth, "ir_max_depth")               \
  X(IrInnermostExtent, "ir_innermost_extent") X(IrUnrolledExtent, "ir_unrolled_extent")                  \
  X(IrStoresPerInner, "ir_stores_per_inner") X(IrChainedIterations, "ir_chained_iterations_per_thread") X(ParallelExtent, "parallel_extent")                        \
  X(ParallelBalance, "parallel_balance") X(ParallelSpeedup, "parallel_speedup")                          \
  X(ParallelLaunches, "parallel_launches") X(ParallelFraction, "parallel_fraction")                      \
  X(Footprint, "footprint_bytes") X(TrafficL2, "traffic_l2_bytes") X(TrafficL3, "traffic_l3_bytes")       \
  X(TrafficDram, "traffic_dram_bytes")                                                                   \
  /* machine code: innermost loops per iteration, then scaled to the run */                             \
  X(AsmAvailable, "asm_available") X(AsmLoops, "asm_loops") X(AsmInnerLoops, "asm_inner_loops")          \
  X(AsmIterations, "asm_inner_iterations") X(AsmIterInstructions, "asm_iter_instructions")               \
  X(AsmIterFma, "asm_iter_fma") X(AsmIterSpills, "asm_iter_spills")                                      \
  X(AsmInstructions, "asm_instructions") X(AsmFma, "asm_fma") X(AsmFloatArith, "asm_float_arith")        \
  X(AsmScalarFloat, "asm_scalar_float") X(AsmLoads, "asm_loads") X(AsmStores, "asm_stores")              \
  X(AsmBroadcasts, "asm_broadcasts") X(AsmShuffles, "asm_shuffles") X(AsmGathers, "asm_gathers")         \
  X(AsmSpills, "asm_spills") X(AsmReloads, "asm_reloads") X(AsmCalls, "asm_calls") X(AsmChain, "asm_chain")                       \
  /* analytic estimate for the hardware, per thread */                                                   \
  X(Ghz, "hw_ghz") X(LatencyCycles, "est_latency_cycles") X(ComputeCycles, "est_compute_cycles") X(FrontEndCycles, "est_front_end_cycles")                       \
  X(L1Cycles, "est_l1_cycles") X(L2Cycles, "est_l2_cycles") X(L3Cycles, "est_l3_cycles")                 \
  X(DramSeconds, "est_dram_seconds") X(OverheadSeconds, "est_overhead_seconds")                          \
  X(EstSeconds, "est_seconds")

enum class Feature : int {
#define TESSERA_FEATURE_ENUM(id, name) id,
  TESSERA_STATIC_FEATURES(TESSERA_FEATURE_ENUM)
#undef TESSERA_FEATURE_ENUM
  kCount
};
inline constexpr int kFeatureCount = static_cast<int>(Feature::kCount);
std::string_view feature_name(Feature f);

struct StaticFeatures {
  std::array<double, kFeatureCount> v{};
  double& operator[](Feature f) { return v[static_cast<int>(f)]; }
  double operator[](Feature f) const { return v[static_cast<int>(f)]; }
  // "name=value" lines, one per feature, in vector order.
  std::string describe() const;
};

// The features of a candidate (machine-code ones zero without its JIT kernel)
// on `hw` run by `threads` threads (0: hw.cores).
StaticFeatures static_features(const Candidate& candidate, const HardwareDesc& hw, int threads = 0);

// Recomputes the analytic estimate (ComputeCycles .. EstSeconds) of a feature
// vector from its other features, for `hw`.
void estimate(StaticFeatures& f, const HardwareDesc& hw);

}  // namespace tessera::cost
