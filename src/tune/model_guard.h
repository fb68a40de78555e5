// The model guard: after a search, the model compiled with the tasks'
// chosen schedules is timed against the model with the default schedules,
// interleaved, and choices that do not pay in the model are dropped. Each
// task's choice won against its default timed alone, inside the model with
// every other task at its default; together the choices meet each other
// (other cache contents between kernels, other thread states) and their
// claimed gains carry the winner's luck of many noisy measurements, so the
// sum of the gains is no promise for the model. The guard makes one: the
// choices it keeps never made the model slower in its own measurement.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/graph_timer.h"

namespace tessera::tune {

// One task whose records choose a schedule other than its default.
struct GuardChoice {
  size_t task = 0;          // the caller's index of the task
  double claimed_gain = 0;  // weight × (default − chosen) seconds, as the records have it
};

// The model's time with the choices `with` over its time with the choices
// `base` (interleaved runs, time_interleaved's ratio): below 1, `with` is faster.
using CompareChoices = std::function<double(const std::vector<size_t>& with, const std::vector<size_t>& base)>;

struct GuardOptions {
  int groups = 4;             // the choices split into this many groups (at least 2), greatest claimed gain first
  int max_comparisons = 12;  // model comparisons at most (groups not judged by then are dropped)
};

struct GuardResult {
  std::vector<size_t> kept, dropped;  // tasks
  double ratio = 1;                   // the last comparison of what is kept against the defaults (1: none)
  int comparisons = 0;
};

// Which choices to keep. All of them when the model with all is faster than
// with none. Else groups, greatest claimed gain first: a group is kept when
// adding it to those kept so far makes the model faster, halved and judged
// again when not (one task: dropped). What is kept in the end is compared
// with the defaults once more, and dropped entirely unless faster.
GuardResult guard_choices(std::vector<GuardChoice> choices, const CompareChoices& compare,
                          const GuardOptions& options = {});

// The guard's comparisons time two executors in turns (runtime/graph_timer.h).
using runtime::Interleaved;
using runtime::time_interleaved;

}  // namespace tessera::tune
