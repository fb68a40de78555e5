// Features of a loop-IR kernel for the static cost model: operations by kind
// in machine vectors (a 16-lane f32 add is one AVX-512 instruction, two AVX2
// ones, a scalar add one), weighted by how often they run; loads and stores
// and their bytes; the loop structure (extents, innermost vector lanes,
// unrolling, the parallel loop and its balance over the threads); and the
// bytes each cache level must fetch, from every loop level's footprint
// against the cache sizes (footprint.h).
#pragma once

#include <array>
#include <string_view>

#include "cost/hardware.h"
#include "loop/stmt.h"

namespace tessera::cost {

// Operation counts, in machine instructions unless named otherwise.
enum class Op : int {
  Fma, Mul, Add, Div,      // float arithmetic; a multiply feeding an add counts as one FMA (the JIT contracts it)
  MathVector,              // vector transcendental calls (exp, tanh, ...): each one a polynomial of ~15 instructions
  MathScalar,              // scalar transcendental calls into libm
  OtherFloat,              // min/max, compares, selects, casts
  IntOps,                  // integer arithmetic outside index expressions
  Loads, Stores,           // memory instructions (a gathered lane counts as one)
  LoadBytes, StoreBytes,
  GatherLanes, ScatterLanes,  // lanes of non-contiguous vector accesses
  Shuffles,                // strided (2..4) vector loads: one wide load and a shuffle
  Broadcasts,              // scalars broadcast to vectors (not constants)
  LocalAccesses,           // loads/stores of small temporaries kept in registers
  Flops,                   // float operations on elements (an FMA is two)
  LaneOps, FloatOps,       // sum of lanes over float instructions, and their count (average lanes = ratio)
  Anchor,                  // float element-operations as the machine code counts them (asm_features.h)
  MemElements,             // elements loaded or stored
  kCount
};
inline constexpr int kOpCount = static_cast<int>(Op::kCount);
std::string_view op_name(Op op);  // "fma", "mul", ...

struct OpCounts {
  std::array<double, kOpCount> v{};
  double& operator[](Op op) { return v[static_cast<int>(op)]; }
  double operator[](Op op) const { return v[static_cast<int>(op)]; }
  void add(const OpCounts& o, double times) {
    for (int i = 0; i < kOpCount; ++i) v[i] += o.v[i] * times;
  }
};

struct LoopFeatures {
  OpCounts total;       // every operation times the trips of its enclosing loops
  OpCounts per_thread;  // the same, inside a parallel loop divided by its speedup over the threads
  int loops = 0, max_depth = 0;
  double innermost_extent = 0;   // trip count of the innermost loops, weighted by their work
  double vector_lanes = 1;       // average lanes of the float instructions
  double unrolled_extent = 1;    // product of the extents of loops marked unrolled still in the IR
  double stores_per_inner = 0;   // stores in an innermost loop's body (unrolled work), weighted by work
  // Iterations of innermost loops that accumulate into a location fixed over
  // the loop (x[c] = x[c] + ...): each waits for the previous one's result.
  double chained_iterations = 0;
  double parallel_extent = 0;    // iterations of the parallel loop doing the most work (0: none)
  double parallel_balance = 1;   // ceil(n/T) / (n/T) for that loop: 1 is perfect
  double parallel_speedup = 1;   // total work / per-thread work
  double parallel_launches = 0;  // times a parallel loop starts
  double parallel_fraction = 0;  // share of the work inside parallel loops
  double footprint = 0;          // bytes of lines the whole kernel touches
  double traffic_l2 = 0;         // bytes brought into L1 (from L2 or beyond), per the footprint model
  double traffic_l3 = 0;         // bytes brought into L2
  double traffic_dram = 0;       // bytes brought into L3 from memory (0 when everything fits the L3)
};

// Features of `kernel` on `hw` run by `threads` threads (0: hw.cores).
LoopFeatures loop_features(const loop::Kernel& kernel, const HardwareDesc& hw, int threads = 0);

}  // namespace tessera::cost
