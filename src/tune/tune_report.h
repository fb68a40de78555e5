// What a tuning run reports (tuner.h): per task its weight, measurements,
// and default and best times; for the model the end-to-end comparison, the
// model guard's verdicts and the graph choices; and the closing table that
// prints it all.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "tune/graph_choice.h"

namespace tessera::tune {

struct TaskReport {
  std::string key, description;
  int weight = 0;
  double log10_space = 0;
  double default_seconds = std::numeric_limits<double>::infinity();
  double best_seconds = std::numeric_limits<double>::infinity();
  int measured = 0, reused = 0, errors = 0;
  int ranked = 0;       // candidates the cost model predicted
  std::string skipped;  // why the task is not tuned (empty: tuned)
};

// A pre-trained learned model fine-tuned online beside the model as loaded
// (tuner.cpp's search_learned): the pairs of measurements both scored
// before learning them, how many each ordered right (a tie of scores
// half), and the rounds ranked once both scored, by the loaded one in
// loaded_ranked of them.
struct PrequentialTally {
  long long pairs = 0;
  double online_right = 0, loaded_right = 0;
  int rounds = 0, loaded_ranked = 0;
};

struct TuneReport {
  std::vector<TaskReport> tasks;
  double search_seconds = 0;
  int measured = 0, reused = 0, errors = 0, worker_restarts = 0;
  // End-to-end medians (ms) with the default schedules and with the records,
  // and the largest relative difference between their outputs.
  double model_default_ms = 0, model_tuned_ms = 0, output_difference = 0;
  // The model guard: choices it judged (tasks whose best is not the
  // default), those it rejected, its comparisons, and its last ratio of the
  // model's time with what it kept over the defaults' (1: nothing kept).
  int guard_choices = 0, guard_dropped = 0, guard_comparisons = 0;
  double guard_ratio = 1;
  GraphPhaseResult graph;  // the graph choices (graph_choice.h)
  PrequentialTally prequential;
  double weighted_default_ms() const;  // sum of weight × task time
  double weighted_tuned_ms() const;
};

// The closing table: each task's default and tuned time, then the model's.
std::string report_table(const TuneReport& r);

// Seconds as milliseconds with three decimals; "-" when not finite (never measured).
std::string ms_text(double seconds);

}  // namespace tessera::tune
