// A run's private copy of the fusion profile (profile_db.h). A tuning run
// (tune/tuner.h) and a dataset collection (dataset/collect.h) plan a model in
// their own process and again in measurement worker processes, which must
// plan the same blocks (else a worker lacks the tuner's tasks). The shared
// default database is appended to by every process that profiles, later
// lines winning, so another run profiling the same blocks at once could
// change what a worker reads. With the default database the run therefore
// plans, and has its workers plan, with a private copy of the shared file's
// complete lines made at its start; at its end the lines the run added are
// appended to the shared file (under flock(LOCK_EX), skipping lines it holds
// already) and the copy is removed. A database the caller names is used as
// it is: it is theirs.
//
// The copy sits beside the shared file, named
// "<file>.run-<host>-<pid>-<unique>" (mkstemp), so that a run killed before
// its end is not lost: the next snapshot of the same file merges the copies
// of this host's processes that are gone, then removes them. Without a cache
// directory (ProfileDb::default_path() is "") the copy is made in the
// temporary directory and nothing is merged (the default is in memory only).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace tessera::fusion {

class ProfileSnapshot {
 public:
  // `configured`: the database the run was given (ExecutorOptions::
  // fusion_db); not empty: used as it is, nothing copied or merged. Empty: a
  // private copy of the default database, or of `text` when given (another
  // process's snapshot, as its text() gave it: a collection's ranks plan
  // with rank 0's). Throws when the copy cannot be made.
  explicit ProfileSnapshot(std::string configured, const std::optional<std::string>& text = std::nullopt);
  ~ProfileSnapshot();  // finish()
  ProfileSnapshot(const ProfileSnapshot&) = delete;
  ProfileSnapshot& operator=(const ProfileSnapshot&) = delete;

  // The database the run and its workers plan with (ModelConfig::fusion_db).
  const std::string& path() const { return path_; }
  // True for a private copy (the default database was asked for).
  bool is_private() const { return private_; }
  // The complete lines of path() now.
  std::string text() const;
  // A private copy: the lines added to it since it was made are appended to
  // the shared file, then it is removed. Once; a failure is a warning on
  // stderr (a copy beside the shared file is then kept for the next
  // snapshot to merge), never thrown.
  void finish();

 private:
  std::string path_;    // what the run plans with
  std::string shared_;  // the default database copied ("": none to merge into)
  size_t copied_ = 0;   // bytes of path_ that were copied, not added by the run
  bool private_ = false, finished_ = false;
};

}  // namespace tessera::fusion
