// Fitting and judging the static cost model on measured candidates: the
// records of a tuning run (measurement-only search measures many candidates
// of every task) become one group per task — each valid record's schedule
// compiled again for its features, with its measured cost — and the groups'
// candidates are split in two: the model is fitted on one part and judged on
// the other, by TenSet's pairwise comparison accuracy and peak scores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/static_model.h"
#include "tune/model_config.h"
#include "tune/record.h"

namespace tessera::tune {

// The measured candidates of the model's tasks found in `records` for
// `target` (Target text): one per distinct schedule, its cost read from every
// repeat measurement as `label` says (none failed), with its static features.
// The static model predicts an undisturbed run, so Min is the default label.
std::vector<cost::FitGroup> measured_groups(const TuningModel& model, const RecordFile& records,
                                            const std::string& target, Isa isa, const cost::StaticModel& features_of,
                                            bool machine_code, CostLabel label = CostLabel::Min);

struct CostEvalOptions {
  double test_share = 0.5;  // of each task's candidates, held out of fitting
  uint64_t seed = 1;
  cost::FitOptions fit;
  // After judging, fit the coefficients the model keeps again, from the
  // defaults, on every candidate (the held-out half included): the figures
  // stay those of the half fit, the coefficients written learn from all.
  bool refit_all = true;
};

// The judged pairs of the tasks whose first node is one op ("tessera.ConvBlocked",
// "MatMul", ...): where the model wins and loses them.
struct KindAccuracy {
  std::string op;
  long pairs = 0;
  double pairwise_default = 0, pairwise_fitted = 0;
};

// A task's op: the first word of its description (cost::FitGroup::task).
std::string task_op(const std::string& task);

struct CostEval {
  int tasks = 0, train_candidates = 0, test_candidates = 0;
  // On the held-out candidates: before fitting (default coefficients) and after.
  double pairwise_default = 0, pairwise_fitted = 0;
  double peak1_default = 0, peak1_fitted = 0, peak5_default = 0, peak5_fitted = 0;
  double pairwise_train = 0;  // after fitting, on the candidates fitted on
  int refit_candidates = 0;   // candidates the kept coefficients were fitted on again (0: not refitted)
  std::vector<KindAccuracy> by_op;  // the judged pairs by task op, most pairs first
  std::string text() const;   // a short table
};

// Splits every group (seeded), fits `model` on the train parts and judges it
// on the test parts; the model keeps the fitted coefficients (with
// refit_all, those fitted again on every candidate of the groups).
CostEval fit_and_evaluate(cost::StaticModel& model, const std::vector<cost::FitGroup>& groups,
                          const CostEvalOptions& options);

// Judges `model` as it is on every candidate of the groups (records of
// other models than it was fitted on): the "fitted" fields hold the result.
CostEval judge(const cost::StaticModel& model, const std::vector<cost::FitGroup>& groups);

}  // namespace tessera::tune
