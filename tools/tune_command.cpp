// `tessera tune` and `tessera tune-worker` (see tune_command.h).
#include "tune_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "tune/measure_worker.h"

namespace tessera::tools {

int cmd_tune(tune::TuneOptions o) {
  o.exe = std::filesystem::read_symlink("/proc/self/exe").string();
  tune::TuneReport r = tune::tune_model(o);
  std::fputs(tune::report_table(r).c_str(), stdout);
  std::printf("records  %s (apply with: tessera run|bench|compile MODEL --records %s)\n", o.records.c_str(),
              o.records.c_str());
  return 0;
}

int cmd_tune_worker(const std::string& config_json) {
  return tune::run_measure_worker(config_json, std::cin, std::cout);
}

}  // namespace tessera::tools
