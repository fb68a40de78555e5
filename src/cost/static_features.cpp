// The static feature vector and its analytic estimate (see static_features.h).
#include "cost/static_features.h"

#include <algorithm>
#include <cmath>

#include "cost/asm_features.h"
#include "cost/loop_features.h"
#include "support/error.h"

namespace tessera::cost {

namespace {

constexpr std::array<std::string_view, kFeatureCount> kFeatureNames{
#define TESSERA_FEATURE_NAME(id, name) name,
    TESSERA_STATIC_FEATURES(TESSERA_FEATURE_NAME)
#undef TESSERA_FEATURE_NAME
};

// Costs the analytic estimate assumes (cycles), typical of current x86 cores.
struct Costs {
  double loads_per_cycle = 2, stores_per_cycle = 1, shuffles_per_cycle = 1;
  double issue_width = 4;           // instructions per cycle the front end sustains
  double call_cycles = 20;          // a libm call beyond its instructions' issue
  double div_cycles = 4;            // a division or square root beyond one FMA slot
  double gather_cycles_per_lane = 1;
  double fp_latency = 4;            // cycles from one FMA/add to the next that reads its result
  double launch_seconds = 3e-6;     // waking the thread pool for a parallel loop
  double call_seconds = 1e-7;       // calling the kernel
  double overlap = 0.2;             // share of the non-limiting costs that does not overlap the limiting one
  double single_thread_dram = 0.6;  // share of the machine's bandwidth one thread draws
};
constexpr Costs kCosts;

}  // namespace

std::string_view feature_name(Feature f) { return kFeatureNames.at(static_cast<size_t>(f)); }

std::string StaticFeatures::describe() const {
  std::string s;
  for (int i = 0; i < kFeatureCount; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v[static_cast<size_t>(i)]);
    s += std::string(kFeatureNames[static_cast<size_t>(i)]) + "=" + buf + "\n";
  }
  return s;
}

void estimate(StaticFeatures& f, const HardwareDesc& hw) {
  using F = Feature;
  const double speedup = std::max(1.0, f[F::ParallelSpeedup]);
  const bool asm_counts = f[F::AsmAvailable] > 0 && f[F::AsmIterations] > 0;
  // Instruction counts over the run: the machine code's when it could be
  // scaled, else the loop IR's.
  double fp, loads, stores, shuffles, gather_lanes, calls, divs, instructions;
  if (asm_counts) {
    fp = f[F::AsmFma] + f[F::AsmFloatArith];
    loads = f[F::AsmLoads];
    stores = f[F::AsmStores];
    shuffles = f[F::AsmShuffles];
    gather_lanes = f[F::AsmGathers] * hw.vector_bytes / 4.0;
    calls = f[F::AsmCalls];
    divs = f[F::IrDiv];
    instructions = f[F::AsmInstructions];
  } else {
    fp = f[F::IrFma] + f[F::IrMul] + f[F::IrAdd] + f[F::IrDiv] + f[F::IrOtherFloat] + 15 * f[F::IrMathVector];
    loads = f[F::IrLoads];
    stores = f[F::IrStores];
    shuffles = f[F::IrShuffles] + f[F::IrBroadcasts];
    gather_lanes = f[F::IrGatherLanes] + f[F::IrScatterLanes];
    calls = f[F::IrMathScalar];
    divs = f[F::IrDiv];
    instructions = fp + loads + stores + shuffles + calls + f[F::IrIntOps] + f[F::IrLocalAccesses];
  }
  double ports = std::max({fp / hw.fma_units, loads / kCosts.loads_per_cycle, stores / kCosts.stores_per_cycle,
                           shuffles / kCosts.shuffles_per_cycle});
  // Loop-carried accumulation: an iteration of an innermost loop cannot
  // finish before its longest accumulation chain (machine code: the
  // instructions into one register per iteration; loop IR: one per iteration).
  double latency = asm_counts ? f[F::AsmChain] * kCosts.fp_latency / speedup
                              : f[F::IrChainedIterations] * kCosts.fp_latency;
  double compute = ports + calls * kCosts.call_cycles + divs * kCosts.div_cycles +
                   gather_lanes * kCosts.gather_cycles_per_lane;
  f[F::Ghz] = hw.ghz;
  f[F::LatencyCycles] = latency;
  f[F::ComputeCycles] = std::max(compute / speedup, latency);
  f[F::FrontEndCycles] = instructions / kCosts.issue_width / speedup;
  f[F::L1Cycles] = (f[F::IrLoadBytes] + f[F::IrStoreBytes]) / hw.l1_bytes_per_cycle / speedup;
  f[F::L2Cycles] = f[F::TrafficL2] / hw.l2_bytes_per_cycle / speedup;
  f[F::L3Cycles] = f[F::TrafficL3] / hw.l3_bytes_per_cycle / speedup;
  double bandwidth = hw.mem_gbps * 1e9 * (speedup >= 1.5 ? 1.0 : kCosts.single_thread_dram);
  f[F::DramSeconds] = f[F::TrafficDram] / bandwidth;
  f[F::OverheadSeconds] = kCosts.call_seconds + f[F::ParallelLaunches] * kCosts.launch_seconds;

  // Roofline-like: the limiting resource plus a share of the others.
  auto soft_max = [](std::initializer_list<double> xs) {
    double m = 0, sum = 0;
    for (double x : xs) {
      m = std::max(m, x);
      sum += x;
    }
    return m + kCosts.overlap * (sum - m);
  };
  double hz = hw.ghz * 1e9;
  double core = soft_max({f[F::ComputeCycles], f[F::FrontEndCycles], f[F::L1Cycles], f[F::L2Cycles],
                          f[F::L3Cycles]}) / hz;
  f[F::EstSeconds] = soft_max({core, f[F::DramSeconds]}) + f[F::OverheadSeconds];
}

