// Fitting and judging the static cost model on records (see cost_eval.h).
#include "tune/cost_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "cost/ranking_metrics.h"
#include "tune/candidate_program.h"
#include "tune/task_space.h"

namespace tessera::tune {

std::vector<cost::FitGroup> measured_groups(const TuningModel& model, const RecordFile& records,
                                            const std::string& target, Isa isa, const cost::StaticModel& features_of,
                                            bool machine_code, CostLabel label) {
  std::map<std::string, const compile::Task*> by_key;
  for (const runtime::TaskUse& u : model.tasks) by_key.emplace(compile::key_text(u.task->key), u.task.get());
  // One candidate per distinct schedule (its repeat measurements read as
  // `label`; a schedule with a failed measurement is left out).
  std::map<std::string, std::set<std::string>> of_task;
  for (const Record& r : records.records())
    if (r.ok() && r.target == target && by_key.count(r.task_key)) of_task[r.task_key].insert(r.schedule);
  std::vector<cost::FitGroup> groups;
  for (const auto& [key, schedules] : of_task) {
    if (schedules.size() < 2) continue;
    const compile::Task& task = *by_key.at(key);
    TaskSpace space(task, Target::for_isa(isa));
    cost::FitGroup g;
    g.task = task.describe();
    for (const std::string& text : schedules) {
      const double seconds = records.label_cost(key, target, text, label);
      if (!std::isfinite(seconds)) continue;
      std::optional<schedule::Schedule> s = space.schedule_at(schedule::SchedulePoint::parse(text));
      if (!s) continue;
      std::optional<CandidateProgram> c = compile_candidate(task, *s, isa, machine_code);
      if (!c) continue;
      g.features.push_back(features_of.features(c->candidate()));
      g.seconds.push_back(seconds);
      g.schedules.push_back(text);
    }
    codegen::jit_cache_clear();
    if (g.features.size() >= 2) groups.push_back(std::move(g));
  }
  return groups;
}

namespace {

void predict_groups(const cost::StaticModel& model, const std::vector<cost::FitGroup>& groups, cost::CostGroups& measured,
                    cost::CostGroups& predicted) {
  measured.clear();
  predicted.clear();
  for (const cost::FitGroup& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(model.predict_features(g.features));
  }
}

// The judged pairs by task op: accuracy with the default coefficients and
// with the model's, most pairs first.
std::vector<KindAccuracy> accuracy_by_op(const std::vector<cost::FitGroup>& groups, const cost::CostGroups& measured,
                                         const cost::CostGroups& by_default, const cost::CostGroups& fitted) {
  std::map<std::string, std::vector<size_t>> of_op;
  for (size_t g = 0; g < groups.size(); ++g) of_op[task_op(groups[g].task)].push_back(g);
  std::vector<KindAccuracy> out;
  for (const auto& [op, idx] : of_op) {
    cost::CostGroups y, d, f;
    for (size_t g : idx) {
      y.push_back(measured[g]);
      d.push_back(by_default[g]);
      f.push_back(fitted[g]);
    }
    KindAccuracy k;
    k.op = op;
    k.pairs = cost::comparable_pairs(y);
    if (k.pairs == 0) continue;
    k.pairwise_default = cost::pairwise_accuracy(y, d);
    k.pairwise_fitted = cost::pairwise_accuracy(y, f);
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(), [](const KindAccuracy& a, const KindAccuracy& b) { return a.pairs > b.pairs; });
  return out;
}

}  // namespace

std::string task_op(const std::string& task) { return task.substr(0, task.find(' ')); }

CostEval fit_and_evaluate(cost::StaticModel& model, const std::vector<cost::FitGroup>& groups,
                          const CostEvalOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<cost::FitGroup> train, test;
  CostEval e;
  for (const cost::FitGroup& g : groups) {
    std::vector<size_t> idx(g.features.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    const size_t n_test = std::max<size_t>(2, static_cast<size_t>(options.test_share * static_cast<double>(idx.size())));
    if (idx.size() < n_test + 2) continue;  // too few to both fit on and judge
    cost::FitGroup a, b;
    a.task = b.task = g.task;
    for (size_t k = 0; k < idx.size(); ++k) {
      cost::FitGroup& to = k < n_test ? b : a;
      to.features.push_back(g.features[idx[k]]);
      to.seconds.push_back(g.seconds[idx[k]]);
    }
    e.train_candidates += static_cast<int>(a.features.size());
    e.test_candidates += static_cast<int>(b.features.size());
    train.push_back(std::move(a));
    test.push_back(std::move(b));
  }
  e.tasks = static_cast<int>(train.size());
  cost::CostGroups measured, predicted;
  predict_groups(model, test, measured, predicted);
  e.pairwise_default = cost::pairwise_accuracy(measured, predicted);
  e.peak1_default = cost::peak_score(measured, predicted, 1);
  e.peak5_default = cost::peak_score(measured, predicted, 5);
  const cost::CostGroups by_default = predicted;
  if (!train.empty()) e.pairwise_train = model.fit(train, options.fit);
  predict_groups(model, test, measured, predicted);
  e.pairwise_fitted = cost::pairwise_accuracy(measured, predicted);
  e.peak1_fitted = cost::peak_score(measured, predicted, 1);
  e.peak5_fitted = cost::peak_score(measured, predicted, 5);
  e.by_op = accuracy_by_op(test, measured, by_default, predicted);
  if (options.refit_all && !train.empty()) {
    model.fit(groups, options.fit);  // from the defaults again
    for (const cost::FitGroup& g : groups) e.refit_candidates += static_cast<int>(g.features.size());
  }
  return e;
}

CostEval judge(const cost::StaticModel& model, const std::vector<cost::FitGroup>& groups) {
  CostEval e;
  e.tasks = static_cast<int>(groups.size());
  for (const cost::FitGroup& g : groups) e.test_candidates += static_cast<int>(g.features.size());
  cost::CostGroups measured, predicted, by_default;
  cost::StaticModel defaults = model;
  defaults.reset();
  predict_groups(defaults, groups, measured, by_default);
  predict_groups(model, groups, measured, predicted);
  e.pairwise_default = cost::pairwise_accuracy(measured, by_default);
  e.pairwise_fitted = cost::pairwise_accuracy(measured, predicted);
  e.peak1_fitted = cost::peak_score(measured, predicted, 1);
  e.peak5_fitted = cost::peak_score(measured, predicted, 5);
  e.by_op = accuracy_by_op(groups, measured, by_default, predicted);
  return e;
}

namespace {

// The by-op table's lines.
std::string op_table(const std::vector<KindAccuracy>& rows) {
  std::string out = "judged pairs by the task's first op      pairs  default   fitted\n";
  for (const KindAccuracy& k : rows) {
    char line[192];
    std::snprintf(line, sizeof line, "  %-36s %7ld %8.3f %8.3f\n", k.op.c_str(), k.pairs, k.pairwise_default,
                  k.pairwise_fitted);
    out += line;
  }
  return out;
}

}  // namespace

std::string CostEval::text() const {
  if (train_candidates == 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%d tasks, %d candidates (none fitted on)\n  pairwise %.3f   peak@1 %.3f   peak@5 %.3f\n", tasks,
                  test_candidates, pairwise_fitted, peak1_fitted, peak5_fitted);
    return buf + op_table(by_op);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d tasks: fitted on %d candidates, judged on %d others\n"
                "                    pairwise   peak@1   peak@5\n"
                "default            %9.3f %8.3f %8.3f\n"
                "fitted             %9.3f %8.3f %8.3f\n"
                "(pairwise accuracy on the candidates fitted on: %.3f)\n",
                tasks, train_candidates, test_candidates, pairwise_default, peak1_default, peak5_default,
                pairwise_fitted, peak1_fitted, peak5_fitted, pairwise_train);
  std::string out = buf;
  if (refit_candidates > 0)
    out += "(the coefficients kept: fitted again on all " + std::to_string(refit_candidates) + " candidates)\n";
  return out + op_table(by_op);
}

}  // namespace tessera::tune
