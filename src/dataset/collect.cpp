// Dataset collection over ranks (see collect.h).
#include "dataset/collect.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <list>
#include <memory>
#include <set>
#include <tuple>

#include "dataset/merge.h"
#include "dataset/task_index.h"
#include "support/error.h"
#include "support/file_util.h"
#include "tune/measure_worker.h"
#include "tune/progress.h"
#include "tune/record.h"

namespace tessera::dataset {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void note(int rank, int size, const std::string& text) {
  std::fprintf(stderr, "[dataset rank %d/%d] %s\n", rank, size, text.c_str());
}

// Rank 0: the index this collection measures, as tasks.json's text. An
// existing tasks.json of the same request is reused as it is (its schedules
// and hardware descriptions); otherwise the tasks are listed again, keeping
// the hardware descriptions of targets it already had (records of one
// target keep one description across restarts), and the file rewritten.
std::string rank0_index(const CollectOptions& o, const std::string& path, Communicator& comm) {
  auto log = [&](const std::string& s) {
    if (o.progress) note(0, comm.size(), s);
  };
  std::vector<std::string> notes;
  DatasetIndex want;
  want.networks = parse_networks(o.networks);
  want.targets = select_targets(o.targets, &notes);
  want.per_task = o.per_task;
  want.seed = o.seed;
  for (const std::string& n : notes) log(n);
  TESSERA_CHECK(!want.targets.empty(), "this machine offers no target to measure on");
  DatasetIndex old;
  if (fs::exists(path)) {
    const std::string text = read_file(path);
    old = DatasetIndex::from_json(text, path);
    if (old.same_request(want)) {
      log("reusing " + path + " (" + std::to_string(old.tasks.size()) + " tasks)");
      return text;
    }
    log(path + " is of another request (networks, targets, schedules per task or seed): listing the tasks again");
  }
  for (DatasetTarget& t : want.targets) {
    bool kept = false;
    for (const DatasetTarget& was : old.targets)
      if (was.name == t.name && was.target == t.target) {
        t.hardware = was.hardware;
        kept = true;
      }
    if (!kept) probe(t);
    log("target " + t.name + ": " + t.hardware.to_string());
  }
  DatasetIndex index = build_index(want.networks, want.targets, o.per_task, o.seed, log);
  const std::string text = index.to_json();
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text << '\n';
    f.flush();
    TESSERA_CHECK(f, "cannot write '", tmp, "'");
  }
  fs::rename(tmp, path);
  log(std::to_string(index.tasks.size()) + " tasks from " + std::to_string(index.networks.size()) + " networks, " +
      std::to_string(index.measurements()) + " measurements: " + path);
  return text;
}

// A rank's measurement workers: one per (network, target), started on first
// use, the few used last kept running (each holds its network compiled).
class WorkerPool {
 public:
  WorkerPool(const CollectOptions& o, size_t keep) : o_(o), keep_(keep) {}

  tune::MeasureWorker& get(const Network& net, const DatasetTarget& t) {
    const std::string key = net.name + "\n" + t.name;
    for (auto it = workers_.begin(); it != workers_.end(); ++it)
      if (it->first == key) {
        workers_.splice(workers_.begin(), workers_, it);  // most recently used first
        return *workers_.front().second;
      }
    tune::WorkerConfig c;
    c.model.model = net.path;
    c.model.isa = t.isa;
    c.model.threads = t.threads;
    c.measure.isa = t.isa;
    c.measure.timing = o_.timing;
    workers_.emplace_front(key, std::make_unique<tune::MeasureWorker>(o_.exe, c, o_.candidate_seconds));
    if (workers_.size() > keep_) workers_.pop_back();  // its destructor stops it
    return *workers_.front().second;
  }

 private:
  const CollectOptions& o_;
  size_t keep_;
  std::list<std::pair<std::string, std::unique_ptr<tune::MeasureWorker>>> workers_;
};

const Network& network_named(const DatasetIndex& d, const std::string& name) {
  for (const Network& n : d.networks)
    if (n.name == name) return n;
  TESSERA_FAIL("tasks.json: a task is measured in network '", name, "', which it does not list");
}

}  // namespace

std::string rank_records_path(const std::string& dir, int rank) {
  return (fs::path(dir) / ("records.rank" + std::to_string(rank) + ".jsonl")).string();
}

