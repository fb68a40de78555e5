// PET's program optimizer (PET §6, Algorithm 2): the model split into
// multi-linear subprograms (pet/subprogram.h); each mutated for a few rounds
// (pet/mutants.h: mutants of the original, then mutants of the likeliest
// mutants); mutants examined against the original by the verifier
// (pet/verifier.h) and, when partially equivalent, completed by the
// corrector (pet/corrector.h); the likeliest candidates measured (a
// standalone graph compiled and timed by the caller's CostFn, results kept in
// PetDb; beside identity neighbours that hold its inputs and outputs in the
// layout the model gives them, SearchOptions::blocked_values); then a beam
// search over the subprograms picks one candidate each (the original among
// them) so the model's summed cost is least, and the chosen ones are spliced
// into the model. Fully and partially equivalent
// mutants share the one pipeline: a fully equivalent mutant is a partial one
// with no boxes.
//
// Where the time goes and what keeps it within the budget (issue 19: at most
// 60 s per model on a 2-core machine):
// - The costliest subprograms (by the static estimate) are searched first,
//   so a budget that ends the search leaves out the cheap ones.
// - Work is shared by structure. Subprograms with one structural hash (the
//   repeated blocks of ResNet, Inception, BERT: weights are inputs, so their
//   contents play no part) have the same mutants, verdicts, corrections and
//   costs: the first is searched, the others reuse its result.
// - Work is ordered by the static estimate (pet/estimate.h). A mutant
//   estimated past max_estimate_ratio times the original is dropped at once;
//   the others are verified (and corrected) only when their turn comes, in
//   the order of their estimates (a mutant's own estimate is a lower bound of
//   its corrected form's): as one of the mutants_per_round parents of the
//   next round, or as one of the max_measured candidates measured. The
//   original is planned once for all its mutants (pet::Verifier), which
//   gives up on a mutant as soon as its wrong boxes exceed what the search
//   would correct, and is measured only when some candidate is.
// - A subprogram without a mutant costs its generation and nothing else;
//   its measurements stop after stop_after_losers candidates in a row lost
//   clearly to the original.
// - The pet pass (opt/pet_pass.cpp) keeps SearchOptions::model_check_share
//   of its budget for the whole-model checks that follow the search: the
//   search's own budget_seconds is the rest.
// - The budget is a hard stop: checked before every generation, verification
//   and measurement, inside the generator (before each mutant it builds and
//   each DFS step: a generation over a batch-8 map takes seconds), and a
//   measurement is not started when the longest measurement so far says it
//   would end past the budget. So the search ends within the budget plus one
//   mutant's build, verification and correction, plus what one measurement
//   takes beyond the longest before it (all of it when it is the first).
//   What was measured by then is
//   kept (and chosen from); after that only subprograms whose structure was
//   searched already are taken; the report says where the budget ended.
// - A second compilation rebuilds the choices kept in the database (the
//   chosen candidate's graph per subprogram, pet/graph_line.h) and reads
//   their costs from it: no generation, no verification, no measurement. A
//   database without the graph (an earlier version's) replays the path of
//   mutant hashes instead (the path's mutants generated again, one
//   verification) and adds the graph for the next time. That holds when
//   the budget cut the first search too: the database notes which
//   subprograms it cut short or never reached, under which budget; a
//   compile with no larger budget keeps what the first one chose for them
//   (the best measured so far, or the original), a larger budget searches
//   them again (resumes: the costs measured before come from the database).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/pet_db.h"

