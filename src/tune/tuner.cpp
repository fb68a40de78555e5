// The auto-tuner's loop (see tuner.h).
#include "tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <ctime>
#include <memory>
#include <set>

#include "codegen/llvm/jit.h"
#include "cost/attention_model.h"
#include "cost/hardware.h"
#include "cost/program_features.h"
#include "cost/static_model.h"
#include "cost/xgb_model.h"
#include "fusion/profile_snapshot.h"
#include "tune/candidate_program.h"
#include "support/error.h"
#include "support/name_table.h"
#include "support/file_util.h"
#include "tune/measure_worker.h"
#include "tune/model_guard.h"
#include "tune/progress.h"
#include "tune/record.h"
#include "tune/record_schedules.h"
#include "tune/search.h"
#include "tune/task_scheduler.h"
#include "tune/task_space.h"

namespace tessera::tune {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The model's end-to-end time with the default schedules (and the
// estimate's graph) and with the records (their graph choices and
// schedules), run interleaved; and how far apart their outputs are.
void compare_models(const TuneOptions& o, const RecordFile& records, TuningModel& m, TuneReport& r) {
  runtime::ExecutorOptions eo = o.model.executor_options();
  eo.schedule_providers.push_back(std::make_shared<RecordSchedules>(records, Target::for_isa(o.model.isa)));
  runtime::Executor tuned(load_model(o.model.model, o.model.load_options()), eo);
  std::unique_ptr<runtime::Executor> estimate;  // the model without graph choices, when it has any
  if (!o.model.winograd_tiles.empty()) {
    ModelConfig c = o.model;
    c.winograd_tiles.clear();
    estimate = std::make_unique<runtime::Executor>(load_model(c.model, c.load_options()), c.executor_options());
  }
  runtime::Executor& plain = estimate ? *estimate : *m.executor;
  std::vector<Tensor> a = plain.run(m.inputs), b = tuned.run(m.inputs);
  r.output_difference = max_relative_difference(b, a);
  const Interleaved t = time_interleaved(plain, tuned, m.inputs, o.final_runs);
  r.model_default_ms = t.a_ms;
  r.model_tuned_ms = t.b_ms;
}

}  // namespace

std::string default_coefficients_path() {
  const std::string base = cache_directory();
  return base.empty() ? "" : base + "/static_model.json";
}

namespace {

// One tuning run: the model's tasks, their spaces and searches, the records
// and the worker, and the two ways of searching.
class Tuner {
 public:
  // `start`: when tuning began (the graph choices came first, within the
  // budget, appending to `records`, the records file as read at the start).
  Tuner(TuneOptions o, Clock::time_point start, GraphPhaseResult graph, RecordFile records)
      : o_(std::move(o)), start_(start), progress_(o_.progress), m_(open_model(o_.model)),
        machine_(Target::for_isa(o_.model.isa)), target_(machine_.to_string()), records_(std::move(records)),
        worker_(o_.exe, WorkerConfig{o_.model, o_.measure}, o_.candidate_seconds) {
    std::vector<double> weights;
    for (size_t i = 0; i < m_.tasks.size(); ++i) {
      const compile::Task& t = *m_.tasks[i].task;
      TaskReport tr;
      tr.key = compile::key_text(t.key);
      tr.description = t.describe();
      tr.weight = m_.tasks[i].weight;
      try {
        auto space = std::make_unique<TaskSpace>(t, machine_);
        tr.log10_space = space->log10_size();
        searches_.push_back(std::make_unique<TaskSearch>(*space, o_.seed * 1000003 + i));
        spaces_.push_back(std::move(space));
        report_of_.push_back(r_.tasks.size());
        weights.push_back(tr.weight);
      } catch (const std::exception& e) {
        tr.skipped = e.what();
      }
      r_.tasks.push_back(std::move(tr));
    }
    scheduler_ = std::make_unique<TaskScheduler>(weights);
    r_.measured += graph.measured;
    r_.reused += graph.reused;
    r_.errors += graph.errors;
    r_.graph = std::move(graph);
    if (o_.progress)
      std::fprintf(stderr, "tune: %zu tasks (%zu tunable) for %s, cost model %s, budget %s, records %s (%zu already)\n",
                   r_.tasks.size(), spaces_.size(), isa_name(o_.model.isa).data(), o_.cost_model.c_str(),
                   duration_text(o_.budget_seconds).c_str(), o_.records.c_str(), records_.records().size());
  }

