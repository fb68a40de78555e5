// Train/test splits of a cost-model dataset, as TenSet makes them
// (research/costmodel.md §1.5): within each task (a share of every task's
// candidates on every target held out), by task (whole tasks held out), by
// target (one hardware target held out) and by network (every task of one
// network held out: TenSet's --hold-out). Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cost {

enum class Split { None, WithinTask, ByTask, ByTarget, ByNetwork };
// "none", "within-task", "by-task", "by-target", "by-network"; parse throws
// listing the names.
std::string split_name(Split s);
Split parse_split(const std::string& name);

// One measured candidate as a split sees it.
struct SplitItem {
  std::string task;                   // task key
  std::string target;                 // the target it was measured on
  std::vector<std::string> networks;  // the networks the task is in
};

struct SplitOptions {
  Split split = Split::None;
  double test_share = 0.1;  // within-task: of each task's candidates on a target; by-task: of the tasks
  std::string held_out;     // by-target: the target; by-network: the network
  uint64_t seed = 1;
};

// For each item, true when it is in the test part (None: every item is).
// Within-task and by-task hold out round(share × n), at least one, of a
// group of two or more (tasks: of all tasks), chosen by a generator seeded
// from `seed` and the group. Throws when by-target or by-network names no
// target or network of the items.
std::vector<bool> test_items(const std::vector<SplitItem>& items, const SplitOptions& options);

// k-fold cross-validation within task: each item's fold, 0..k-1. Each
// (task, target) group is shuffled by a generator seeded from `seed` and the
// group and dealt round the folds, so every item is in exactly one fold and
// a group's folds differ in size by at most one. k >= 2.
std::vector<int> within_task_folds(const std::vector<SplitItem>& items, int k, uint64_t seed);

}  // namespace tessera::cost