namespace tessera::pet {

struct SearchOptions {
  double budget_seconds = 60;  // wall time for the whole search, measurements included (a hard stop)
  int beam = 5;                // graph states kept between subprograms (K)
  int rounds = 3;              // rounds of mutating mutants (PET: about 4; 3 keeps to the budget)
  int mutants_per_round = 5;   // the likeliest usable mutants of a round (by the estimate) mutated again
  int max_measured = 4;        // candidates measured per subprogram (by the static estimate, likeliest first)
  // A subprogram's measurements stop after this many candidates in a row
  // measured more than 10% slower than the original (0: never): the next
  // ones are estimated slower still.
  int stop_after_losers = 2;
  // Mutants whose static estimate exceeds the original's by this factor are
  // neither verified, measured nor mutated again (0: no such limit).
  double max_estimate_ratio = 1.5;
  bool equivalent = true;      // use fully equivalent mutants (ablation switch)
  bool partial = true;         // use partially equivalent mutants (ablation switch)
  // A partially equivalent mutant whose wrong boxes hold more than this share
  // of its outputs' elements is dropped: its corrections redo most of the work.
  double max_wrong_fraction = 0.25;
  int verify_tests = 2;        // random tests per position (Theorem 2)
  uint64_t seed = 1;
  // Subprograms of one structure searched once, the others reuse the result
  // (off: each searched on its own, for tests that the sharing changes nothing).
  bool share_by_structure = true;
  bool verbose = false;        // progress on stderr for every subprogram
  // Past this many seconds a search prints its progress on stderr anyway
  // (subprogram i/N, what it found so far), at most every 2 s.
  double progress_after_seconds = 5;
  std::string only_family;     // keep only mutants of this family ("" = all: experiments, tests)
  // Names of the model's values the target holds in the channel-blocked
  // layout (the pet pass finds them): a candidate is measured with those of
  // its inputs and outputs produced and consumed blocked, as in the model
  // (pet/layout_context.h). Empty: every candidate measured alone.
  std::set<std::string> blocked_values;
  // A candidate is measured with up to this many of the model's elementwise
  // consumers of its outputs fused after it (pet/fused_consumers.h; outputs
  // the layout context gives a neighbour excepted); 0: none.
  int max_fused_consumers = 6;
  // The pet pass times the whole model with the search's choices against the
  // original (both compiled for the target, as the candidates are) and keeps
  // the choices only when they make it at least this share faster (the
  // median of the rounds' ratios) and faster in three rounds of four or more
  // (their upper quartile below 1): a subprogram timed alone does not see what its replacement costs its
  // neighbours (a layout change, a fusion lost across its boundary), and
  // gains within the measurement's noise are not worth a different graph.
  // Negative: no such check.
  double min_model_gain = 0.02;
  // The whole-model checks run within budget_seconds. When the runtime can
  // compile the model as it came for them (PassContext::model_cost), the
  // pet pass does so before the search's first measurement and keeps what
  // the check will need out of the search's budget (check_reserve): the
  // other model's compile (taken as long as the first's) and its warm-up,
  // and as many rounds in turns as fit in this share of the budget, at
  // least two, at most runtime::kCompareRounds. Else the search
  // stops at (1 - this share) of the budget and the checks have the rest.
  // No round starts that would end past the budget (judged by the last
  // round), and choices not checked are undone; the fallback (fallback_gain)
  // is tried only when what is left covers half the first check's time.
  double model_check_share = 0.25;
  // Called once by the search, before its first measurement: seconds it
  // keeps out of its budget from then (the pet pass's reserve for the
  // whole-model check). Empty: none.
  std::function<double()> check_reserve;
  // When the whole model does not pay, the pass tries once more with only the
  // candidates that saved at least this share of their subprogram's time
  // alone (the likeliest to survive their neighbours), their costs from the
  // database; 0: no second try.
  double fallback_gain = 0.15;
  // Candidates saving less than this share of their subprogram's measured
  // time are not chosen (the fallback's filter; 0 in a first search).
  double min_candidate_gain = 0;
};

// One whole-model check of the pet pass (SearchOptions::min_model_gain).
struct ModelCheck {
  std::string choices;  // which were spliced in: "all 5 choices", "the 3 choices each 15% faster alone"
  double before = 0, after = 0;  // seconds: the model as it came, with the choices (medians)
  double ratio = 1;              // after over before (timed in turns: the median of the rounds' ratios)
  double ratio_high = 1;         // the rounds' ratios' upper quartile
  bool measured = false;         // now (else both times from the database)
  double seconds = 0;            // the check's wall time
  double time_left = 0;          // seconds of the pass's budget left when it began (its bound)
  bool kept = false;
  std::string why;               // why not kept ("" when kept)
};

// Seconds a candidate takes on the target: a standalone graph with the
// weights bound as constants, compiled and timed. Throws an Error when it
// cannot be compiled (the candidate is then dropped).
using CostFn = std::function<double(const Graph&)>;

// One candidate the search measured (or reused from an identical subprogram).
struct CandidateRecord {
  std::string subprogram;  // "region of 2 nodes (Conv node 'conv4_1', ...)"
  std::string family;      // "D2H", "merge-parallel-conv", "D2H+D2W", ...
  bool partial = false;    // partially equivalent (corrected) or fully
  int boxes = 0;           // wrong boxes corrected
  int64_t wrong_elements = 0;
  double seconds = 0;      // measured (or from the database)
  double original_seconds = 0;
  bool applied = false;    // spliced into the model
  int same_as = -1;        // >= 0: the result of subprogram #same_as (0-based) reused, same structure
};

struct SearchReport {
  int subprograms = 0;      // found in the model
  int searched = 0;         // examined before the budget ended (shared and replayed included)
  int shared = 0;           // of those, answered by an earlier subprogram of the same structure
  int replayed = 0;         // of those, answered by the database's choice
  int rebuilt = 0;          // of those, rebuilt from the database's graph (no mutant generated or verified)
  // of those, left as they are: a search under a budget no larger than this
  // one was cut before reaching them (pet_db.h, "cut"); nothing measured
  int left_to_larger_budget = 0;
  int without_mutants = 0;  // of those, with no mutant to try (no other work done)
  int mutants = 0;          // generated, before verification
  int verified = 0;         // mutants verified (the rest were estimated to lose, or not needed)
  int equivalent = 0, partial = 0, different = 0;  // verdicts of those verified
  int measured = 0, db_hits = 0;
  int applied = 0;          // subprograms replaced
  double seconds = 0;       // wall time of the search (check_baseline_seconds not included)
  // The model as it came compiled and run for the whole-model check, before
  // the first measurement (SearchOptions::check_reserve), and the seconds
  // kept for the check from then.
  double check_baseline_seconds = 0, check_reserve_seconds = 0;
  // ... of which enumerating subprograms, generating mutants, verifying,
  // correcting, measuring, and choosing and splicing
  double find_seconds = 0, generate_seconds = 0, verify_seconds = 0, correct_seconds = 0, measure_seconds = 0,
         apply_seconds = 0;
  bool budget_exhausted = false;
  std::string budget_note;  // where the budget ended the search ("" when it did not)
  double cost_before = 0, cost_after = 0;  // summed over the subprograms with a measured original
  // Set by the pet pass (0 when the search ran alone): its whole time, and of
  // it the post-optimizations (the mutants' weight derivations folded) and
  // the fallback's search; the whole-model checks' times are theirs below.
  double pass_seconds = 0, post_seconds = 0, fallback_seconds = 0;
  // The pet pass's whole-model checks, in order: the search's choices, then
  // (when they did not pay) the fallback's; the last kept one is the model's.
  std::vector<ModelCheck> model_checks;
  std::vector<CandidateRecord> candidates;
  std::vector<std::string> notes;  // candidates dropped and why
  // The report `--dump-pet` prints: every subprogram with a candidate
  // measured, every mutation examined and applied, with verdicts, boxes and
  // costs, the phases' times, and where the budget ended the search.
  std::string to_text() const;
};

// Searches and rewrites `g` in place. `target` names the machine and build
// the costs hold for (it prefixes the database's keys). Never makes the
// model slower by its own measure: each subprogram's original is a candidate.
SearchReport optimize_program(Graph& g, const SearchOptions& opts, const CostFn& cost, PetDb& db,
                              const std::string& target);

}  // namespace tessera::pet
