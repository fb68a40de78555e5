// The model a tuning run tunes, as the tuner and its measurement workers
// both open it: the same file, input shapes, passes, ISA and fusion give the
// same tasks with the same keys (compile/task.h) in both processes — and in
// a later `tessera run --records`, which applies what was found.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "runtime/executor.h"
#include "support/target.h"

namespace tessera::tune {

struct ModelConfig {
  std::string model;                         // a file or "zoo:NAME" (driver.h)
  std::map<std::string, Dims> input_shapes;  // fixes dynamic input dims
  std::vector<std::string> disabled_passes;
  Isa isa = Isa::Host;
  int threads = 0;     // kernel threads (the process-wide pool); <= 0: all cores
  bool fusion = true;  // DNNFusion blocks as one kernel each
  // The fusion planner's profiling database (ExecutorOptions::fusion_db;
  // "": the user's cache, which tune_model and `dataset collect` snapshot for
  // the run, fusion/profile_snapshot.h). The tuner and its workers must plan
  // the same blocks: no other process may change the profile they read.
  std::string fusion_db;
  uint64_t seed = 1;   // of the model's random inputs
  // The Winograd pass's choices per convolution geometry (PassOptions::
  // winograd_tiles): the graph the tasks come from (graph_choice.h).
  std::map<std::string, int> winograd_tiles;

  std::string to_json() const;
  static ModelConfig from_json(const std::string& text);  // throws naming the bad field
  LoadOptions load_options() const;
  runtime::ExecutorOptions executor_options() const;
};

// A model opened for tuning: its executor, random inputs and distinct tasks
// with their weights (compiling nothing).
struct TuningModel {
  std::unique_ptr<runtime::Executor> executor;
  std::vector<Tensor> inputs;
  std::vector<runtime::TaskUse> tasks;
};
TuningModel open_model(const ModelConfig& config);

}  // namespace tessera::tune
