// `tessera dataset collect`: a TenSet-style dataset of Tessera's own. The
// tasks of a list of networks (task_index.h), each measured at a number of
// schedules sampled from the tuner's search space on every target this
// machine offers (targets.h), by the tuner's measurement workers
// (tune/measure_worker.h: compiled and run apart, under a time limit, the
// output checked against the default schedule's; a failing candidate is a
// record with an error code, never the end of the run), written as the
// tuner's records (tune/record.h) with each target's hardware description.
//
// Each measurement times the candidate `repeats` times at least, every run
// paired with a run of the default schedule; the load guard (load_guard.h)
// reads those baselines and measures a candidate again, up to
// `guard.remeasures` times, while they say the machine was disturbed. Every
// record is kept.
//
// Over MPI ranks (communicator.h): rank 0 builds the index and writes
// DIR/tasks.json; each rank appends to its own DIR/records.rank<K>.jsonl.
// The 1-thread targets go first, task i to rank i mod K. Then, after a
// barrier, each count T > 1 of threads in turn: task i to rank i mod L,
// where L = the CPUs rank 0 may run on / T (at least 1, at most K), so the ranks
// measuring at once never ask for more CPUs than there are (on 2 CPUs a
// 2-thread target is measured by rank 0 alone while the others wait). A
// restarted collection (any rank count) measures nothing any rank file in
// DIR already has, and refuses another --repeats than DIR was collected
// with. merge.h joins the files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataset/communicator.h"
#include "dataset/load_guard.h"
#include "tune/model_timer.h"

namespace tessera::dataset {

struct CollectOptions {
  std::string networks;              // a list or list file (networks.h)
  std::string out_dir;               // DIR
  int per_task = 32;                 // schedules per task, the default among them
  std::vector<std::string> targets;  // target names (targets.h); empty: every one offered
  uint64_t seed = 1;                 // of the sampled schedules
  double candidate_seconds = 30;     // time limit of one measurement (compile, check, time)
  int repeats = 10;                  // timed runs of a measurement at least (the timer's min_repeats)
  tune::TimerOptions timing;         // how each candidate is timed (tune/model_timer.h; min_repeats: `repeats`)
  LoadGuard guard;                   // when a candidate is measured again
  std::string exe;                   // the tessera executable (runs the workers)
  // The fusion profile the networks are planned with (tune::ModelConfig::
  // fusion_db); "": a private snapshot of the user's cache, made by rank 0
  // and copied to every rank (fusion/profile_snapshot.h).
  std::string fusion_db;
  bool progress = true;              // progress lines on stderr
};

struct CollectReport {
  int tasks = 0, networks = 0, targets = 0;
  int64_t total = 0;    // measurements of the whole dataset
  // This rank's share:
  int tasks_mine = 0;  // tasks this rank measures on some target
  int64_t measured = 0;    // measured by this run
  int64_t remeasured = 0;  // more records of those, made by the load guard
  int64_t errors = 0;      // records with an error code
  int64_t earlier = 0;   // in a records file of DIR already (skipped)
  int64_t missing = 0;   // not measurable: the worker's model lacks the task (see MeasureWorker::has_task)
  double seconds = 0;
};

// The records file of `rank` in `dir`.
std::string rank_records_path(const std::string& dir, int rank);

// Collects this rank's share; rank 0 also writes DIR/tasks.json. Throws on
// bad options, a network that does not open, a worker that cannot start, a
// 2-thread target on a rank bound to one CPU, a rank on another kind of
// machine than rank 0 (its records would carry rank 0's target and hardware),
// or a DIR with records collected at another number of repeats.
CollectReport collect(const CollectOptions& options, Communicator& comm);

}  // namespace tessera::dataset
