// Pruning a cost-model dataset (Verma et al. prune TenSet by up to 45-53%
// without losing pairwise accuracy; research/costmodel.md §2.1, their
// criterion unknown): which of each task group's measured programs to keep.
//   random   a uniform draw per group (the baseline the others must beat);
//   cluster  programs redundant in feature space: k-means over the group's
//            standardised program rows, k the number kept, and the program
//            nearest each centre kept (one representative per cluster);
//   loss     records that teach least dropped: an XGBoost ranking model
//            fitted to every group first, and the programs whose pairs it
//            already orders best (lowest mean RankNet loss over their pairs)
//            dropped, the group's fastest always kept;
//   twins    programs measured on several targets whose rows are alike (one
//            task and schedule on targets of one ISA at other thread counts,
//            PruneTwins): each such program keeps keep × copies of its
//            copies (drawn; at least one when that is one or more), spread so
//            that every group keeps about the share. What one target's copy
//            teaches, its twin on the other teaches nearly as well, and every
//            program still has a copy (program-level pruning thins a group
//            and its twin independently, losing both copies of some).
// Random, cluster and loss keep ceil(keep × size) programs of every group;
// twins about keep × size. Every method keeps at least two (one pair) of a
// group of two or more, so no task group is ever dropped whole; a group of
// one keeps it. The share kept overall is therefore at least about `keep`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/xgb_model.h"

namespace tessera::cost {

enum class PruneMethod { Random, Cluster, Loss, Twins };
// "random", "cluster", "loss", "twins"; parse throws listing the names.
std::string prune_method_name(PruneMethod m);
PruneMethod parse_prune_method(const std::string& name);

// How many of a group of `size` programs pruning to `keep` keeps.
size_t kept_count(size_t size, double keep);

struct PruneOptions {
  PruneMethod method = PruneMethod::Random;
  double keep = 0.5;       // share of each group kept, in (0, 1]
  uint64_t seed = 1;
  XgbOptions xgb;          // loss: the first model
};

// What the twins method needs beside the rows, per group: groups of one
// family hold copies of the same programs (the dataset's: one task on the
// targets of one ISA), and each program's key within the family (its
// schedule text). Programs whose key no other group of the family has are
// single: kept with probability `keep`.
struct PruneTwins {
  std::string family;
  std::vector<std::string> programs;
};

// For each group, whether each of its programs is kept (kept_count of them;
// twins: see above). `twins` (one per group) is needed by the twins method
// only, and refused naming the method when missing or of the wrong size.
std::vector<std::vector<bool>> prune(const std::vector<RankGroup>& groups, const PruneOptions& options,
                                     const std::vector<PruneTwins>& twins = {});

}  // namespace tessera::cost
