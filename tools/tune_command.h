// `tessera tune`, `tessera tune-fit` and the measurement worker tune starts
// (`tessera tune-worker`, not for users): the auto-tuner (src/tune/tuner.h)
// on a model from the command line, with a progress line and a closing
// table, and the static model fitted on its records.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cost/static_model.h"
#include "tune/tuner.h"

namespace tessera::tools {

// Fits the static model's coefficients on the measured records of `models`
// (opened like `base`), reports its ranking on held-out candidates, and
// saves the coefficients (empty `out`: the default file).
struct TuneFitArgs {
  std::vector<std::string> models;
  tune::ModelConfig base;
  std::string records, hardware, out;
  double test_share = 0.5;
  bool machine_code = true;
  bool judge_only = false;  // load the coefficients and judge them on all candidates; fit nothing
  std::vector<std::string> features;  // feature dumps to read besides (or instead of) the models' records
  std::string dump;         // also write every candidate's features and cost here (JSON lines)
  cost::FitOptions fit;       // the model's form (hidden units) and the fit's settings
  std::string label = "min";  // tune::CostLabel's name: which number of a schedule's repeats is its cost
};
int cmd_tune_fit(const TuneFitArgs& a);

// The options of tune, tune-fit and tune-worker as CLI11 fills them.
class TuneCommands {
 public:
  // Adds the three commands; returns `tune`, for the caller to add the
  // model and compile options it shares with run/compile/bench. tune-fit
  // reads --isa and --threads into `isa` and `threads`.
  CLI::App* add(CLI::App& app, std::string& isa, int& threads);
  // Runs `tune` on the model the shared flags describe.
  int run_tune(const tune::ModelConfig& model, const std::string& records);
  // Runs tune-fit or tune-worker if given; -1 when neither is.
  int run_other(Isa isa, int threads);

 private:
  CLI::App *tune_ = nullptr, *fit_ = nullptr, *worker_ = nullptr;
  tune::TuneOptions tune_opts_;
  double budget_minutes_ = 10;
  std::string cost_label_ = "min";  // --cost-label
  TuneFitArgs fit_args_;
  bool loop_ir_only_ = false;
  bool show_space_ = false;
  std::string worker_config_;
};

// Tunes with `o` (o.exe is filled in: this executable); prints the table.
int cmd_tune(tune::TuneOptions o);
// Lists the model's tasks and each one's search space (rules, knobs and
// their values, size); measures nothing.
int cmd_tune_space(const tune::ModelConfig& model);
// The worker's loop on stdin/stdout.
int cmd_tune_worker(const std::string& config_json);

}  // namespace tessera::tools
