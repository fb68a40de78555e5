// The pipelines, read top to bottom: what happens to a graph between import
// and fusion planning. `tessera passes` lists what each pass does.
#include "opt/pipeline.h"

namespace tessera {

// After import (or building a zoo model): on every model, whatever runs it.
const std::vector<std::string>& load_pipeline() {
  static const std::vector<std::string> passes = {
      "fold-constants",  // types inferred, constant subgraphs folded (off: only inferred)
      "fold-batchnorm",  // BatchNorm after Conv into the Conv's weights and bias
      "simplify",        // exact rewrites: cheaper ops, fewer ops for the fusion planner
      "math-rewrite",    // DNNFusion's associative / commutative / distributive rules
  };
  return passes;
}

// When the compiled runtime takes the graph, for the ISA's vector width.
const std::vector<std::string>& target_pipeline() {
  static const std::vector<std::string> passes = {
      "pet",                 // PET: measured-faster mutants of multi-linear subprograms (when on)
      "skip-padding-taps",   // atrous convolutions without their padding taps
      "pool-after-conv",     // average pools after the 1x1 convolutions narrowing their channels
      "separable-max-pool",  // 3x3x3 max pools as one pool per axis
      "blocked-layout",      // NCHWc convolutions, with 8 or more f32 lanes
      "dilation-phases",     // dilated 3x3 blocked convolutions on their phases, for winograd
      "winograd",            // 3x3 stride-1 blocked convolutions where it pays
      "fold-channel-scale",  // squeeze-excitation scales into the weights
  };
  return passes;
}

}  // namespace tessera