CollectReport collect(const CollectOptions& o, Communicator& comm) {
  TESSERA_CHECK(!o.out_dir.empty(), "dataset collection needs an output directory (--out DIR)");
  TESSERA_CHECK(o.per_task >= 1, "--per-task must be at least 1 (the default schedule), got ", o.per_task);
  TESSERA_CHECK(o.candidate_seconds > 0, "--time-limit must be positive, got ", o.candidate_seconds);
  TESSERA_CHECK(!o.exe.empty(), "dataset collection needs the tessera executable to start measurement workers");
  const auto start = Clock::now();
  const int rank = comm.rank(), size = comm.size();
  fs::create_directories(o.out_dir);
  const std::string index_path = (fs::path(o.out_dir) / "tasks.json").string();

  // Rank 0 lists the tasks and samples their schedules; every rank measures
  // from its text. A failure there reaches every rank, which stops with it.
  std::string text, failure;
  if (rank == 0) {
    try {
      text = rank0_index(o, index_path, comm);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const std::string got = comm.broadcast(failure.empty() ? "ok\n" + text : "error\n" + failure);
  if (got.rfind("error\n", 0) == 0) TESSERA_FAIL(got.substr(6));
  const DatasetIndex index = DatasetIndex::from_json(got.substr(3), index_path);

  CollectReport r;
  r.tasks = static_cast<int>(index.tasks.size());
  r.networks = static_cast<int>(index.networks.size());
  r.targets = static_cast<int>(index.targets.size());
  r.total = index.measurements();
  const int cpus = detect_cores();
  for (const DatasetTarget& t : index.targets) {
    TESSERA_CHECK(t.threads <= cpus, "rank ", rank, " may run on ", cpus, " CPU(s), fewer than the ", t.threads,
                  " threads of target ", t.name, " (mpirun binds each rank to a core: add --bind-to none)");
    // Records carry rank 0's target text and hardware description: ranks on
    // machines of another kind would mislabel theirs.
    Target here = Target::for_isa(t.isa);
    here.cores = t.threads;
    TESSERA_CHECK(here == t.target, "rank ", rank, " runs on other hardware than ", index_path, " describes for ",
                  t.name, " (", here.to_string(), " here, ", t.target.to_string(),
                  " there): collect each kind of machine into a directory of its own");
  }

  // What is measured already, by any rank of any earlier run.
  std::set<std::tuple<std::string, std::string, std::string>> earlier;
  for (const auto& [k, path] : rank_record_files(o.out_dir)) {
    if (k == rank) continue;
    const tune::RecordFile other(path);
    for (const tune::Record& rec : other.records()) earlier.insert({rec.task_key, rec.target, rec.schedule});
  }
  tune::RecordFile own(rank_records_path(o.out_dir, rank));
  auto measured_before = [&](const std::string& key, const std::string& target, const std::string& schedule) {
    return own.has(key, target, schedule) || earlier.count({key, target, schedule}) != 0;
  };

  // This rank's tasks (i mod size) and what they still need.
  std::vector<size_t> mine;
  for (size_t i = static_cast<size_t>(rank); i < index.tasks.size(); i += static_cast<size_t>(size)) mine.push_back(i);
  r.tasks_mine = static_cast<int>(mine.size());
  std::vector<std::string> target_text;
  for (const DatasetTarget& t : index.targets) target_text.push_back(t.target.to_string());
  int64_t todo = 0;
  for (size_t i : mine)
    for (size_t t = 0; t < index.targets.size(); ++t)
      if (const IsaTask* it = index.tasks[i].on(index.targets[t]))
        for (const std::string& s : it->schedules) (measured_before(index.tasks[i].key, target_text[t], s) ? r.earlier : todo) += 1;
  if (o.progress)
    note(rank, size, std::to_string(mine.size()) + " of " + std::to_string(index.tasks.size()) + " tasks: " +
                         std::to_string(todo) + " measurements to make, " + std::to_string(r.earlier) +
                         " in records already; writing " + own.path());

  WorkerPool pool(o, index.targets.size());
  tune::Progress progress(o.progress, "[dataset rank " + std::to_string(rank) + "/" + std::to_string(size) + "] ");
  const auto measuring = Clock::now();
  for (size_t n = 0; n < mine.size(); ++n) {
    const DatasetTask& task = index.tasks[mine[n]];
    for (size_t t = 0; t < index.targets.size(); ++t) {
      const DatasetTarget& target = index.targets[t];
      const IsaTask* it = task.on(target);
      if (!it) continue;
      std::vector<const std::string*> pending;
      for (const std::string& s : it->schedules)
        if (!measured_before(task.key, target_text[t], s)) pending.push_back(&s);
      if (pending.empty()) continue;
      tune::MeasureWorker& worker = pool.get(network_named(index, it->network), target);
      if (!worker.has_task(task.key)) {
        r.missing += static_cast<int64_t>(pending.size());
        note(rank, size, "task " + task.key + " (" + task.description + ") is not among the tasks of " + it->network +
                             " as its worker for " + target.name +
                             " opened it (fused differently: another fusion profile?): skipped");
        continue;
      }
      for (const std::string* s : pending) {
        const auto t0 = Clock::now();
        tune::Measurement m = worker.measure(task.key, *s);
        tune::Record rec = tune::measured_record(m, task.key, task.description, target_text[t], *s, since(t0));
        rec.hardware = target.hardware.to_string();
        own.append(rec);
        ++r.measured;
        r.errors += m.error != tune::MeasureError::None;
        const double spent = since(measuring);
        const double eta = spent / static_cast<double>(r.measured) * static_cast<double>(todo - r.measured - r.missing);
        char line[512];
        std::snprintf(line, sizeof line, "task %zu/%zu %.40s on %s | %lld/%lld measured, %lld errors | %s, ETA %s",
                      n + 1, mine.size(), task.description.c_str(), target.name.c_str(),
                      static_cast<long long>(r.measured), static_cast<long long>(todo),
                      static_cast<long long>(r.errors), tune::duration_text(since(start)).c_str(),
                      tune::duration_text(std::max(0.0, eta)).c_str());
        progress.show(line, r.measured == todo);
      }
    }
  }
  progress.done();
  r.seconds = since(start);
  return r;
}

}  // namespace tessera::dataset
