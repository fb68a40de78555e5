// PET's mutant generator: programs with a subprogram's inputs and outputs
// (count, order, dtype, dims) that the verifier then classifies as
// equivalent, partially equivalent (the corrector fixes the wrong boxes) or
// different.
//
// Two sources, as PET's code has them:
// - Fixed "preprocess" rewrites of one node or of a group of parallel nodes
//   (pet/mutants_conv.cpp, pet/mutants_merge.cpp): conv1x1-to-matmul,
//   avgpool-to-depthwise, group-to-conv, conv-to-group (weight dependent),
//   stride-to-unit, D2H / D2W / D2H+D2W (dilated conv -> regular conv on the
//   input split into its dilation phases, moved into the batch: exact for
//   any size, the input padded to equal phases and the output sliced back),
//   merge-parallel-conv(-padded), merge-batched-matmul.
// - PET's Algorithm 1 (pet/mutants_dfs.cpp): depth-first from the inputs of a
//   compute node, adding one op from a candidate set made for the node's
//   class (PET's statGraph classes: a normal conv gets N2H/H2N/N2W/W2N/C2H/C2W
//   R/T ops, the conv with the C2H/C2W weights and the original conv; a
//   dilated conv the D2H/D2W R/T ops and the conv with dilation 1; a matmul
//   its transposes and the left/right products; odd-sized convs Pad/Slice;
//   plus Add), recording every program of at most `depth` ops whose output
//   has the node's type. The programs found replace the node in the
//   subprogram. An R/T op counts as one op (two or three graph nodes).
//   Families N2H, N2W (two images of the batch side by side: partially
//   equivalent at the seam), C2H, C2W (channel pairs interleaved into rows or
//   columns, convolved with stride 2 there: exact) come from the DFS; a
//   program matching no family is labelled "dfs:" plus its op sequence.
//
// Mutants read the weights only through ops on weight inputs alone (Pad,
// Concat, Slice, Reshape, Transpose, Mul by a 0/1 mask), which fold into
// constants once the mutant is spliced into the model. Two exceptions hold
// new float constants: avgpool-to-depthwise's weights 1/count (the Z_p
// evaluator has to read them as the inverse of the count) and nothing else.
// conv-to-group is equal to the original only for the subprogram's own
// (block-diagonal) weights: it is marked weight_dependent, and the
// verifier's random weights will call it different.
//
// Mutants are deduplicated by structural hash (the original itself is
// dropped too). R/T reciprocity: an R/T applied to the output of an R/T whose
// composed element permutation is the identity is pruned; the composition is
// computed by permuting an index tensor through both (exact, once per pair of
// R/T kinds and shape, cached for the process).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/subprogram.h"

namespace tessera::pet {

struct MutantOptions {
  int depth = 3;                   // DFS depth in ops (PET: 3, 4 for some classes)
  int max_mutants = 64;            // per subprogram, after dedup (fixed ones first)
  std::set<std::string> families;  // empty: all; else the labels kept ("dfs" keeps every dfs:*)
  // Bound of the DFS for one subprogram, in ops tried (MutantReport::
  // dfs_states) over all its compute nodes: a count, not wall time, so what
  // it finds does not depend on the machine's load (0: no bound). A whole
  // single-conv DFS is a few hundred states, so 500 covers any single conv
  // and bounds subprograms of several.
  int max_dfs_states = 500;
  bool fixed = true;               // the preprocess families
  bool dfs = true;                 // Algorithm 1
  // When the caller's time ends (PET's search budget): past it, no further
  // mutant is built and the DFS stops (MutantReport::out_of_time). Unlike
  // max_dfs_states this depends on the load; it only cuts a search the
  // budget ends anyway.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct Mutant {
  std::shared_ptr<Graph> graph;
  std::string family;              // pet_design.md's label, or "dfs:<ops>"
  bool expect_equivalent = false;  // built as fully equivalent (the verifier decides)
  bool weight_dependent = false;   // equal only for the subprogram's own weights
  uint64_t hash = 0;
};

struct MutantReport {
  int dfs_programs = 0;            // programs the DFS recorded (before dedup)
  int dfs_states = 0;              // ops tried by the DFS
  int duplicates = 0;              // dropped by structural hash (or equal to the original)
  int reciprocal_pruned = 0;       // R/T after its inverse, not explored
  int truncated = 0;               // beyond max_mutants
  bool out_of_states = false;      // max_dfs_states stopped the DFS
  bool out_of_time = false;        // the deadline stopped the generation
  std::vector<std::string> skipped;  // nodes or families not handled, with the reason
  std::map<std::string, int> per_family;
  double milliseconds = 0;
};

// Mutants of `sub` (a standalone subprogram graph, pet/subprogram.h form) whose
// first `num_activations` inputs are activations and the rest weights;
// `weights` (optional, one tensor per weight input) enables the
// weight-dependent families. Never throws for an op it does not know: such
// nodes are skipped with the reason in the report.
std::vector<Mutant> generate_mutants(const Graph& sub, size_t num_activations, const MutantOptions& opts = {},
                                     MutantReport* report = nullptr, const std::vector<Tensor>* weights = nullptr);
inline std::vector<Mutant> generate_mutants(const Subprogram& sp, const MutantOptions& opts = {},
                                            MutantReport* report = nullptr) {
  return generate_mutants(*sp.graph, sp.num_activations, opts, report, &sp.weight_tensors);
}

}  // namespace tessera::pet
