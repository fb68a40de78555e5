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
//            dropped, the group's fastest always kept.
// Every group keeps ceil(keep × size) programs, and at least two (one pair)
// of a group of two or more, so no task group is ever dropped whole; a group
// of one keeps it. The share kept overall is therefore at least `keep`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/xgb_model.h"

namespace tessera::cost {

enum class PruneMethod { Random, Cluster, Loss };
// "random", "cluster", "loss"; parse throws listing the names.
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

// For each group, whether each of its programs is kept (kept_count of them).
std::vector<std::vector<bool>> prune(const std::vector<RankGroup>& groups, const PruneOptions& options);

}  // namespace tessera::cost