StaticFeatures static_features(const Candidate& c, const HardwareDesc& hw, int threads) {
  TESSERA_CHECK(c.kernel != nullptr, "static features: candidate without a kernel");
  using F = Feature;
  StaticFeatures f;
  LoopFeatures lf = loop_features(*c.kernel, hw, threads);
  const OpCounts& t = lf.total;
  f[F::IrFlops] = t[Op::Flops];
  f[F::IrFma] = t[Op::Fma];
  f[F::IrMul] = t[Op::Mul];
  f[F::IrAdd] = t[Op::Add];
  f[F::IrDiv] = t[Op::Div];
  f[F::IrMathVector] = t[Op::MathVector];
  f[F::IrMathScalar] = t[Op::MathScalar];
  f[F::IrOtherFloat] = t[Op::OtherFloat];
  f[F::IrIntOps] = t[Op::IntOps];
  f[F::IrLoads] = t[Op::Loads];
  f[F::IrStores] = t[Op::Stores];
  f[F::IrLoadBytes] = t[Op::LoadBytes];
  f[F::IrStoreBytes] = t[Op::StoreBytes];
  f[F::IrGatherLanes] = t[Op::GatherLanes];
  f[F::IrScatterLanes] = t[Op::ScatterLanes];
  f[F::IrShuffles] = t[Op::Shuffles];
  f[F::IrBroadcasts] = t[Op::Broadcasts];
  f[F::IrLocalAccesses] = t[Op::LocalAccesses];
  f[F::IrVectorLanes] = lf.vector_lanes;
  f[F::IrLoops] = lf.loops;
  f[F::IrMaxDepth] = lf.max_depth;
  f[F::IrInnermostExtent] = lf.innermost_extent;
  f[F::IrUnrolledExtent] = lf.unrolled_extent;
  f[F::IrStoresPerInner] = lf.stores_per_inner;
  f[F::IrChainedIterations] = lf.chained_iterations;
  f[F::ParallelExtent] = lf.parallel_extent;
  f[F::ParallelBalance] = lf.parallel_balance;
  f[F::ParallelSpeedup] = lf.parallel_speedup;
  f[F::ParallelLaunches] = lf.parallel_launches;
  f[F::ParallelFraction] = lf.parallel_fraction;
  f[F::Footprint] = lf.footprint;
  f[F::TrafficL2] = lf.traffic_l2;
  f[F::TrafficL3] = lf.traffic_l3;
  f[F::TrafficDram] = lf.traffic_dram;

  if (c.jit) {
    AsmFeatures af = asm_features(c.jit->assembly());
    f[F::AsmAvailable] = 1;
    f[F::AsmLoops] = af.loops;
    f[F::AsmInnerLoops] = af.innermost_loops;
    // Iterations of the innermost loops over the run, by matching work (see
    // the header); straight-line code runs once.
    const AsmCounts& per = af.innermost_loops > 0 ? af.inner : af.whole;
    double iterations = 1;
    if (af.innermost_loops > 0) {
      if (per[AsmOp::Anchor] > 0 && t[Op::Anchor] > 0) iterations = t[Op::Anchor] / per[AsmOp::Anchor];
      else if (per[AsmOp::MemElements] > 0 && t[Op::MemElements] > 0)
        iterations = t[Op::MemElements] / per[AsmOp::MemElements];
      else iterations = 0;  // nothing to match: the machine-code counts stay unscaled
    }
    f[F::AsmIterations] = iterations;
    f[F::AsmIterInstructions] = per[AsmOp::Instructions];
    f[F::AsmIterFma] = per[AsmOp::Fma];
    f[F::AsmIterSpills] = per[AsmOp::Spills] + per[AsmOp::Reloads];
    f[F::AsmInstructions] = iterations * per[AsmOp::Instructions];
    f[F::AsmFma] = iterations * per[AsmOp::Fma];
    f[F::AsmFloatArith] = iterations * per[AsmOp::FloatArith];
    f[F::AsmScalarFloat] = iterations * per[AsmOp::ScalarFloat];
    f[F::AsmLoads] = iterations * per[AsmOp::Loads];
    f[F::AsmStores] = iterations * per[AsmOp::Stores];
    f[F::AsmBroadcasts] = iterations * per[AsmOp::Broadcasts];
    f[F::AsmShuffles] = iterations * per[AsmOp::Shuffles];
    f[F::AsmGathers] = iterations * per[AsmOp::Gathers];
    f[F::AsmSpills] = iterations * per[AsmOp::Spills];
    f[F::AsmReloads] = iterations * per[AsmOp::Reloads];
    f[F::AsmCalls] = iterations * per[AsmOp::Calls];
    f[F::AsmChain] = iterations * per[AsmOp::Chain];
  }
  estimate(f, hw);
  return f;
}

}  // namespace tessera::cost
