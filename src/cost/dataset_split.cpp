// Dataset splits (see dataset_split.h).
#include "cost/dataset_split.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "support/error.h"
#include "support/hash.h"
#include "support/name_table.h"

namespace tessera::cost {

namespace {

constexpr Named<Split> kSplitNames[] = {{Split::None, "none"},
                                        {Split::WithinTask, "within-task"},
                                        {Split::ByTask, "by-task"},
                                        {Split::ByTarget, "by-target"},
                                        {Split::ByNetwork, "by-network"}};

// Indices 0..n-1 in the order of a generator seeded from seed and `salt`.
std::vector<size_t> shuffled(size_t n, uint64_t seed, const std::string& salt) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(hash_combine(seed, hash_bytes(salt.data(), salt.size())));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// The items grouped by (task, target): indices into items.
std::map<std::pair<std::string, std::string>, std::vector<size_t>> task_groups(const std::vector<SplitItem>& items) {
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < items.size(); ++i) groups[{items[i].task, items[i].target}].push_back(i);
  return groups;
}

// Indices 0..n-1, the first round(share × n) of them (at least one when
// n >= 2) held out, shuffled by a generator seeded from seed and `salt`.
std::vector<bool> hold_out(size_t n, double share, uint64_t seed, const std::string& salt) {
  std::vector<bool> test(n, false);
  if (n < 2) return test;
  const std::vector<size_t> order = shuffled(n, seed, salt);
  size_t k = static_cast<size_t>(std::llround(share * static_cast<double>(n)));
  k = std::clamp<size_t>(k, 1, n - 1);
  for (size_t i = 0; i < k; ++i) test[order[i]] = true;
  return test;
}

}  // namespace

std::string split_name(Split s) { return std::string(table_name(kSplitNames, s)); }

Split parse_split(const std::string& name) { return table_parse(kSplitNames, name, "split"); }

std::vector<bool> test_items(const std::vector<SplitItem>& items, const SplitOptions& o) {
  std::vector<bool> test(items.size(), o.split == Split::None);
  switch (o.split) {
    case Split::None: break;
    case Split::WithinTask: {
      for (const auto& [key, members] : task_groups(items)) {
        std::vector<bool> t = hold_out(members.size(), o.test_share, o.seed, key.first + "/" + key.second);
        for (size_t k = 0; k < members.size(); ++k) test[members[k]] = t[k];
      }
      break;
    }
    case Split::ByTask: {
      std::set<std::string> keys;
      for (const SplitItem& it : items) keys.insert(it.task);
      const std::vector<std::string> tasks(keys.begin(), keys.end());
      std::vector<bool> t = hold_out(tasks.size(), o.test_share, o.seed, "tasks");
      std::set<std::string> held;
      for (size_t k = 0; k < tasks.size(); ++k)
        if (t[k]) held.insert(tasks[k]);
      for (size_t i = 0; i < items.size(); ++i) test[i] = held.count(items[i].task) > 0;
      break;
    }
    case Split::ByTarget:
    case Split::ByNetwork: {
      const bool by_target = o.split == Split::ByTarget;
      std::set<std::string> names;
      for (const SplitItem& it : items) {
        if (by_target) names.insert(it.target);
        else names.insert(it.networks.begin(), it.networks.end());
      }
      if (!names.count(o.held_out)) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        TESSERA_FAIL("split ", split_name(o.split), ": no ", by_target ? "target" : "network", " '", o.held_out,
                     "' in the data (it has: ", list, ")");
      }
      for (size_t i = 0; i < items.size(); ++i) {
        const SplitItem& it = items[i];
        test[i] = by_target ? it.target == o.held_out
                            : std::find(it.networks.begin(), it.networks.end(), o.held_out) != it.networks.end();
      }
      break;
    }
  }
  return test;
}

std::vector<int> within_task_folds(const std::vector<SplitItem>& items, int k, uint64_t seed) {
  TESSERA_CHECK(k >= 2, "cross-validation needs at least 2 folds, got ", k);
  std::vector<int> fold(items.size(), 0);
  for (const auto& [key, members] : task_groups(items)) {
    const std::vector<size_t> order = shuffled(members.size(), seed, key.first + "/" + key.second);
    for (size_t p = 0; p < order.size(); ++p) fold[members[order[p]]] = static_cast<int>(p % static_cast<size_t>(k));
  }
  return fold;
}

}  // namespace tessera::cost
