// Graph-level tuning choices: the Winograd pass's form per convolution
// geometry (opt/winograd.h) — direct, F(2x2) or F(4x4) where its error
// bound allows — tried in the whole model and kept where the model runs
// faster. A choice changes several tasks at once (the transforms and the
// product, or one direct convolution), so no task's time can judge it: the
// model with one geometry's choice changed is timed against the model as
// the estimate makes it, interleaved (runtime/graph_timer.h), after its
// outputs were checked against the estimate's model's. Each measurement is
// a record (task key "winograd-choice:<geometry>", schedule "tile=T") in the
// tuner's records file, so a resumed run re-measures nothing and
// `compile|run|bench --records` apply what the records choose. The choices
// kept are then judged together by the model guard (model_guard.h): those
// that do not pay beside the others get SlowerInModel verdicts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tune/model_config.h"
#include "tune/progress.h"
#include "tune/record.h"

namespace tessera::tune {

// "winograd-choice:" + the geometry: a choice's task key in the records.
std::string winograd_choice_key(const std::string& geometry);
// The geometry of a choice's task key; "" when the key is not a choice's.
std::string winograd_choice_geometry(const std::string& task_key);
// A choice's schedule text ("tile=2") and back; parsing throws naming the
// text unless it gives one of kWinogradChoiceTiles.
std::string winograd_choice_text(int tile);
int parse_winograd_choice(const std::string& text);
// "direct", "F(2x2)", "F(4x4)".
std::string winograd_tile_name(int tile);

// The choices the records make on machine `target`: for each geometry, the
// tile with the lowest pooled model time (RecordFile::pooled_cost) among
// those measured below the estimate's model (ratio < 1), valid and without
// a SlowerInModel verdict. Geometries without such a tile are absent.
std::map<std::string, int> recorded_winograd_choices(const RecordFile& records, const std::string& target);

// One geometry's choice as the tuner's closing table shows it.
struct GraphChoiceReport {
  std::string geometry;
  int convs = 0;           // convolutions of the model with it
  std::string estimated;   // the estimate's tiles ("F(4x4)"; "F(2x2) x1, F(4x4) x2" when they differ)
  int tuned_tile = -1;     // what the records choose; -1: the estimate's
  double default_ms = 0;   // the model as the estimate makes it (0: nothing measured)
  double tuned_ms = 0;     // with the chosen tile (the default's when none)
  std::string tried;       // each alternative and its model time over the default's ("F(2x2) 0.973, direct 1.104")
};

struct GraphPhaseOptions {
  double max_seconds = 0;   // the phase starts no measurement past this (0: it measures nothing, only reads)
  int runs = 15;            // interleaved rounds of each model comparison
  double tolerance = 1e-4;  // outputs' largest relative difference from the estimate's model (measure.h)
  double budget_seconds = 0;  // the whole tuning budget, for the progress line
};

struct GraphPhaseResult {
  std::vector<GraphChoiceReport> choices;      // the model's geometries, heaviest first
  std::map<std::string, int> applied;          // what the records choose for this model's geometries
  int measured = 0, reused = 0, errors = 0;    // alternatives measured now, read from the records, failed
  int guard_comparisons = 0, guard_dropped = 0;
  double seconds = 0;
};

// The phase for the model of `config` (its winograd_tiles ignored: every
// comparison is against the estimate's model): each geometry's alternatives
// (those that change the graph), heaviest geometry first, measured unless
// the records have them, while `options.max_seconds` lasts; then, when this
// run measured any and more than one choice stands, the guard. Appends to
// `records`. A model without Winograd candidates (or with the pass off)
// gives an empty result.
GraphPhaseResult tune_graph_choices(const ModelConfig& config, RecordFile& records, const std::string& target,
                                    const GraphPhaseOptions& options, Progress& progress);

}  // namespace tessera::tune
