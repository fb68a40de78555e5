// Options of a short tuning run for the tests (src/tune/tuner.h): one kernel
// thread, a few seconds, no closing comparison, model guard, confirmation or
// graph choices, two or three timed runs a candidate, no progress line; the
// workers are the tessera CLI's (TESSERA_CLI, defined for the test files
// that tune).
#pragma once

#include <string>

#include "tune/tuner.h"

namespace tessera::testing {

inline tune::TuneOptions quick_tune_options(const std::string& model, const std::string& records) {
  tune::TuneOptions o;
  o.model.model = model;
  o.model.threads = 1;
  o.records = records;
  o.exe = TESSERA_CLI;
  o.budget_seconds = 4;
  o.per_round = 4;
  o.final_runs = 0;
  o.guard_runs = 0;
  o.progress = false;
  o.measure.timing.min_repeats = 2;
  o.measure.timing.max_repeats = 3;
  o.measure.timing.min_seconds = 0;
  o.confirm_rounds = 0;
  o.graph_share = 0;  // the graph choices' own tests turn them on
  return o;
}

}  // namespace tessera::testing
