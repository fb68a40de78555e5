// The fusion planner's profiling database: for a candidate fusion (op types,
// shapes, attributes and ISA in its key), the measured latency of the fused
// kernel and the sum of its parts' latencies. Persisted as one text line per
// entry in the user's cache directory, so later compilations reuse the
// measurements instead of repeating them. The file is a support/tsv_store.h
// store: "key<TAB>fused_seconds<TAB>parts_seconds", later lines win.
#pragma once

#include <optional>
#include <string>

#include "support/tsv_store.h"

namespace tessera::fusion {

// The revision of the code generator whose kernels the measurements describe:
// part of every key (with the ISA), and bumped when schedules or lowering
// change what a block costs, so a cache from an older build is not trusted.
inline constexpr int kCodegenRevision = 14;

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

  const std::string& path() const { return store_.path(); }
  size_t size() const { return store_.size(); }
  int hits() const { return store_.hits(); }
  int misses() const { return store_.misses(); }

 private:
  TsvStore store_;
};

}  // namespace tessera::fusion
