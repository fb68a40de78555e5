// PET's program optimizer (PET §6, Algorithm 2): the model split into
// multi-linear subprograms (pet/subprogram.h); each mutated for a few rounds
// (pet/mutants.h: mutants of the original, then mutants of the best
// mutants); every mutant examined against the original by the verifier
// (pet/verifier.h) and, when partially equivalent, completed by the
// corrector (pet/corrector.h); the candidates measured (a standalone graph
// compiled and timed by the caller's CostFn, results kept in PetDb); then a
// beam search over the subprograms picks one candidate each (the original
// among them) so the model's summed cost is least, and the chosen ones are
// spliced into the model. Fully and partially equivalent mutants share the
// one pipeline: a fully equivalent mutant is a partial one with no boxes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/pet_db.h"

namespace tessera::pet {

struct SearchOptions {
  double budget_seconds = 60;  // wall time for the whole search, measurements included
  int beam = 5;                // graph states kept between subprograms (K)
  int rounds = 3;              // rounds of mutating mutants (PET: about 4; 3 keeps to the budget)
  int mutants_per_round = 5;   // the best mutants of a round mutated again
  int max_measured = 4;        // candidates measured per subprogram (by a static estimate, likeliest first)
  // Candidates whose static estimate exceeds the original's by this factor
  // are not measured (0: every candidate may be measured).
  double max_estimate_ratio = 1.5;
  bool equivalent = true;      // use fully equivalent mutants (ablation switch)
  bool partial = true;         // use partially equivalent mutants (ablation switch)
  // A partially equivalent mutant whose wrong boxes hold more than this share
  // of its outputs' elements is dropped: its corrections redo most of the work.
  double max_wrong_fraction = 0.25;
  int verify_tests = 2;        // random tests per position (Theorem 2)
  uint64_t seed = 1;
  bool verbose = false;        // progress on stderr
  std::string only_family;     // keep only mutants of this family ("" = all: experiments, tests)
};

// Seconds a candidate takes on the target: a standalone graph with the
// weights bound as constants, compiled and timed. Throws an Error when it
// cannot be compiled (the candidate is then dropped).
using CostFn = std::function<double(const Graph&)>;

// One candidate the search measured.
struct CandidateRecord {
  std::string subprogram;  // "Conv 'conv4_1' + Add" (its ops and first node)
  std::string family;      // "original", "D2H", "merge-parallel-conv", ...
  bool partial = false;    // partially equivalent (corrected) or fully
  int boxes = 0;           // wrong boxes corrected
  int64_t wrong_elements = 0;
  double seconds = 0;      // measured (or from the database)
  double original_seconds = 0;
  bool applied = false;    // spliced into the model
};

struct SearchReport {
  int subprograms = 0;      // searched
  int mutants = 0;          // generated, before verification
  int equivalent = 0, partial = 0, different = 0;  // verdicts
  int measured = 0, db_hits = 0;
  int applied = 0;          // subprograms replaced
  double seconds = 0;       // wall time of the search
  // ... of which generating mutants, verifying, correcting and measuring
  double generate_seconds = 0, verify_seconds = 0, correct_seconds = 0, measure_seconds = 0;
  bool budget_exhausted = false;
  double cost_before = 0, cost_after = 0;  // summed over the subprograms searched
  std::vector<CandidateRecord> candidates;
  std::vector<std::string> notes;  // skipped subprograms and why
  // The report `--dump-pet` prints: every subprogram searched, every
  // mutation examined and applied, with verdicts, boxes and costs.
  std::string to_text() const;
};

// Searches and rewrites `g` in place. `target` names the machine and build
// the costs hold for (it prefixes the database's keys). Never makes the
// model slower by its own measure: each subprogram's original is a candidate.
SearchReport optimize_program(Graph& g, const SearchOptions& opts, const CostFn& cost, PetDb& db,
                              const std::string& target);

}  // namespace tessera::pet
