// A dataset's tasks (DIR/tasks.json): every distinct kernel of its networks
// (tasks deduplicated by task key across networks, as TenSet's all_tasks),
// each with, per ISA, the network it is measured in (the first that has it),
// its weight in every network that has it (how often it runs there), and the
// schedules sampled from the tuner's search space. Rank 0 of a collection
// builds it; every rank measures from it, so the schedules are the same on
// any number of ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dataset/networks.h"
#include "dataset/targets.h"
#include "tune/task_space.h"

namespace tessera::dataset {

// A task as compiled for one ISA (its search space is the ISA's).
struct IsaTask {
  std::string network;                 // the network its measurements run in
  std::map<std::string, int> weights;  // network name -> times the task runs in it
  // Sampled points (positional text, tune/task_space.h): the default schedule
  // ("") first, then distinct random points.
  std::vector<std::string> schedules;
  std::string skipped;  // why it has no schedules (the task is not tunable)
};

struct DatasetTask {
  std::string key;          // compile::key_text
  std::string description;  // as the first network describes it
  std::map<std::string, IsaTask> isas;  // by isa_name
  // The task as `target` measures it; null when the target's ISA lacks it.
  const IsaTask* on(const DatasetTarget& target) const;
};

struct DatasetIndex {
  std::vector<Network> networks;
  std::vector<DatasetTarget> targets;
  int per_task = 0;  // schedules sampled per task (fewer where the space is smaller)
  uint64_t seed = 0;
  // Timed runs of each measurement at least (collect --repeats); 0 in a
  // tasks.json written before collections recorded it (they ran the timer's
  // default, tune::TimerOptions::min_repeats).
  int repeats = 0;
  std::vector<DatasetTask> tasks;  // in order of first appearance (ISA, network, step)

  // Measurements the dataset holds when complete: (task, target, schedule).
  int64_t measurements() const;
  // True when `other` asks for the same dataset (networks, targets, per_task,
  // seed; repeats are how it is measured, not which measurements it holds).
  bool same_request(const DatasetIndex& other) const;
  std::string to_json() const;
  // Throws naming `source` and the field that is wrong.
  static DatasetIndex from_json(const std::string& text, const std::string& source);
};

// `per_task` points of `space` (the default, then distinct random valid
// ones), drawn by a generator seeded from `seed`, the task key and the ISA
// only: the same on every machine and rank count.
std::vector<std::string> sample_schedules(const tune::TaskSpace& space, const std::string& key, Isa isa, int per_task,
                                          uint64_t seed);

// Opens every network for each ISA of `targets` (as the tuner does:
// tune/model_config.h, fusion on, planned with the fusion profile
// `fusion_db`, "" the user's cache) and lists their tasks; `log` hears one
// line per network.
DatasetIndex build_index(const std::vector<Network>& networks, const std::vector<DatasetTarget>& targets,
                         int per_task, uint64_t seed, const std::function<void(const std::string&)>& log = {},
                         const std::string& fusion_db = "");

}  // namespace tessera::dataset
