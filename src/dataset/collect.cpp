// Dataset collection over ranks (see collect.h).
#include "dataset/collect.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <list>
#include <memory>
#include <set>
#include <tuple>

#include "dataset/load_guard.h"
#include "dataset/merge.h"
#include "dataset/task_index.h"
#include "fusion/profile_snapshot.h"
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

// Writes tasks.json (whole or not at all); returns its text.
std::string write_index(const std::string& path, const DatasetIndex& index) {
  const std::string text = index.to_json();
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text << '\n';
    f.flush();
    TESSERA_CHECK(f, "cannot write '", tmp, "'");
  }
  fs::rename(tmp, path);
  return text;
}

// Rank 0: the index this collection measures, as tasks.json's text. An
// existing tasks.json of the same request is reused as it is (its schedules
// and hardware descriptions); otherwise the tasks are listed again, keeping
// the hardware descriptions of targets it already had (records of one
// target keep one description across restarts), and the file rewritten.
// The networks are planned with the fusion profile `fusion_db`.
std::string rank0_index(const CollectOptions& o, const std::string& path, const std::string& fusion_db,
                        Communicator& comm) {
  auto log = [&](const std::string& s) {
    if (o.progress) note(0, comm.size(), s);
  };
  std::vector<std::string> notes;
  DatasetIndex want;
  want.networks = parse_networks(o.networks);
  want.targets = select_targets(o.targets, &notes);
  want.per_task = o.per_task;
  want.seed = o.seed;
  want.repeats = o.repeats;
  for (const std::string& n : notes) log(n);
  TESSERA_CHECK(!want.targets.empty(), "this machine offers no target to measure on");
  DatasetIndex old;
  if (fs::exists(path)) {
    const std::string text = read_file(path);
    old = DatasetIndex::from_json(text, path);
    // Records of one dataset are timed alike: a resumed collection keeps the repeats.
    const int had = old.repeats > 0 ? old.repeats : tune::TimerOptions{}.min_repeats;
    bool records = false;
    for (const auto& [k, file] : rank_record_files(o.out_dir)) records = records || fs::file_size(file) > 0;
    TESSERA_CHECK(had == o.repeats || !records, o.out_dir, " was collected with ", had,
                  " repeats a measurement", old.repeats > 0 ? "" : " (before --repeats: the timer's default)",
                  ", and this run asks for ", o.repeats, ": give --repeats ", had,
                  " to resume it, or collect into another directory");
    if (old.same_request(want)) {
      log("reusing " + path + " (" + std::to_string(old.tasks.size()) + " tasks)");
      if (old.repeats == o.repeats) return text;
      old.repeats = o.repeats;  // recorded from now on
      return write_index(path, old);
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
  DatasetIndex index = build_index(want.networks, want.targets, o.per_task, o.seed, log, fusion_db);
  index.repeats = o.repeats;
  const std::string text = write_index(path, index);
  log(std::to_string(index.tasks.size()) + " tasks from " + std::to_string(index.networks.size()) + " networks, " +
      std::to_string(index.measurements()) + " measurements: " + path);
  return text;
}

// A rank's measurement workers: one per (network, target), started on first
// use, the few used last kept running (each holds its network compiled),
// planning the networks with the fusion profile `fusion_db`.
class WorkerPool {
 public:
  WorkerPool(const CollectOptions& o, size_t keep, std::string fusion_db)
      : o_(o), keep_(keep), fusion_db_(std::move(fusion_db)) {}

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
    c.model.fusion_db = fusion_db_;
    c.measure.isa = t.isa;
    c.measure.timing = o_.timing;
    c.measure.timing.min_repeats = o_.repeats;
    c.measure.timing.max_repeats = std::max(o_.timing.max_repeats, o_.repeats);
    workers_.emplace_front(key, std::make_unique<tune::MeasureWorker>(o_.exe, c, o_.candidate_seconds));
    if (workers_.size() > keep_) workers_.pop_back();  // its destructor stops it
    return *workers_.front().second;
  }

 private:
  const CollectOptions& o_;
  size_t keep_;
  std::string fusion_db_;
  std::list<std::pair<std::string, std::unique_ptr<tune::MeasureWorker>>> workers_;
};

const Network& network_named(const DatasetIndex& d, const std::string& name) {
  for (const Network& n : d.networks)
    if (n.name == name) return n;
  TESSERA_FAIL("tasks.json: a task is measured in network '", name, "', which it does not list");
}

// One (task, target) a rank measures, in the phase it belongs to.
struct Share {
  size_t task, target;
  int phase;
};

// What `rank` of `size` measures, in order (see collect.h): phase 0 the
// 1-thread targets, task i on rank i mod size; then each thread count T > 1,
// ascending, task i on rank i mod L, L = cpus / T within [1, size]. Phases
// are separated by barriers; `phases` is their number on every rank.
std::vector<Share> share_of(const DatasetIndex& d, int rank, int size, int cpus, int& phases) {
  std::vector<int> counts{1};
  for (const DatasetTarget& t : d.targets)
    if (std::find(counts.begin(), counts.end(), t.threads) == counts.end()) counts.push_back(t.threads);
  std::sort(counts.begin(), counts.end());
  std::vector<Share> out;
  for (size_t p = 0; p < counts.size(); ++p) {
    const int lanes = counts[p] == 1 ? size : std::clamp(cpus / counts[p], 1, size);
    if (rank >= lanes) continue;
    for (size_t i = static_cast<size_t>(rank); i < d.tasks.size(); i += static_cast<size_t>(lanes))
      for (size_t t = 0; t < d.targets.size(); ++t)
        if (d.targets[t].threads == counts[p] && d.tasks[i].on(d.targets[t])) out.push_back({i, t, static_cast<int>(p)});
  }
  phases = static_cast<int>(counts.size());
  return out;
}

}  // namespace

