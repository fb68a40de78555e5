// The fusion planner's profiling database: for a candidate fusion (op types,
// shapes, attributes and ISA in its key), the measured latency of the fused
// kernel and the sum of its parts' latencies. Persisted as one text line per
// entry in the user's cache directory, so later compilations reuse the
// measurements instead of repeating them.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tessera::fusion {

// The revision of the code generator whose kernels the measurements describe:
// part of every key (with the ISA), and bumped when schedules or lowering
// change what a block costs, so a cache from an older build is not trusted.
inline constexpr int kCodegenRevision = 10;

struct ProfileEntry {
  double fused_seconds = 0;  // the fused block, one kernel
  double parts_seconds = 0;  // its parts as separate kernels, summed
  bool fuse() const { return fused_seconds <= parts_seconds; }
};

class ProfileDb {
 public:
  // An empty database kept in memory only (path empty) or backed by the file
  // at `path` (read now if it exists; entries appended as they are recorded).
  explicit ProfileDb(std::string path = "");

  // $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera,
  // with "fusion_profile.tsv"; "" when none of them is set.
  static std::string default_path();

  std::optional<ProfileEntry> find(const std::string& key) const;
  // Records an entry (replacing any earlier one) and appends it to the file;
  // a file that cannot be written only loses persistence (warned once).
  void record(const std::string& key, const ProfileEntry& e);

  const std::string& path() const { return path_; }
  size_t size() const;
  int hits() const { return hits_; }
  int misses() const { return misses_; }

 private:
  std::string path_;
  std::map<std::string, ProfileEntry> entries_;
  mutable std::mutex mu_;
  mutable int hits_ = 0, misses_ = 0;
  bool warned_ = false;
};

}  // namespace tessera::fusion
