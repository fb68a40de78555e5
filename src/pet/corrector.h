// PET's corrector (Wang et al., OSDI'21, §5.3 and Fig. 6): a partially
// equivalent mutant is wrong only in known boxes of its outputs (the
// verifier's report, pet/verifier.h); the corrector recomputes each wrong box
// with the ORIGINAL program restricted to that box, and writes the result
// over the mutant's output. The corrected graph equals the original
// everywhere, while most of the work stays in the (faster) mutant.
//
// How a box is recomputed (region back-propagation, pet/region.h): the box of
// an output is propagated backwards through the original's ops to the region
// of every value it needs — a convolution's window with strides, dilations,
// groups and pads, clipped to the input (what falls in the padding becomes
// explicit pads of the correction's convolution); MatMul/Gemm rows of A and
// columns of B with the whole reduced dim; permuted, shifted, clipped or
// overlapped regions through the data-movement ops. Activations and weights
// (both graph inputs) are Sliced to their regions, and the original's ops run
// on the slices with their attributes adjusted, producing exactly the box.
//
// Several boxes computed by one Conv/MatMul/Gemm node with the same weights
// and the same (padded) input shape are one correction kernel: their input
// slices concatenated along the batch axis (Conv) or the rows (MatMul/Gemm),
// one product, then split (PET's "Conv-1-2"); see batch_requests in
// corrector.cpp. Fewer, larger kernels.
//
// The merge: per output, the mutant's value and the corrections become the
// corrected output (see Merge below for the forms and what they cost when
// compiled). The corrected outputs are new values (names "pet_merge..."),
// in the mutant's output positions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/box.h"

namespace tessera::pet {

// How the corrections are written over the mutant's output. The Where form
// reads a full-size mask and a padded correction per box, and compiled it is
// the slower of the two on most shapes (tests/unit/test_pet_corrector_cost.cpp
// times both), so Slice+Concat is the default.
enum class Merge {
  // The output assembled by Slice + Concat from the mutant's slices and the
  // corrections, cut at every box bound, one dim after another (outputs
  // whose boxes overlap fall back to Where).
  SliceConcat,
  // Where(constant mask of the box, Pad(correction to the output's shape),
  // mutant) per box: one-to-one ops the fusion planner may join to the
  // kernel producing the mutant's output.
  Where,
};

struct CorrectOptions {
  Merge merge = Merge::SliceConcat;
  // Boxes of one Conv/MatMul/Gemm with equal shapes computed by one kernel
  // (batched along N or the rows); false: one kernel per box.
  bool batch = true;
};

struct CorrectReport {
  int boxes = 0;              // non-empty boxes corrected (over all outputs)
  int64_t elements = 0;       // output elements they cover
  int kernels = 0;            // nodes running the original's ops on regions (a batched group counts once)
  int batched_boxes = 0;      // region requests served by a batched kernel shared with others
  double flops = 0;           // FLOPs of the correction nodes (merge included)
  double original_flops = 0;  // FLOPs of the original graph
  double flops_share() const { return original_flops > 0 ? flops / original_flops : 0; }
  std::string to_string() const;  // "3 boxes (96 elements), 2 kernels (2 batched), 1.2% of the original's FLOPs"
};

// The corrected graph: the same inputs and outputs as `original` and `mutant`
// (which must match: count, order, dtypes and dims), equal to the original
// everywhere: the mutant's outputs with every box of wrong[k] (boxes of
// output k, [lo, hi) per dim) replaced by the original program computed on
// that box. Both graphs must have inferred, static types and opset >= 13.
// An empty box list leaves that output as the mutant computes it; the
// corrector fixes only what it is told.
// Errors (tessera::Error): an op of the original it cannot restrict (names
// the node and op), boxes outside an output or of the wrong rank (names the
// output), mismatched signatures.
std::unique_ptr<Graph> correct(const Graph& original, const Graph& mutant, const std::vector<std::vector<Box>>& wrong,
                               const CorrectOptions& options = {}, CorrectReport* report = nullptr);

}  // namespace tessera::pet
