// The load guard of a dataset collection: each record's paired baselines
// (the default schedule timed just before each repeat of the candidate,
// tune/model_timer.h) say how the machine behaved while it was measured.
// They judge the machine, never the candidate: a record whose baselines
// spread (max/min) or whose baseline median drifted off the task's
// reference was measured while something else ran, and the collection
// measures the candidate again (every record is kept: each is a real
// measurement, and a label such as the min of the repeats reads them all).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "tune/record.h"

namespace tessera::dataset {

struct LoadGuard {
  double spread = 0.10;  // re-measure when the baselines' max/min exceeds 1 + spread
  double drift = 0.10;   // ... or their median is off the task's reference by more than this share of it
  int remeasures = 2;    // at most this many more records of one candidate (0: no guard)
};

// Why `r` was measured on a disturbed machine ("baselines spread 23%",
// "baseline median 14% off the task's reference"); empty when its
// baselines are steady, when it has none (an error, an unpaired record), or
// (for the drift) when `reference` is 0.
std::string disturbed(const tune::Record& r, double reference, const LoadGuard& g);

// Each (task, machine)'s reference: the baseline median of its first
// record whose baselines do not spread (a task's first record is its
// default schedule; one measured during a burst of load would make every
// later record look drifted). Records are shown in the order they were
// measured; the first steady one of a task sets it, later ones leave it.
class GuardReferences {
 public:
  explicit GuardReferences(LoadGuard g) : guard_(g) {}
  void see(const tune::Record& r);
  // 0 until a steady record of the task was seen.
  double of(const std::string& task_key, const std::string& target) const;

 private:
  LoadGuard guard_;
  std::map<std::pair<std::string, std::string>, double> ref_;
};

}  // namespace tessera::dataset
