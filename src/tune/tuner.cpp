// The auto-tuner's loop (see tuner.h).
#include "tune/tuner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>

#include "codegen/llvm/jit.h"
#include "support/error.h"
#include "tune/measure_worker.h"
#include "tune/record.h"
#include "tune/record_schedules.h"
#include "tune/search.h"
#include "tune/task_scheduler.h"
#include "tune/task_space.h"

namespace tessera::tune {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_text(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

std::string ms_text(double s) {
  if (!std::isfinite(s)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return buf;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The progress line: on a terminal one line rewritten, else a line every few seconds.
class Progress {
 public:
  explicit Progress(bool on) : on_(on), tty_(on && ::isatty(2)) {}
  void show(const std::string& text, bool force = false) {
    if (!on_) return;
    if (!tty_ && !force && since(last_) < 10) return;
    last_ = Clock::now();
    if (tty_) std::fprintf(stderr, "\r\033[K%s", text.c_str());
    else std::fprintf(stderr, "%s\n", text.c_str());
  }
  void done() {
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  bool on_, tty_;
  Clock::time_point last_ = Clock::now() - std::chrono::hours(1);
};

// The model's end-to-end time with the default schedules and with the
// records, run interleaved; and how far apart their outputs are.
void compare_models(const TuneOptions& o, TuningModel& m, TuneReport& r) {
  runtime::ExecutorOptions eo = o.model.executor_options();
  eo.schedule_providers.push_back(std::make_shared<RecordSchedules>(o.records, Target::for_isa(o.model.isa)));
  runtime::Executor tuned(load_model(o.model.model, o.model.load_options()), eo);
  runtime::Executor& plain = *m.executor;
  std::vector<Tensor> a = plain.run(m.inputs), b = tuned.run(m.inputs);
  for (size_t i = 0; i < a.size(); ++i) r.output_difference = std::max(r.output_difference, relative_difference(b[i], a[i]));
  std::vector<double> ta, tb;
  for (int i = 0; i < o.final_runs; ++i) {
    for (int which = 0; which < 2; ++which) {
      runtime::Executor& e = (i + which) % 2 ? tuned : plain;
      auto t0 = Clock::now();
      e.run(m.inputs);
      (&e == &plain ? ta : tb).push_back(since(t0) * 1e3);
    }
  }
  r.model_default_ms = median(ta);
  r.model_tuned_ms = median(tb);
}

}  // namespace

double TuneReport::weighted_default_ms() const {
  double s = 0;
  for (const TaskReport& t : tasks)
    if (std::isfinite(t.default_seconds)) s += t.weight * t.default_seconds * 1e3;
  return s;
}

double TuneReport::weighted_tuned_ms() const {
  double s = 0;
  for (const TaskReport& t : tasks)
    if (std::isfinite(t.best_seconds)) s += t.weight * std::min(t.best_seconds, t.default_seconds) * 1e3;
  return s;
}

TuneReport tune_model(const TuneOptions& options) {
  TuneOptions o = options;
  TESSERA_CHECK(o.cost_model == "none", "unknown --cost-model '", o.cost_model, "' (available: none)");
  TESSERA_CHECK(!o.records.empty(), "tuning needs a records file (--records FILE)");
  TESSERA_CHECK(!o.exe.empty(), "tuning needs the tessera executable to start measurement workers");
  if (o.model.isa == Isa::Host) o.model.isa = codegen::host_isa();
  TESSERA_CHECK(codegen::host_supports(o.model.isa), "cannot tune for ", isa_name(o.model.isa),
                ": this host supports at most ", isa_name(codegen::host_isa()));
  o.measure.isa = o.model.isa;
  const auto start = Clock::now();
  Progress progress(o.progress);

  TuningModel m = open_model(o.model);
  const Target machine = Target::for_isa(o.model.isa);
  const std::string target = machine.to_string();
  RecordFile records(o.records);
  if (records.dropped_partial_lines() > 0 && o.progress)
    std::fprintf(stderr, "tune: %s ended in a line cut short (an interrupted run); it is dropped\n", o.records.c_str());

  TuneReport r;
  std::vector<std::unique_ptr<TaskSpace>> spaces;
  std::vector<std::unique_ptr<TaskSearch>> searches;
  std::vector<size_t> task_of;  // per tuned task: its index in r.tasks
  std::vector<double> weights;
  for (size_t i = 0; i < m.tasks.size(); ++i) {
    const compile::Task& t = *m.tasks[i].task;
    TaskReport tr;
    tr.key = compile::key_text(t.key);
    tr.description = t.describe();
    tr.weight = m.tasks[i].weight;
    try {
      auto space = std::make_unique<TaskSpace>(t, machine);
      tr.log10_space = space->log10_size();
      searches.push_back(std::make_unique<TaskSearch>(*space, o.seed * 1000003 + i));
      spaces.push_back(std::move(space));
      task_of.push_back(r.tasks.size());
      weights.push_back(tr.weight);
    } catch (const std::exception& e) {
      tr.skipped = e.what();
    }
    r.tasks.push_back(std::move(tr));
  }
  if (o.progress)
    std::fprintf(stderr, "tune: %zu tasks (%zu tunable) for %s, budget %s, records %s (%zu already)\n", r.tasks.size(),
                 spaces.size(), isa_name(o.model.isa).data(), duration_text(o.budget_seconds).c_str(),
                 o.records.c_str(), records.records().size());

  WorkerConfig wc{o.model, o.measure};
  MeasureWorker worker(o.exe, wc, o.candidate_seconds);
  TaskScheduler scheduler(weights);
  for (;;) {
    if (since(start) >= o.budget_seconds) break;
    int ti = scheduler.next();
    if (ti < 0) break;
    const size_t t = static_cast<size_t>(ti);
    TaskSearch& search = *searches[t];
    TaskReport& tr = r.tasks[task_of[t]];
    std::vector<schedule::SchedulePoint> points = search.propose(o.per_round);
    for (const schedule::SchedulePoint& p : points) {
      const std::string text = p.to_text();
      double cost;
      if (const Record* old = records.find(tr.key, target, text)) {
        cost = old->mean_cost();
        ++tr.reused;
        ++r.reused;
      } else {
        auto t0 = Clock::now();
        Measurement meas = worker.measure(tr.key, text);
        Record rec;
        rec.task_key = tr.key;
        rec.task = tr.description;
        rec.target = target;
        rec.schedule = text;
        rec.costs = meas.costs;
        rec.error = meas.error;
        rec.seconds_spent = since(t0);
        rec.timestamp = static_cast<int64_t>(std::time(nullptr));
        records.append(rec);
        cost = rec.mean_cost();
        ++tr.measured;
        ++r.measured;
        if (meas.error != MeasureError::None) {
          ++tr.errors;
          ++r.errors;
          if (p.stages.empty())  // the default schedule failed: nothing to compare with
            TESSERA_FAIL(tr.description, ": the default schedule could not be measured: ", meas.message);
        }
      }
      if (p.stages.empty()) tr.default_seconds = cost;
      search.observe(p, cost);
    }
    tr.best_seconds = search.best_cost();
    scheduler.update(t, search.best_cost());
    if (search.exhausted() || points.empty()) scheduler.retire(t);
    char line[512];
    std::snprintf(line, sizeof line, "[tune %s/%s] task %zu/%zu %.60s: %d trials, best %s ms (default %s) | model %.3f ms (default %.3f)",
                  duration_text(since(start)).c_str(), duration_text(o.budget_seconds).c_str(), task_of[t] + 1,
                  r.tasks.size(), tr.description.c_str(), tr.measured + tr.reused, ms_text(tr.best_seconds).c_str(),
                  ms_text(tr.default_seconds).c_str(), r.weighted_tuned_ms(), r.weighted_default_ms());
    progress.show(line);
  }
  progress.done();
  r.search_seconds = since(start);
  r.worker_restarts = worker.restarts();
  if (o.final_runs > 0) compare_models(o, m, r);
  return r;
}

std::string report_table(const TuneReport& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %-60s %6s %7s %12s %12s %7s %8s\n", "#", "task", "weight", "trials", "default ms",
                "tuned ms", "speedup", "errors");
  out += line;
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const TaskReport& t = r.tasks[i];
    std::string desc = t.description.size() > 60 ? t.description.substr(0, 57) + "..." : t.description;
    if (!t.skipped.empty()) {
      std::snprintf(line, sizeof line, "%-4zu %-60s %6d  not tuned: %s\n", i + 1, desc.c_str(), t.weight, t.skipped.c_str());
      out += line;
      continue;
    }
    const double best = std::min(t.best_seconds, t.default_seconds);
    std::snprintf(line, sizeof line, "%-4zu %-60s %6d %7d %12s %12s %6.2fx %8d\n", i + 1, desc.c_str(), t.weight,
                  t.measured + t.reused, ms_text(t.default_seconds).c_str(), ms_text(best).c_str(),
                  std::isfinite(best) && best > 0 ? t.default_seconds / best : 1.0, t.errors);
    out += line;
  }
  std::snprintf(line, sizeof line, "sum of weight x task time: default %.3f ms, tuned %.3f ms (%.2fx)\n",
                r.weighted_default_ms(), r.weighted_tuned_ms(),
                r.weighted_tuned_ms() > 0 ? r.weighted_default_ms() / r.weighted_tuned_ms() : 1.0);
  out += line;
  if (r.model_default_ms > 0) {
    std::snprintf(line, sizeof line,
                  "model end to end (median, interleaved): default %.3f ms, tuned %.3f ms (%.2fx); outputs differ by %.2g "
                  "(relative)\n",
                  r.model_default_ms, r.model_tuned_ms, r.model_default_ms / r.model_tuned_ms, r.output_difference);
    out += line;
  }
  std::snprintf(line, sizeof line, "search %s: %d measured, %d from records, %d errors, %d worker restarts\n",
                duration_text(r.search_seconds).c_str(), r.measured, r.reused, r.errors, r.worker_restarts);
  out += line;
  return out;
}

}  // namespace tessera::tune