std::string rank_records_path(const std::string& dir, int rank) {
  return (fs::path(dir) / ("records.rank" + std::to_string(rank) + ".jsonl")).string();
}

CollectReport collect(const CollectOptions& o, Communicator& comm) {
  TESSERA_CHECK(!o.out_dir.empty(), "dataset collection needs an output directory (--out DIR)");
  TESSERA_CHECK(o.per_task >= 1, "--per-task must be at least 1 (the default schedule), got ", o.per_task);
  TESSERA_CHECK(o.repeats >= 1, "--repeats must be at least 1, got ", o.repeats);
  TESSERA_CHECK(o.candidate_seconds > 0, "--time-limit must be positive, got ", o.candidate_seconds);
  TESSERA_CHECK(o.guard.spread >= 0 && o.guard.drift >= 0 && o.guard.remeasures >= 0,
                "the load guard's thresholds and re-measures must not be negative");
  TESSERA_CHECK(!o.exe.empty(), "dataset collection needs the tessera executable to start measurement workers");
  const auto start = Clock::now();
  const int rank = comm.rank(), size = comm.size();
  fs::create_directories(o.out_dir);
  const std::string index_path = (fs::path(o.out_dir) / "tasks.json").string();

  // Rank 0 lists the tasks and samples their schedules; every rank measures
  // from its text, and deals the multi-thread targets by rank 0's CPU count.
  // A failure there reaches every rank, which stops with it. Rank 0 plans
  // the networks with a snapshot of the fusion profile (fusion/
  // profile_snapshot.h), whose text every other rank's workers plan with in
  // a copy of their own: the tasks of the index are the workers' tasks,
  // whatever another process profiles meanwhile. (Declared before the
  // workers: they stop before it is merged back.)
  std::unique_ptr<fusion::ProfileSnapshot> profile;
  std::string text, failure, planned;
  if (rank == 0) {
    try {
      profile = std::make_unique<fusion::ProfileSnapshot>(o.fusion_db);
      text = std::to_string(detect_cores()) + "\n" + rank0_index(o, index_path, profile->path(), comm);
      if (profile->is_private()) planned = profile->text();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const std::string got = comm.broadcast(failure.empty() ? "ok\n" + text : "error\n" + failure);
  if (got.rfind("error\n", 0) == 0) TESSERA_FAIL(got.substr(6));
  planned = comm.broadcast(planned);
  if (rank != 0) profile = std::make_unique<fusion::ProfileSnapshot>(o.fusion_db, planned);
  const size_t eol = got.find('\n', 3);
  TESSERA_CHECK(got.rfind("ok\n", 0) == 0 && eol != std::string::npos, "rank ", rank, ": rank 0 sent no index");
  const int machine_cpus = std::stoi(got.substr(3, eol - 3));
  const DatasetIndex index = DatasetIndex::from_json(got.substr(eol + 1), index_path);

  CollectReport r;
  r.tasks = static_cast<int>(index.tasks.size());
  r.networks = static_cast<int>(index.networks.size());
  r.targets = static_cast<int>(index.targets.size());
  r.total = index.measurements();
  int phases = 0;
  const std::vector<Share> share = share_of(index, rank, size, machine_cpus, phases);
  const int cpus = detect_cores();
  std::set<size_t> my_targets, my_tasks;
  for (const Share& s : share) {
    my_targets.insert(s.target);
    my_tasks.insert(s.task);
  }
  for (size_t ti : my_targets) {
    const DatasetTarget& t = index.targets[ti];
    TESSERA_CHECK(t.threads <= cpus, "rank ", rank, " may run on ", cpus, " CPU(s), fewer than the ", t.threads,
                  " threads of target ", t.name, " (mpirun binds each rank to a core: add --bind-to none)");
  }
  for (const DatasetTarget& t : index.targets) {
    // Records carry rank 0's target text and hardware description: ranks on
    // machines of another kind would mislabel theirs.
    Target here = Target::for_isa(t.isa);
    here.cores = t.threads;
    TESSERA_CHECK(here == t.target, "rank ", rank, " runs on other hardware than ", index_path, " describes for ",
                  t.name, " (", here.to_string(), " here, ", t.target.to_string(),
                  " there): collect each kind of machine into a directory of its own");
  }
  r.tasks_mine = static_cast<int>(my_tasks.size());

  // What is measured already, by any rank of any earlier run, and each
  // task's reference for the load guard (from the records in the order
  // they were written: other ranks' files first, then this rank's).
  std::set<std::tuple<std::string, std::string, std::string>> earlier;
  GuardReferences references(o.guard);
  for (const auto& [k, path] : rank_record_files(o.out_dir)) {
    if (k == rank) continue;
    const tune::RecordFile other(path);
    for (const tune::Record& rec : other.records()) {
      earlier.insert({rec.task_key, rec.target, rec.schedule});
      references.see(rec);
    }
  }
  tune::RecordFile own(rank_records_path(o.out_dir, rank));
  for (const tune::Record& rec : own.records()) references.see(rec);
  auto measured_before = [&](const std::string& key, const std::string& target, const std::string& schedule) {
    return own.has(key, target, schedule) || earlier.count({key, target, schedule}) != 0;
  };

  std::vector<std::string> target_text;
  for (const DatasetTarget& t : index.targets) target_text.push_back(t.target.to_string());
  int64_t todo = 0;
  for (const Share& s : share)
    for (const std::string& sched : index.tasks[s.task].on(index.targets[s.target])->schedules)
      (measured_before(index.tasks[s.task].key, target_text[s.target], sched) ? r.earlier : todo) += 1;
  if (o.progress)
    note(rank, size, std::to_string(r.tasks_mine) + " of " + std::to_string(index.tasks.size()) + " tasks: " +
                         std::to_string(todo) + " measurements to make, " + std::to_string(r.earlier) +
                         " in records already; writing " + own.path());

  WorkerPool pool(o, index.targets.size(), profile->path());
  tune::Progress progress(o.progress, "[dataset rank " + std::to_string(rank) + "/" + std::to_string(size) + "] ");
  const auto measuring = Clock::now();
  int phase = 0;
  for (size_t n = 0; n < share.size(); ++n) {
    for (; phase < share[n].phase; ++phase) comm.barrier();  // the ranks of the phase before are done
    const DatasetTask& task = index.tasks[share[n].task];
    const size_t t = share[n].target;
    const DatasetTarget& target = index.targets[t];
    const IsaTask* it = task.on(target);
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
      // Measured again while the baselines say the machine was disturbed.
      for (int attempt = 0;; ++attempt) {
        const auto t0 = Clock::now();
        tune::Measurement m = worker.measure(task.key, *s);
        tune::Record rec = tune::measured_record(m, task.key, task.description, target_text[t], *s, since(t0));
        rec.hardware = target.hardware.to_string();
        own.append(rec);
        r.errors += m.error != tune::MeasureError::None;
        const std::string why = disturbed(rec, references.of(task.key, target_text[t]), o.guard);
        references.see(rec);
        if (why.empty() || attempt >= o.guard.remeasures) break;
        ++r.remeasured;
        if (o.progress && r.remeasured <= 3) {  // the first few say why
          progress.done();
          const std::string point = s->substr(0, s->find_last_not_of(" \n") + 1);  // the text ends in a newline
          note(rank, size, "measuring again (" + why + "): " + task.description + " on " + target.name + " at '" + point + "'");
        }
      }
      ++r.measured;
      const double spent = since(measuring);
      const double eta = spent / static_cast<double>(r.measured) * static_cast<double>(todo - r.measured - r.missing);
      char line[512];
      std::snprintf(line, sizeof line,
                    "task-target %zu/%zu %.40s on %s | %lld/%lld measured, %lld re-measured, %lld errors | %s, ETA %s", n + 1,
                    share.size(), task.description.c_str(), target.name.c_str(), static_cast<long long>(r.measured),
                    static_cast<long long>(todo), static_cast<long long>(r.remeasured),
                    static_cast<long long>(r.errors), tune::duration_text(since(start)).c_str(),
                    tune::duration_text(std::max(0.0, eta)).c_str());
      progress.show(line, r.measured == todo);
    }
  }
  for (; phase + 1 < phases; ++phase) comm.barrier();
  progress.done();
  r.seconds = since(start);
  return r;
}

}  // namespace tessera::dataset
