// `tessera costmodel train|eval|dump|columns`: learned cost models on a
// dataset of measured schedules (`tessera dataset collect`): trained on a
// split's train part and saved (train), judged on its test part by TenSet's
// metrics (eval), every sample's features written out (dump: the per-store
// matrix, hardware vector and program row), and the feature columns listed
// with their meaning (columns).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

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
  int threads = 1;       // XGBoost's threads
  std::string cache;     // feature cache file
  bool quiet = false;
};

class CostModelCommands {
 public:
  void add(CLI::App& app);
  // Runs the costmodel subcommand given; -1 when none is.
  int run();

 private:
  CLI::App *costmodel_ = nullptr, *train_ = nullptr, *eval_ = nullptr, *dump_ = nullptr, *columns_ = nullptr;
  CostModelArgs args_;
};

int cmd_costmodel_train(const CostModelArgs& a);
int cmd_costmodel_eval(const CostModelArgs& a);
int cmd_costmodel_dump(const CostModelArgs& a);
int cmd_costmodel_columns();

}  // namespace tessera::tools
