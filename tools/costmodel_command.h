// `tessera costmodel train|eval|transfer|prune|dump|columns`: learned cost
// models on a dataset of measured schedules (`tessera dataset collect`):
// trained on a split's train part and saved (train: xgb or attention),
// judged on its test part by TenSet's metrics (eval), the attention model
// moved to a held-out target with a few of its records (transfer,
// costmodel_transfer.cpp), the dataset pruned and accuracy against the share
// kept (prune, costmodel_prune.cpp), every sample's features written out
// (dump: the per-store matrix, hardware vector and program row), and the
// feature columns listed with their meaning (columns).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cost/attention_model.h"
#include "cost/xgb_model.h"

namespace tessera::tools {

struct CostModelArgs {
  std::vector<std::string> records, datasets;
  std::string model = "xgb";
  std::string model_file;  // train: written; eval: read; dump: the output file
  std::string split = "none";
  double test_share = 0.1;
  std::string held_out;  // by-target: a target name; by-network: a network name
  uint64_t seed = 1;
  int rounds = 200;
  int epochs = 40;       // attention: training passes
  int threads = 1;       // XGBoost's and torch's threads
  std::vector<double> fine_tune_shares{0, 0.05, 0.10};  // transfer
  double fine_tune_anchor = 0.01;                       // transfer: AttentionOptions::fine_tune_anchor
  int fine_tune_epochs = 10;                            // transfer: AttentionOptions::fine_tune_epochs
  std::string source_model;  // transfer: the model trained on the other targets, read instead of trained
  std::string fine_tuned_file;  // transfer: the model fine-tuned on the largest share, written (none when empty)
  std::vector<std::string> methods{"cluster"};         // prune
  std::vector<double> keeps{0.5};                       // prune
  bool prune_eval = false;                              // prune: accuracy against the share kept, no file
  std::string cache;     // feature cache file
  std::string label = "min";  // tune::CostLabel's name: which number of a schedule's repeats is its cost
  int folds = 0;              // eval: k-fold cross-validation within task (0: judge --model-file on the split)
  bool quiet = false;
};

class CostModelCommands {
 public:
  void add(CLI::App& app);
  // Runs the costmodel subcommand given; -1 when none is.
  int run();

 private:
  CLI::App *costmodel_ = nullptr, *train_ = nullptr, *eval_ = nullptr, *transfer_ = nullptr, *prune_ = nullptr,
           *dump_ = nullptr, *columns_ = nullptr;
  CostModelArgs args_;
};

int cmd_costmodel_train(const CostModelArgs& a);
int cmd_costmodel_eval(const CostModelArgs& a);
int cmd_costmodel_transfer(const CostModelArgs& a);
int cmd_costmodel_prune(const CostModelArgs& a);
// The models' options from the arguments; `what` starts their progress lines
// (none with --quiet).
cost::XgbOptions xgb_options(const CostModelArgs& a);
cost::AttentionOptions attention_options(const CostModelArgs& a, const std::string& what);

int cmd_costmodel_dump(const CostModelArgs& a);
int cmd_costmodel_columns();

}  // namespace tessera::tools