  TuneReport run() {
    search_end_ = o_.budget_seconds * (1 - o_.confirm_share);
    if (o_.cost_model == "static") search_static();
    else if (o_.cost_model == "xgb" || o_.cost_model == "attention") search_learned();
    else search_measured();
    confirm();
    if (o_.guard_runs > 0) guard();
    progress_.done();
    r_.search_seconds = since(start_);
    r_.worker_restarts = worker_.restarts();
    if (o_.final_runs > 0) compare_models(o_, records_, m_, r_);
    return r_;
  }

 private:
  double elapsed() const { return since(start_); }

  // The measured cost of point `p` of tuned task `t`: from the records when
  // they have it (unless `again`), else measured by the worker and appended.
  double measure(size_t t, const schedule::SchedulePoint& p, bool again = false) {
    TaskReport& tr = r_.tasks[report_of_[t]];
    const std::string text = p.to_text();
    double cost;
    if (!again && records_.has(tr.key, target_, text)) {
      cost = records_.pooled_cost(tr.key, target_, text);
      ++tr.reused;
      ++r_.reused;
    } else {
      auto t0 = Clock::now();
      Measurement meas = worker_.measure(tr.key, text);
      records_.append(measured_record(meas, tr.key, tr.description, target_, text, since(t0)));
      cost = records_.pooled_cost(tr.key, target_, text);
      ++tr.measured;
      ++r_.measured;
      if (meas.error != MeasureError::None) {
        ++tr.errors;
        ++r_.errors;
        if (p.stages.empty())  // nothing to compare candidates with: the task is left as it is
          tr.skipped = "its default schedule could not be measured (" + std::string(measure_error_name(meas.error)) +
                       "): " + meas.message;
      }
    }
    if (p.stages.empty()) tr.default_seconds = cost;
    tr.best_seconds = std::min(tr.best_seconds, cost);
    return cost;
  }

  // The best schedule of each task measured again, alternating with its
  // default, heaviest tasks first: the best of many noisy measurements is
  // likely to have been lucky, and pooled costs (RecordFile::pooled_cost)
  // take its lead back unless it holds. Every task's best is measured a
  // second time even past the budget (one that loses its lead hands it to
  // the next, which is measured again in turn), so no best stands on one
  // measurement; further rounds, up to confirm_rounds more records of each
  // over all runs, while the budget lasts (confirm_rounds 0: none at all).
  // Then the report's costs are the pooled ones of what the records now choose.
  void confirm() {
    std::vector<size_t> order(spaces_.size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = t;
    auto weight = [&](size_t t) {
      const TaskReport& tr = r_.tasks[report_of_[t]];
      return std::isfinite(tr.default_seconds) ? tr.weight * tr.default_seconds : 0.0;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight(a) > weight(b); });
    // The task's best and its default measured once more; false when the
    // best is the default or has confirm_rounds further records already.
    auto again = [&](size_t t, int at_most) {
      TaskReport& tr = r_.tasks[report_of_[t]];
      const Record* best = tr.skipped.empty() ? records_.best(tr.key, target_) : nullptr;
      if (!best || best->schedule.empty() || records_.count(tr.key, target_, best->schedule) > at_most) return false;
      const schedule::SchedulePoint p = schedule::SchedulePoint::parse(best->schedule);
      if (records_.count(tr.key, target_, "") <= o_.confirm_rounds) measure(t, {}, true);
      measure(t, p, true);
      show(t, "confirming");
      return true;
    };
    auto confirm_once = [&] {
      if (o_.confirm_rounds > 0)
        for (size_t t : order)
          while (again(t, 1)) {
          }
    };
    confirm_once();
    for (int round = 1; round < o_.confirm_rounds; ++round)
      for (size_t t : order) {
        if (elapsed() >= o_.budget_seconds) break;
        again(t, o_.confirm_rounds);
      }
    confirm_once();  // a further round may have taken a best's lead to one measured once
    for (size_t t : order) {
      TaskReport& tr = r_.tasks[report_of_[t]];
      tr.default_seconds = records_.pooled_cost(tr.key, target_, "");
      const Record* best = records_.best(tr.key, target_);
      tr.best_seconds = best ? records_.pooled_cost(tr.key, target_, best->schedule) : tr.default_seconds;
    }
  }

