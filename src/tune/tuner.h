// The auto-tuner: a model's distinct kernels (tasks, weighted by how often
// they run) searched over their schedule spaces within a time budget. The
// task scheduler (task_scheduler.h) gives rounds to the tasks whose progress
// lowers the model's latency most; each round the task's evolutionary search
// (search.h) proposes candidates, which a worker process measures
// (measure_worker.h) and the records file keeps (record.h): a restarted
// run re-measures nothing it already has. The last share of the budget
// measures each task's best again beside its default (the best of many
// noisy measurements is often lucky; records pool a schedule's
// measurements). Before the schedules, a share of the budget goes to graph
// choices (graph_choice.h: direct or which Winograd tile per convolution
// geometry, each timed in the whole model); the tasks searched are those of
// the graph they chose. Then the model guard (model_guard.h) times the model with
// the chosen schedules against the defaults and rejects the choices that do
// not pay in the model; at the end the model compiled with the records is
// timed against the defaults, interleaved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tune/graph_choice.h"
#include "tune/measure.h"
#include "tune/model_config.h"
#include "tune/record.h"
#include "tune/tune_report.h"

namespace tessera::tune {

struct TuneOptions {
  ModelConfig model;
  std::string records;              // the records file (appended to; resumed from)
  double budget_seconds = 600;      // wall time for the search (the closing comparison comes after)
  // "none": every candidate is measured. "static": Tuna's model ranks the
  // candidates (compiled, never run) through the search, and only the best
  // few of each task are measured after it. "xgb": XGBoost ranks each
  // round's proposals, the best of them are measured, and it is trained
  // again on every measurement so far (online, as TenSet's xgb model).
  // "attention": the attention model (cost/attention_model.h) the same way.
  std::string cost_model = "none";
  std::string cost_model_file;      // xgb, attention: a pre-trained model (tessera costmodel train) fine-tuned online; empty: from nothing
  CostLabel cost_label = CostLabel::Min;  // xgb, attention: which number of a candidate's repeats the model learns
  std::string hardware;             // static, xgb: a known_hardware() name; empty: probe this machine
  std::string coefficients;         // static: coefficients file (empty: default_coefficients_path(), if it exists)
  bool machine_code = true;         // static: features of the JIT's code too (else loop IR only)
  int validate_top = 3;             // static: candidates of each task measured after the search
  double static_search_share = 0.6; // static: share of the search's time ranking (the rest measures)
  // The last share of the budget measures each task's best again beside its
  // default, up to confirm_rounds times; once at least, past the budget if
  // need be (Tuner::confirm); 0: never.
  double confirm_share = 0.15;
  int confirm_rounds = 3;
  std::string exe;                  // the tessera executable (runs the measurement workers)
  MeasureOptions measure;
  double candidate_seconds = 60;    // time limit of one candidate (compile and measure)
  int per_round = 8;                // candidates a round measures
  uint64_t seed = 1;
  bool progress = true;             // a progress line on stderr
  int final_runs = 30;              // end-to-end runs of each model at the end (0: no comparison)
  // Runs of each model per comparison of the model guard (model_guard.h),
  // after the budget; 0: no guard (every task's best is applied).
  int guard_runs = 15;
  // The graph choices' share of the budget at most (graph_choice.h; 0:
  // none measured, though the records' choices still shape the graph), and
  // the interleaved rounds of each of their model comparisons.
  double graph_share = 0.25;
  int graph_runs = 15;
};

// Where fitted static-model coefficients are kept by default: the cache
// directory (TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
// ~/.cache/tessera), static_model.json.
std::string default_coefficients_path();

// Tunes the model; throws when it cannot be opened or the workers cannot start.
TuneReport tune_model(const TuneOptions& options);

}  // namespace tessera::tune
