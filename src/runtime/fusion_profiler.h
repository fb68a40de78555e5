// The measurements behind the fusion planner's "profile" decisions: a
// candidate block compiled as one kernel and timed on seeded random inputs,
// against its parts compiled and timed the same way.
#pragma once

#include <random>

#include "fusion/partition.h"
#include "runtime/executor.h"

namespace tessera::runtime {

// A tensor of type `t` (fully known) for timing runs: floats in [0.5, 1.5)
// (inside every op's domain), integers 1 to 3, random booleans.
Tensor profile_tensor(const TensorType& t, std::mt19937_64& rng);

// A ProfileFn for the planner over `g`, compiling for opts.isa on the
// global thread pool. The graph must outlive it.
fusion::ProfileFn make_fusion_profiler(const Graph& g, const ExecutorOptions& opts);

// The fusion plan for `g` under `opts`: planning with the profiling database
// (opts.fusion_db or the default path) and the profiler, or every node alone
// when opts.fusion is off.
fusion::Partition partition_model(const Graph& g, const ExecutorOptions& opts);

}  // namespace tessera::runtime
