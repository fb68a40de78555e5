// A dataset's records as a learned cost model reads them: every measured
// schedule of every task on every target (its repeat measurements read as
// a label, tune::CostLabel: the min by default; schedules with an error left out), its program row
// (cost/program_features.h) computed from the task — re-extracted from the
// network the dataset measured it in (DIR/tasks.json, src/dataset) — lowered
// at the schedule for the target's ISA, with the target's hardware
// description from tasks.json (one per target: records of one target
// collected at different times, or probed before a probe fix, do not give it
// two hardware vectors; the first dataset directory naming a target wins). Rows are loop-IR features only (no
// machine code: JIT-compiling every record would take hours on a big
// dataset), the same as the tuner computes for `--cost-model xgb`.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost/attention_model.h"
#include "cost/dataset_split.h"
#include "cost/xgb_model.h"
#include "tune/record.h"

namespace tessera::tools {

struct CostSample {
  std::string task;      // task key
  std::string target;    // the dataset target's name ("avx2-t1")
  std::string schedule;  // positional schedule text
  double seconds = 0;    // measured cost, its records read as the dataset's label
  std::vector<float> row;
  // With keep_values only: the per-store matrix (cost/value_features.h) and
  // the hardware vector, for dumps and models that read them.
  std::vector<std::vector<double>> values;
  std::vector<double> hardware;
};

struct CostDataset {
  std::vector<CostSample> samples;
  // Per task key: the networks that have it and how often it runs in each.
  std::map<std::string, std::map<std::string, int>> weights;
  int skipped = 0;  // measured schedules whose task or schedule could not be rebuilt
  // Per record target text (Target::to_string), the dataset target's name.
  std::map<std::string, std::string> target_names;
};

// The samples `pick` accepts, grouped by (task, target): indices into d.samples.
using GroupKey = std::pair<std::string, std::string>;
std::map<GroupKey, std::vector<size_t>> sample_groups(const CostDataset& d, const std::function<bool(size_t)>& pick);

// The samples as a split sees them (cost/dataset_split.h): task, target
// and the networks the task is in.
std::vector<cost::SplitItem> split_items(const CostDataset& d);

// A sample as the attention model reads it (needs keep_values).
cost::ProgramSample program_sample(const CostSample& s);

// The groups' samples as ranking groups: program rows (xgb, pruning) or
// per-store samples (attention; needs keep_values), with their costs.
std::vector<cost::RankGroup> rank_groups(const CostDataset& d, const std::map<GroupKey, std::vector<size_t>>& groups);
std::vector<cost::SampleGroup> sample_groups_of(const CostDataset& d,
                                                const std::map<GroupKey, std::vector<size_t>>& groups);

// The samples of `record_files` whose tasks `dataset_dirs` (collection
// directories with a tasks.json) describe. `cache`, when given, is a file of
// rows computed before (JSON lines; made for this feature layout, else
// ignored and rewritten): rows found there are not computed again, and the
// file is rewritten with every row at the end. `keep_values` also keeps each
// sample's per-store matrix and hardware vector (every program is lowered
// then, cached or not). `label`: which number of a schedule's repeats is its
// cost. Progress lines on stderr.
CostDataset load_cost_dataset(const std::vector<std::string>& record_files, const std::vector<std::string>& dataset_dirs,
                              const std::string& cache, tune::CostLabel label, bool progress,
                              bool keep_values = false);

}  // namespace tessera::tools
