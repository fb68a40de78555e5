// Shared between the program optimizer's files (pet/search*.cpp): the
// candidates and what the search learned of each subprogram, and the search
// itself (pet/search.h says what it does and what keeps it within its
// budget). search.cpp runs it (the budget, measurements, each subprogram in
// turn, the beam search), search_rounds.cpp searches one subprogram's
// mutants, search_replay.cpp replays the choices the database keeps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/layout_context.h"
#include "pet/mutants.h"
#include "pet/pet_db.h"
#include "pet/search.h"
#include "pet/subprogram.h"
#include "pet/verifier.h"
#include "support/stopwatch.h"

namespace tessera::pet::search_detail {

// A candidate replacement of one subprogram.
struct Candidate {
  std::string family;
  std::shared_ptr<Graph> graph;  // same inputs and outputs as the subprogram (weights as inputs), corrected
  uint64_t hash = 0;             // structural hash of `graph` (weights are inputs: contents play no part)
  bool partial = false;
  int boxes = 0;
  int64_t wrong_elements = 0;
  double seconds = -1;           // measured; < 0: not measured
  std::vector<uint64_t> path;    // hashes of the mutants from the original to this one
  int record = -1;               // its line in the report (by index: Found's, then the report's)
};

// A mutant waiting to be verified, measured or mutated again, ordered by
// `key`: its static estimate (before verification that of the mutant alone, a
// lower bound of the corrected one's), ties in generation order.
struct Pending {
  double key = 0;
  size_t seq = 0;
  Mutant mutant;                 // family: the chain from the original ("D2H+D2W")
  std::vector<uint64_t> path;
  std::optional<Candidate> verified;
  bool dead = false;             // verified and not usable
};

// What the search learned about one structure of subprogram: shared by every
// subprogram of that structure (their mutants, verdicts and costs are the
// same, the weights being inputs).
struct Found {
  double original_seconds = -1;         // < 0: not measured (no candidate was)
  std::vector<Candidate> candidates;    // measured and cheaper than the original, cheapest first
  std::vector<CandidateRecord> records; // every candidate measured, for the report
  int index = -1;                       // the subprogram it was found for
};

// What the beam search sees of one subprogram.
struct Entry {
  const Subprogram* sp = nullptr;
  int index = -1;  // in model order
  std::string label;
  double original_seconds = -1;
  std::vector<Candidate> candidates;
};

// The hash as 16 hex digits (the database's keys).
std::string hex(uint64_t h);
// Elements of the graph's outputs, all of them together.
int64_t output_elements(const Graph& g);

// The search of one model (optimize_program).
class Search {
 public:
  Search(Graph& g, const SearchOptions& o, const CostFn& cost, PetDb& db, const std::string& target);
  SearchReport run();

 private:
  // A graph's hash (the subprogram's or a candidate's) keyed by what it is
  // measured beside: the layout its neighbours hold its values in and the
  // consumers fused after it. Keys costs in the database and the subprograms
  // shared by structure.
  static uint64_t in_context(uint64_t hash, const Subprogram& sp) {
    return hash_with_context(hash_with_context(hash, sp.context), sp.consumers_hash);
  }
  static uint64_t keyed(const Subprogram& sp) { return in_context(sp.hash, sp); }
  // The database key of a graph hash already in context.
  std::string db_key(uint64_t keyed_hash) const { return target_ + ":" + hex(keyed_hash); }

  // The budget (search.cpp).
  double time_left() const { return o_.budget_seconds - watch_.seconds() - check_reserve_; }
  bool out_of_time() const { return time_left() <= 0; }
  // Whether a measurement may start: time is left and, from the
  // measurements so far (the longest of them: an original, or a candidate
  // with corrections, takes longer than the mean), it would end within the
  // budget.
  bool may_measure() const { return time_left() > longest_measure_; }
  void reserve_for_check();
  double searchs_budget() const;
  void stop();
  void record_not_reached(const std::vector<char>& examined);
  // Progress and notes on stderr (search.cpp).
  void show_progress(size_t k, size_t i, bool done);
  void note(const std::string& line) const;
  // Measurements, from the database or timed (search.cpp).
  double measure(const Subprogram& sp, const Graph& candidate, uint64_t hash);
  bool measure_candidate(const Subprogram& sp, Found& f, Candidate& c, bool& original_failed);

  // One subprogram's search: its mutants verified, corrected and measured
  // (search_rounds.cpp).
  std::optional<Candidate> check(const Subprogram& sp, Verifier& verifier, const Mutant& m, int64_t elements);
  std::vector<Mutant> mutants_of(const Subprogram& sp, const Graph& parent, bool dfs = true);
  VerifyOptions verify_options(const Subprogram& sp) const;
  Found search(const Subprogram& sp, bool& cut);

  // The choices an earlier search kept in the database (search_replay.cpp).
  std::optional<Candidate> rebuild(const Subprogram& sp, const std::string& key, const std::vector<uint64_t>& path);
  void record_graph(const std::string& key, const Candidate& c);
  std::optional<Candidate> replay(const Subprogram& sp, const std::vector<uint64_t>& path);
  std::optional<Found> from_database(const Subprogram& sp, const std::string& choice_key);

  // Each subprogram in turn, then the choice among their candidates (search.cpp).
  Entry examine(const Subprogram& sp, int index);
  void choose_and_apply();

  Graph& g_;
  const SearchOptions& o_;
  const CostFn& cost_;
  PetDb& db_;
  std::string target_;
  Stopwatch watch_;
  Stopwatch::Clock::time_point deadline_ = Stopwatch::Clock::time_point::max();
  double longest_measure_ = 0;  // seconds of the longest measurement so far
  bool reserve_asked_ = false;
  double check_reserve_ = 0;  // seconds kept for the whole-model check (reserve_for_check)
  int cut_at_ = -1;  // the subprogram the budget cut short, if any
  double last_shown_ = 0;
  bool shown_ = false;
  std::vector<Subprogram> subprograms_;
  std::map<uint64_t, Found> found_;  // by subprogram structure
  std::vector<Entry> entries_;
  SearchReport report_;
};

}  // namespace tessera::pet::search_detail
