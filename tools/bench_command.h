// `tessera bench`: repeated runs of a model timed (median, p10, p90
// latency, peak memory), compiled or by the reference interpreter; on
// request also against the interpreter (--vs-reference) or fusion off
// (--vs-no-fusion), round by round, and a per-step profile (--profile).
#pragma once

#include <cstdint>

#include "model_options.h"

namespace tessera::tools {

// Returns the process exit code; throws tessera::Error on bad input.
int cmd_bench(const Common& c, const Exec& e, int runs, int warmup, uint64_t seed, int profile, bool vs_reference,
              bool vs_no_fusion);

}  // namespace tessera::tools
