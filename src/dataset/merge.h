// `tessera dataset merge DIR -o FILE`: the rank files of a collection
// (DIR/records.rank<K>.jsonl, collect.h) joined into one records file,
// sorted by (task key, target, schedule, time). A triple has its records
// of one file: the one with its earliest record. More records of it there
// are the load guard's re-measures (load_guard.h), all kept; records of it
// in other files measured it twice and are dropped as duplicates. The same
// output for the same measurements however they were dealt to ranks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::dataset {

// The rank files in `dir` as (rank, path), by rank.
std::vector<std::pair<int, std::string>> rank_record_files(const std::string& dir);

struct MergeReport {
  int files = 0;
  int64_t read = 0, written = 0, duplicates = 0;
  int64_t partial = 0;  // last lines cut short by an interrupted rank (dropped)
  int64_t errors = 0;   // records written that carry an error code
};

// Writes `out` (replacing it); throws when `dir` has no rank files or a
// line of one is malformed (naming the file and line).
MergeReport merge_records(const std::string& dir, const std::string& out);

}  // namespace tessera::dataset