  // The model with a set of tuned tasks' chosen schedules (the others at their defaults).
  std::unique_ptr<runtime::Executor> model_with(const std::vector<size_t>& chosen) const {
    runtime::ExecutorOptions eo = o_.model.executor_options();
    auto given = std::make_shared<runtime::SavedSchedules>();
    for (size_t t : chosen) {
      const TaskReport& tr = r_.tasks[report_of_[t]];
      const Record* best = records_.best(tr.key, target_);
      if (!best || best->schedule.empty()) continue;
      std::optional<schedule::Schedule> s = spaces_[t]->schedule_at(schedule::SchedulePoint::parse(best->schedule));
      if (s) given->by_key[m_.tasks[report_of_[t]].task->key] = *s;
    }
    eo.schedule_providers.push_back(given);
    return std::make_unique<runtime::Executor>(load_model(o_.model.model, o_.model.load_options()), eo);
  }

  // The model guard (model_guard.h): the tasks whose records choose a
  // schedule other than the default are judged in the model, and every
  // schedule of a rejected task that beats its default gets a
  // SlowerInModel verdict, so the records choose the default for it.
  void guard() {
    std::vector<GuardChoice> choices;
    for (size_t t = 0; t < spaces_.size(); ++t) {
      const TaskReport& tr = r_.tasks[report_of_[t]];
      const Record* best = tr.skipped.empty() ? records_.best(tr.key, target_) : nullptr;
      if (best && !best->schedule.empty())
        choices.push_back({t, tr.weight * (tr.default_seconds - tr.best_seconds)});
    }
    r_.guard_choices = static_cast<int>(choices.size());
    // The executors of the last sets compared (a kept set is the next comparison's base).
    std::vector<std::pair<std::vector<size_t>, std::unique_ptr<runtime::Executor>>> built;
    auto executor = [&](std::vector<size_t> set) -> runtime::Executor& {
      std::sort(set.begin(), set.end());
      if (set.empty()) return *m_.executor;
      for (auto& [s, e] : built)
        if (s == set) return *e;
      if (built.size() >= 2) built.erase(built.begin());
      built.emplace_back(set, model_with(set));
      return *built.back().second;
    };
    auto compare = [&](const std::vector<size_t>& with, const std::vector<size_t>& base) {
      runtime::Executor& b = executor(base);
      runtime::Executor& w = executor(with);
      const Interleaved t = time_interleaved(b, w, m_.inputs, o_.guard_runs);
      if (o_.progress) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "[tune %s] guarding: %zu of %zu choices %.3f ms against %zu: %.3f ms (ratio %.3f)",
                      duration_text(elapsed()).c_str(), with.size(), choices.size(), t.b_ms, base.size(), t.a_ms,
                      t.ratio);
        progress_.show(line);
      }
      return t.ratio;
    };
    const GuardResult g = guard_choices(choices, compare);
    r_.guard_dropped = static_cast<int>(g.dropped.size());
    r_.guard_comparisons = g.comparisons;
    r_.guard_ratio = g.ratio;
    for (size_t t : g.dropped) {
      TaskReport& tr = r_.tasks[report_of_[t]];
      std::set<std::string> schedules;
      for (const Record& rec : records_.records())
        if (rec.task_key == tr.key && rec.target == target_ && !rec.schedule.empty()) schedules.insert(rec.schedule);
      for (const std::string& text : schedules) {
        if (records_.rejected(tr.key, target_, text) ||
            !(records_.pooled_cost(tr.key, target_, text) < tr.default_seconds))
          continue;
        Record v;
        v.task_key = tr.key;
        v.task = tr.description;
        v.target = target_;
        v.schedule = text;
        v.error = MeasureError::SlowerInModel;
        v.timestamp = static_cast<int64_t>(std::time(nullptr));
        records_.append(v);
      }
      tr.best_seconds = tr.default_seconds;
    }
  }

  void show(size_t t, const char* phase) {
    const TaskReport& tr = r_.tasks[report_of_[t]];
    char line[512];
    std::snprintf(line, sizeof line,
                  "[tune %s/%s] %s task %zu/%zu %.50s: %d measured, %d ranked, best %s ms (default %s) | model %.3f ms "
                  "(default %.3f)",
                  duration_text(elapsed()).c_str(), duration_text(o_.budget_seconds).c_str(), phase,
                  report_of_[t] + 1, r_.tasks.size(), tr.description.c_str(), tr.measured + tr.reused, tr.ranked,
                  ms_text(tr.best_seconds).c_str(), ms_text(tr.default_seconds).c_str(), r_.weighted_tuned_ms(),
                  r_.weighted_default_ms());
    progress_.show(line);
  }

  // Every candidate measured; rounds go to tasks by the gradient scheduler.
  void search_measured() {
    while (elapsed() < search_end_) {
      int ti = scheduler_->next();
      if (ti < 0) break;
      const size_t t = static_cast<size_t>(ti);
      TaskSearch& search = *searches_[t];
      std::vector<schedule::SchedulePoint> points = search.propose(o_.per_round);
      for (const schedule::SchedulePoint& p : points) {
        search.observe(p, measure(t, p));
        if (!r_.tasks[report_of_[t]].skipped.empty()) break;
      }
      scheduler_->update(t, search.best_cost());
      if (search.exhausted() || points.empty() || !r_.tasks[report_of_[t]].skipped.empty()) scheduler_->retire(t);
      show(t, "measuring");
    }
  }

  // A learned model trained online (TenSet's xgb; the attention model the
  // same way): each round the task's search proposes four times per_round
  // points, the model (once it has learned anything) keeps the per_round it
  // ranks best, those are measured, and the model is trained again on every
  // measurement so far — from nothing, or on top of (xgb) or fine-tuned from
  // (attention) a pre-trained model file. Points it passes over are dropped.
  // A pre-trained model fine-tuned on a few hundred records of a new target
  // can rank worse than before (bench/COSTMODEL.md's transfers), so the model
  // as loaded is kept beside it: once fine-tuned, both score each round's
  // proposals, and the next round is ranked by the one that has ordered more
  // pairs of the measurements so far right, each judged before either
  // learned it (prequential accuracy; a tie goes to the model as loaded).
  void search_learned() {
    // The learned models read the target as `dataset collect` describes it:
    // the cores are the threads tuned for, so a pre-trained model sees the
    // hardware vector of the target it was trained or fine-tuned on.
    const cost::HardwareDesc hw = hardware(std::max(0, o_.model.threads));
    const bool attention = o_.cost_model == "attention";
    const int threads = o_.model.threads > 0 ? o_.model.threads : hw.cores;
    cost::XgbOptions xo;
    xo.rounds = 100;
    xo.seed = o_.seed;
    cost::XgbModel model(hw, threads, xo), loaded(hw, threads, xo);
    cost::AttentionOptions ao;
    ao.epochs = 20;
    ao.seed = o_.seed;
    ao.threads = threads;
    cost::AttentionModel att(hw, ao), att_loaded(hw, ao);
    const bool pre_trained = !o_.cost_model_file.empty();
    if (pre_trained) {
      if (attention) {
        att.load(o_.cost_model_file);
        att_loaded.load(o_.cost_model_file);
      } else {
        model.load(o_.cost_model_file);
        loaded.load(o_.cost_model_file);
      }
    }
    bool fine_tuned = false;  // the online model has learned this run's measurements (it differs from the loaded one)
    PrequentialTally& tally = r_.prequential;
    if (o_.progress)
      std::fprintf(stderr, "tune: %s model for %s (%s)\n", o_.cost_model.c_str(), hw.name.c_str(),
                   o_.cost_model_file.empty() ? "learned from nothing" : ("pre-trained: " + o_.cost_model_file).c_str());
    std::vector<cost::RankGroup> measured(spaces_.size());
    std::vector<cost::SampleGroup> measured_samples(spaces_.size());
    while (elapsed() < search_end_) {
      int ti = scheduler_->next();
      if (ti < 0) break;
      const size_t t = static_cast<size_t>(ti);
      TaskSearch& search = *searches_[t];
      std::vector<schedule::SchedulePoint> points = search.propose(o_.per_round * 4);
      std::vector<std::vector<float>> rows(points.size());
      std::vector<cost::ProgramSample> samples(points.size());
      std::vector<bool> lowered(points.size(), false);
      std::vector<size_t> order;
      for (size_t i = 0; i < points.size(); ++i) {
        std::optional<schedule::Schedule> s = spaces_[t]->schedule_at(points[i]);
        std::optional<CandidateProgram> c;
        if (s) c = compile_candidate(spaces_[t]->task(), *s, o_.model.isa, false);
        if (c && attention) samples[i] = cost::AttentionModel::sample_of(cost::Candidate{&c->kernel, nullptr}, hw);
        else if (c) rows[i] = cost::program_features(cost::Candidate{&c->kernel, nullptr}, model.hardware(), model.threads());
        lowered[i] = c.has_value();
        if (c || points[i].stages.empty()) order.push_back(i);  // the default is measured even when it does not lower here
      }
      // Each point's score by the online model and by the model as loaded (NaN: not scored).
      const double unscored = std::numeric_limits<double>::quiet_NaN();
      std::vector<double> online_score(points.size(), unscored), loaded_score(points.size(), unscored);
      if (attention ? att.trained() : model.trained()) {
        std::vector<size_t> ranked;
        std::vector<std::vector<float>> known;
        std::vector<cost::ProgramSample> known_samples;
        for (size_t i : order)
          if (lowered[i] && !points[i].stages.empty()) {
            ranked.push_back(i);
            if (attention) known_samples.push_back(samples[i]);
            else known.push_back(rows[i]);
          }
        auto predict = [&](bool as_loaded) {
          if (attention) return (as_loaded ? att_loaded : att).predict_samples(known_samples);
          return (as_loaded ? loaded : model).predict_rows(known);
        };
        const std::vector<double> online = predict(false);
        std::vector<double> score = online;
        if (fine_tuned) {
          const std::vector<double> first = predict(true);
          for (size_t k = 0; k < ranked.size(); ++k) {
            online_score[ranked[k]] = online[k];
            loaded_score[ranked[k]] = first[k];
          }
          ++tally.rounds;
          if (tally.loaded_right >= tally.online_right) {
            score = first;
            ++tally.loaded_ranked;
          }
        }
        std::vector<size_t> by(ranked.size());
        for (size_t k = 0; k < by.size(); ++k) by[k] = k;
        std::stable_sort(by.begin(), by.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
        std::vector<size_t> next;
        for (size_t i : order)
          if (points[i].stages.empty()) next.push_back(i);  // the default first: every task's is measured
        for (size_t k : by) next.push_back(ranked[k]);
        order = std::move(next);
        r_.tasks[report_of_[t]].ranked += static_cast<int>(ranked.size());
      }
      if (order.size() > static_cast<size_t>(o_.per_round)) order.resize(static_cast<size_t>(o_.per_round));
      std::vector<std::pair<size_t, double>> judged;  // points both models scored, with their measured cost
      for (size_t i : order) {
        const double cost = measure(t, points[i]);
        search.observe(points[i], cost);
        if (std::isfinite(cost) && !std::isnan(online_score[i])) judged.push_back({i, cost});
        // The model learns the label of the candidate's records; the search keeps the pooled cost.
        const double label = records_.label_cost(r_.tasks[report_of_[t]].key, target_, points[i].to_text(), o_.cost_label);
        if (std::isfinite(cost) && cost > 0 && std::isfinite(label) && label > 0 && lowered[i]) {
          if (attention) {
            measured_samples[t].programs.push_back(samples[i]);
            measured_samples[t].seconds.push_back(label);
          } else {
            measured[t].rows.push_back(rows[i]);
            measured[t].seconds.push_back(label);
          }
        }
        if (!r_.tasks[report_of_[t]].skipped.empty()) break;
      }
      for (size_t a = 0; a < judged.size(); ++a)
        for (size_t b = a + 1; b < judged.size(); ++b) {
          const size_t i = judged[a].first, j = judged[b].first;
          const double ci = judged[a].second, cj = judged[b].second;
          if (ci == cj) continue;
          ++tally.pairs;
          // Right: the faster scored higher; a tie of scores counts half.
          auto right = [&](const std::vector<double>& s) {
            const double d = (ci < cj ? 1 : -1) * (s[i] - s[j]);
            return d > 0 ? 1.0 : d == 0 ? 0.5 : 0.0;
          };
          tally.online_right += right(online_score);
          tally.loaded_right += right(loaded_score);
        }
      if (attention) att.update(measured_samples);
      else model.update(measured);
      fine_tuned = pre_trained && (attention ? att.trained() : model.trained());
      scheduler_->update(t, search.best_cost());
      if (search.exhausted() || points.empty() || !r_.tasks[report_of_[t]].skipped.empty()) scheduler_->retire(t);
      show(t, "measuring");
    }
  }

  // The machine a cost model predicts for: --hardware's known description,
  // else this one probed, with `cores` cores (0: all of them).
  cost::HardwareDesc hardware(int cores = 0) const {
    cost::HardwareDesc hw =
        o_.hardware.empty() ? cost::probe_hardware(o_.model.isa, cores) : cost::find_hardware(o_.hardware);
    TESSERA_CHECK(hw.isa == o_.model.isa, "hardware '", hw.name, "' is ", isa_name(hw.isa), " but tuning is for ",
                  isa_name(o_.model.isa));
    return hw;
  }

  std::unique_ptr<cost::StaticModel> static_model() {
    const cost::HardwareDesc hw = hardware();
    auto model = std::make_unique<cost::StaticModel>(hw, o_.model.threads > 0 ? o_.model.threads : 0);
    std::string path = o_.coefficients.empty() ? default_coefficients_path() : o_.coefficients;
    bool fitted = false;
    if (!path.empty() && std::filesystem::exists(path)) {
      try {
        model->load(path);
        fitted = true;
      } catch (const Error& e) {
        TESSERA_CHECK(o_.coefficients.empty(), e.what());  // a file given must have this machine
        // The cache's file has no usable entry for this machine (another
        // machine's, or written before the model's terms changed): say so.
        if (o_.progress)
          std::fprintf(stderr, "tune: not using %s (%s); 'tessera tune-fit' fits this machine's coefficients\n",
                       path.c_str(), e.what());
      }
    } else {
      TESSERA_CHECK(o_.coefficients.empty(), "coefficients file '", o_.coefficients, "' does not exist");
    }
    if (o_.progress)
      std::fprintf(stderr, "tune: static model for %s (%s coefficients%s%s)\n", hw.name.c_str(),
                   fitted ? "fitted" : "default", fitted ? " from " : "", fitted ? path.c_str() : "");
    return model;
  }

  // Tuna: the search ranks candidates by the static model only; then the
  // best few of each task are measured (and the default), heaviest tasks first.
  void search_static() {
    std::unique_ptr<cost::StaticModel> model = static_model();
    const double search_end = search_end_ * o_.static_search_share;
    while (elapsed() < search_end) {
      int ti = scheduler_->next();
      if (ti < 0) break;
      const size_t t = static_cast<size_t>(ti);
      TaskSearch& search = *searches_[t];
      std::vector<schedule::SchedulePoint> points = search.propose(o_.per_round * 4);
      std::vector<schedule::Schedule> schedules;
      for (const schedule::SchedulePoint& p : points) schedules.push_back(*spaces_[t]->schedule_at(p));
      std::vector<double> predicted =
          predict_schedules(*model, spaces_[t]->task(), schedules, o_.model.isa, o_.machine_code);
      for (size_t i = 0; i < points.size(); ++i) search.observe(points[i], predicted[i]);
      r_.tasks[report_of_[t]].ranked += static_cast<int>(points.size());
      scheduler_->update(t, search.best_cost());
      if (search.exhausted() || points.empty()) scheduler_->retire(t);
      codegen::jit_cache_clear();  // candidates are compiled once: keep memory flat
      show(t, "ranking");
    }
    // Measure: the default and the best predicted, level by level over the
    // tasks (heaviest by predicted time first), while the budget lasts.
    std::vector<size_t> order(spaces_.size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = t;
    const std::vector<double>& predicted_best = scheduler_->best();
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      auto w = [&](size_t t) {
        const double c = std::isfinite(predicted_best[t]) ? predicted_best[t] : 0;
        return r_.tasks[report_of_[t]].weight * c;
      };
      return w(a) > w(b);
    });
    for (int level = 0; level <= o_.validate_top; ++level) {
      for (size_t t : order) {
        if (elapsed() >= search_end_ && level > 0) return;
        if (!r_.tasks[report_of_[t]].skipped.empty()) continue;
        const auto& pop = searches_[t]->population();
        if (level == 0) {
          measure(t, {});
        } else {
          // The level-th best predicted point other than the default.
          int seen = 0;
          for (const auto& [cost, p] : pop) {
            if (p.stages.empty()) continue;
            if (++seen == level) {
              measure(t, p);
              break;
            }
          }
        }
        show(t, "measuring");
      }
    }
  }

  TuneOptions o_;
  Clock::time_point start_;
  Progress progress_;
  TuningModel m_;
  Target machine_;
  std::string target_;
  RecordFile records_;
  MeasureWorker worker_;
  TuneReport r_;
  std::vector<std::unique_ptr<TaskSpace>> spaces_;
  std::vector<std::unique_ptr<TaskSearch>> searches_;
  std::vector<size_t> report_of_;  // per tuned task: its index in r_.tasks
  std::unique_ptr<TaskScheduler> scheduler_;
  double search_end_ = 0;  // the search's share of the budget (then confirm())
};

}  // namespace

