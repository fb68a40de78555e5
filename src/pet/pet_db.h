// PET's database: what the search measured and what it chose, kept in the
// user's cache directory so a second compilation of a model spends well
// under a second in PET (issue 19). Two kinds of entries, one tab-separated
// line each (later lines win):
//   cost    <candidate key>   <seconds>         a standalone candidate graph, compiled and timed
//   choice  <subprogram key>  <hash>.<hash>...  the candidate the search kept for a subprogram:
//                                               its path of mutant hashes from the original
//                                               (empty: the original was kept)
//   cut     <subprogram key>  <seconds> | -     the search's budget (seconds) ended before this
//                                               subprogram's search did: not reached (no
//                                               choice) or cut short (the choice is the best
//                                               of what it measured); "-": searched to the end
//                                               since
//   graph   <subprogram key>  <path> <family> <partial> <boxes> <wrong elements> <hash> <graph line>
//                                               the chosen candidate itself (corrected, weights
//                                               as inputs; pet/graph_line.h), so a second
//                                               compile rebuilds it with no generation and no
//                                               verification; <path> ties it to the choice
//                                               line, <hash> (its structural hash) checks it.
//                                               Without one (a database of an earlier
//                                               version), the choice is replayed by
//                                               generating the path's mutants again.
// Keys carry the target (ISA, threads, code generator revision) the caller
// gives, so measurements of one machine or build are not trusted by another.
// The file is a support/tsv_store.h store (the fusion profile's kind), keyed
// by the first two fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/tsv_store.h"

namespace tessera::pet {

class PetDb {
 public:
  // In memory only (path empty) or backed by the file at `path`, read now
  // when it exists; a torn or foreign line is ignored.
  explicit PetDb(std::string path = "");

  // $TESSERA_CACHE_DIR (else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera)
  // + "/pet.tsv"; "" when none is set.
  static std::string default_path();

  std::optional<double> cost(const std::string& key) const;
  void record_cost(const std::string& key, double seconds);
  // The candidate chosen for a subprogram: the structural hashes of the
  // mutants from the original to it (PET mutates mutants), empty when the
  // original was kept.
  std::optional<std::vector<uint64_t>> choice(const std::string& key) const;
  void record_choice(const std::string& key, const std::vector<uint64_t>& path);
  // The budget under which the search of a subprogram was cut short or not
  // reached at all: a later search with no larger budget would stop there
  // too, so it keeps the recorded choice (or the original) and measures
  // nothing; a larger budget searches it again (its measured costs reused).
  // nullopt: never cut, or searched to the end since (record_cut(key, nullopt)).
  std::optional<double> cut(const std::string& key) const;
  void record_cut(const std::string& key, std::optional<double> budget_seconds);

  // The candidate a search chose for a subprogram, as it was spliced in.
  struct Chosen {
    std::vector<uint64_t> path;  // as choice() has it
    std::string family;
    bool partial = false;
    int boxes = 0;
    int64_t wrong_elements = 0;
    uint64_t hash = 0;           // structural hash of the graph
    std::string graph;           // pet/graph_line.h's line (not decoded here)
  };
  std::optional<Chosen> chosen(const std::string& key) const;
  void record_chosen(const std::string& key, const Chosen& c);

  const std::string& path() const { return store_.path(); }
  // Cost lookups that found a measurement, and that did not.
  int hits() const { return store_.hits(); }
  int misses() const { return store_.misses(); }

 private:
  TsvStore store_;
};

}  // namespace tessera::pet
