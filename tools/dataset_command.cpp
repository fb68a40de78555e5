// `tessera dataset` (see dataset_command.h).
#include "dataset_command.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "dataset/communicator.h"
#include "dataset/merge.h"
#include "support/error.h"
#include "tune/progress.h"
#ifdef TESSERA_HAVE_MPI
#include "mpi/mpi_communicator.h"
#endif

namespace tessera::tools {

void DatasetCommands::add(CLI::App& app) {
  dataset_ = app.add_subcommand("dataset", "a TenSet-style dataset: random schedules of many networks' tasks measured "
                                           "on every target of this machine (collect), over MPI ranks (merge)");
  dataset_->require_subcommand(1);
  collect_ = dataset_->add_subcommand(
      "collect", "measure sampled schedules of the networks' tasks on every target; under 'mpirun -np K' the tasks "
                 "are dealt to K ranks, each writing DIR/records.rank<K>.jsonl; a restart measures nothing twice");
  dataset::CollectOptions& o = collect_opts_;
  collect_->add_option("--networks", o.networks,
                       "ONNX files (or zoo:NAME), comma-separated, or a file listing one per line "
                       "(bench/dataset_networks.py writes one)")
      ->required();
  collect_->add_option("--out", o.out_dir, "output directory: tasks.json and records.rank<K>.jsonl")->required();
  collect_->add_option("--per-task", o.per_task, "schedules sampled per task, the default among them (default 32)")
      ->check(CLI::Range(1, 100000));
  collect_->add_option("--targets", o.targets,
                       "targets to measure on (default: every one offered): avx512-t1, avx512-t2, avx2-t1, avx2-t2")
      ->delimiter(',');
  collect_->add_option("--repeats", o.repeats,
                       "timed runs of each measurement at least, each paired with a run of the default schedule "
                       "(default 10); a resumed collection must keep its directory's number")
      ->check(CLI::Range(1, 1000));
  collect_->add_option("--guard-spread", o.guard.spread,
                       "load guard: measure a candidate again when its paired baselines' max/min exceeds 1 + this "
                       "(default 0.10)")
      ->check(CLI::NonNegativeNumber);
  collect_->add_option("--guard-drift", o.guard.drift,
                       "load guard: ... or their median is off the task's reference (its first steady record's) "
                       "by more than this share (default 0.10)")
      ->check(CLI::NonNegativeNumber);
  collect_->add_option("--remeasures", o.guard.remeasures,
                       "load guard: at most this many more records of a candidate (default 2; 0: no guard); "
                       "every record is kept")
      ->check(CLI::Range(0, 100));
  collect_->add_option("--seed", o.seed, "seed of the sampled schedules (default 1); the same on any rank count");
  collect_->add_option("--time-limit", o.candidate_seconds,
                       "seconds one measurement may take, compiling included (default 30); past it: a timeout record")
      ->check(CLI::PositiveNumber);
  collect_->add_flag("-q,--quiet", quiet_, "no progress lines");

  merge_ = dataset_->add_subcommand(
      "merge", "join a collection's records.rank<K>.jsonl into one records file, sorted, duplicates dropped");
  merge_->add_option("dir", merge_dir_, "the collection's directory (collect --out)")->required();
  merge_->add_option("-o,--output", merge_out_, "the joined records file (JSON lines)")->required();
}

int DatasetCommands::run() {
  if (!dataset_ || !*dataset_) return -1;
  if (*collect_) return collect();
  return merge();
}

int DatasetCommands::collect() {
  dataset::CollectOptions o = collect_opts_;
  o.exe = std::filesystem::read_symlink("/proc/self/exe").string();
  o.progress = !quiet_;
  std::unique_ptr<dataset::Communicator> comm;
  if (dataset::launched_by_mpi()) {
#ifdef TESSERA_HAVE_MPI
    comm = std::make_unique<mpi::MpiCommunicator>();
#else
    TESSERA_FAIL("an MPI launcher started this tessera, but it was built without MPI: every rank would collect "
                 "everything. Install Open MPI (scripts/install-deps.sh: libopenmpi-dev, openmpi-bin), configure "
                 "and build again, or run 'tessera dataset collect' without mpirun (one process)");
#endif
  } else {
#ifndef TESSERA_HAVE_MPI
    std::fprintf(stderr, "tessera dataset: this tessera was built without MPI: collecting in one process "
                         "(for 'mpirun -np K', install libopenmpi-dev and openmpi-bin, then configure again)\n");
#endif
    comm = std::make_unique<dataset::Local>();
  }
  dataset::CollectReport r;
  try {
    r = dataset::collect(o, *comm);
  } catch (const std::exception& e) {
    if (comm->size() > 1) {  // the other ranks would wait for this one at the end
      std::fprintf(stderr, "error: rank %d: %s\n", comm->rank(), e.what());
      std::fflush(stderr);
      comm->abort(1);
    }
    throw;
  }
  // Every rank's counts, summed (this waits for the last rank to finish).
  const int64_t measured = comm->sum(r.measured), remeasured = comm->sum(r.remeasured), errors = comm->sum(r.errors),
                earlier = comm->sum(r.earlier), missing = comm->sum(r.missing);
  if (comm->rank() == 0) {
    std::printf("dataset %s: %d tasks of %d networks, %d targets: %lld measurements in all\n", o.out_dir.c_str(),
                r.tasks, r.networks, r.targets, static_cast<long long>(r.total));
    std::printf("this run: %lld measured, %lld measured again by the load guard (baselines spread over %.0f%% or "
                "drifted over %.0f%%; every record kept), %lld records with an error code, %lld in records already, "
                "%lld not measurable, %d repeats a measurement, %s on %d rank%s\n",
                static_cast<long long>(measured), static_cast<long long>(remeasured), o.guard.spread * 100,
                o.guard.drift * 100, static_cast<long long>(errors), static_cast<long long>(earlier),
                static_cast<long long>(missing), o.repeats, tune::duration_text(r.seconds).c_str(), comm->size(),
                comm->size() == 1 ? "" : "s");
    std::printf("records  %s/records.rank*.jsonl (join them: tessera dataset merge %s -o all.jsonl)\n",
                o.out_dir.c_str(), o.out_dir.c_str());
  }
  return 0;
}

int DatasetCommands::merge() {
  dataset::MergeReport r = dataset::merge_records(merge_dir_, merge_out_);
  std::printf("merged %d rank files: %lld records read, %lld written to %s (%lld with an error code), %lld "
              "duplicates dropped, %lld cut-short lines dropped\n",
              r.files, static_cast<long long>(r.read), static_cast<long long>(r.written), merge_out_.c_str(),
              static_cast<long long>(r.errors), static_cast<long long>(r.duplicates),
              static_cast<long long>(r.partial));
  return 0;
}

}  // namespace tessera::tools