TuneReport tune_model(const TuneOptions& options) {
  TuneOptions o = options;
  check_one_of(o.cost_model, {"none", "static", "xgb", "attention"}, "--cost-model");
  TESSERA_CHECK(o.cost_model_file.empty() || o.cost_model == "xgb" || o.cost_model == "attention",
                "--cost-model-file is for --cost-model xgb or attention");
  TESSERA_CHECK(o.cost_model_file.empty() || std::filesystem::exists(o.cost_model_file), "cost model file '",
                o.cost_model_file, "' does not exist");
  TESSERA_CHECK(!o.records.empty(), "tuning needs a records file (--records FILE)");
  TESSERA_CHECK(!o.exe.empty(), "tuning needs the tessera executable to start measurement workers");
  if (o.model.isa == Isa::Host) o.model.isa = codegen::host_isa();
  TESSERA_CHECK(codegen::host_supports(o.model.isa), "cannot tune for ", isa_name(o.model.isa),
                ": this host supports at most ", isa_name(codegen::host_isa()));
  o.measure.isa = o.model.isa;
  TESSERA_CHECK(o.graph_share >= 0 && o.graph_share <= 1, "the graph choices' share of the budget must be in [0, 1], got ",
                o.graph_share);
  // The tuner and its workers plan with one fusion profile, which no other
  // process changes during the run (fusion/profile_snapshot.h); its workers
  // are stopped (the Tuner gone) before it is merged back.
  fusion::ProfileSnapshot profile(o.model.fusion_db);
  o.model.fusion_db = profile.path();
  // The graph choices first: the tasks are those of the graph they choose.
  // The records file is read once; both phases append to what was read.
  const Clock::time_point start = Clock::now();
  RecordFile records(o.records);
  if (records.dropped_partial_lines() > 0 && o.progress)
    std::fprintf(stderr, "tune: %s ended in a line cut short (an interrupted run); it is dropped\n", o.records.c_str());
  GraphPhaseResult graph;
  {
    Progress progress(o.progress);
    GraphPhaseOptions go;
    go.max_seconds = o.graph_share * o.budget_seconds;
    go.runs = o.graph_runs;
    go.tolerance = o.measure.tolerance;
    go.budget_seconds = o.budget_seconds;
    graph = tune_graph_choices(o.model, records, Target::for_isa(o.model.isa).to_string(), go, progress);
    progress.done();
  }
  o.model.winograd_tiles = graph.applied;
  return Tuner(o, start, std::move(graph), std::move(records)).run();
}

}  // namespace tessera::tune
