// `tessera dataset collect|merge`: a TenSet-style dataset of measured
// schedules (src/dataset), collected in one process or over MPI ranks
// (`mpirun -np K tessera dataset collect ...`), and the ranks' files joined.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "dataset/collect.h"

namespace tessera::tools {

class DatasetCommands {
 public:
  // Adds `dataset` and its subcommands to `app`.
  void add(CLI::App& app);
  // Runs the dataset subcommand given; -1 when none is.
  int run();

 private:
  int collect();
  int merge();
  CLI::App *dataset_ = nullptr, *collect_ = nullptr, *merge_ = nullptr;
  dataset::CollectOptions collect_opts_;
  bool quiet_ = false;
  std::string merge_dir_, merge_out_;
};

}  // namespace tessera::tools
