// Measurement apart from the tuner: a worker process (`tessera tune-worker
// CONFIG`) opens the model as the tuner did (model_config.h) and measures
// the candidates it is sent (measure.h). A candidate that crashes the worker
// or outlives its time limit is recorded as an error, the worker is started
// again, and the tuner goes on.
//
// Protocol, one JSON object per line: the worker first writes
// {"ready": true, "tasks": [keys...]} (or {"ready": false, "message": ...});
// then for each request {"task": KEY, "point": POSITIONAL POINT TEXT} it
// answers {"error": N, "costs": [seconds...], "message": TEXT}.
//
// For tests of the checks: with TESSERA_TUNE_FAULT=wrong-output:TEXT in its
// environment, the worker corrupts the output of every candidate whose point
// contains TEXT before comparing it (the candidate must be recorded as a
// wrong output and never applied).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <istream>
#include <ostream>
#include <set>
#include <string>

#include "tune/measure.h"
#include "tune/model_config.h"

namespace tessera::tune {

// What a worker is started with: the model and how to measure.
struct WorkerConfig {
  ModelConfig model;
  MeasureOptions measure;
  std::string to_json() const;
  static WorkerConfig from_json(const std::string& text);
};

// The worker's side: serves requests from `in` until it ends. Returns the
// process exit code.
int run_measure_worker(const std::string& config_json, std::istream& in, std::ostream& out);

// The tuner's side: a worker process, started on first use and again after
// it died or was stopped at a time limit.
class MeasureWorker {
 public:
  // `exe` is the tessera executable (it has the tune-worker command).
  MeasureWorker(std::string exe, WorkerConfig config, double candidate_seconds, bool show_worker_errors = false);
  ~MeasureWorker();
  MeasureWorker(const MeasureWorker&) = delete;
  MeasureWorker& operator=(const MeasureWorker&) = delete;

  // Measures `point` (positional text; "" is the default schedule) of the
  // task with key `task_key`. Never throws for the candidate's faults; throws
  // when the worker cannot start (the model does not open, no such task).
  Measurement measure(const std::string& task_key, const std::string& point);
  // True when the worker's model has the task (starting the worker if it is
  // not running; throws when it cannot start): a model opened elsewhere may
  // be fused differently (the fusion profile) and lack a task.
  bool has_task(const std::string& task_key);
  int restarts() const { return restarts_; }

 private:
  void start();
  void stop();
  // One line from the worker; End when it closed its end (exited), Timeout
  // past `deadline_s` seconds.
  enum class Read { Line, End, Timeout };
  Read read_line(std::string& line, double deadline_s);

  std::string exe_;
  WorkerConfig config_;
  double candidate_seconds_;
  bool show_errors_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
  std::set<std::string> tasks_;
  int restarts_ = 0;
  bool started_once_ = false;
};

}  // namespace tessera::tune
