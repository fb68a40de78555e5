// The verifier's mutation test (issue 19): corrupt correct mutants
// (pet/seed_pairs.h) in the ways a buggy mutant generator or corrector would —
// weights shuffled; a padding, stride, dilation, slice bound, split size or
// permutation entry off by one; a Concat's inputs swapped; one slice of an
// intermediate scaled; an output region replaced by zeros or by another
// region; a box dropped from a correction — then run the verifier and the
// brute-force float comparison on each and count. The figure that matters:
// no corrupted mutant is accepted where brute force finds a difference
// (accepted = Equivalent, or Partial whose wrong boxes miss a differing
// element).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace tessera::pet {

struct MutationCounts {
  int64_t corrupted = 0;          // corrupted mutants checked
  int64_t brute_differs = 0;      // brute force finds a difference
  int64_t equivalent = 0, partial = 0, different = 0;  // the verifier's verdicts
  int64_t accepted_with_difference = 0;  // must be 0
  int64_t flagged_without_difference = 0;  // verifier reports wrong boxes where brute force sees none
  int64_t boxes_exact = 0;        // Partial whose wrong boxes are exactly the differing elements
  std::map<std::string, int64_t> by_kind;  // corruptions made, per kind
  double seconds = 0;
};

// Builds `count` corrupted mutants from the seed families at random small
// shapes (seeded), checks each, and returns the counts.
MutationCounts run_mutation_test(int64_t count, uint64_t seed);

// The counts as a short text report (one figure per line).
std::string format_counts(const MutationCounts& c);

}  // namespace tessera::pet
