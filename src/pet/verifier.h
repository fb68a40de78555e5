// PET's verifier (§5.1, Theorems 1 and 2): is a mutant equal to the original
// program, and if not, on exactly which boxes of which outputs does it differ?
//
// Both programs must have the same graph inputs and outputs (count, order,
// dtype, dims). Each output's boxes are the grid of the union of both
// programs' splitting points (pet/boxes.h; a dim may be factored into atoms,
// and a box is then a product of intervals of atoms). Theorem 1: inside a box
// both programs are the same sum of products of inputs at positions affine in
// the element's (atom) coordinates, so if they agree at v0 = the box's lower
// corner and at v0 + e_i for each coordinate i the box is wider than 1 in,
// they agree on the whole box. Theorem 2 (Schwartz-Zippel): each position is evaluated exactly over
// Z_p, p = 2^31 - 1 (pet/field_eval.h), on `tests` independent random inputs;
// a program of n graph inputs is a polynomial of degree at most n in their
// elements, so a position where the two differ agrees on one random input with
// probability at most n/p, and on t inputs with probability at most (n/p)^t.
// With the default t = 2 and a subprogram of n = 4 inputs that is 3.5e-18 per
// wrong position (n = 16: 5.6e-17). A box reported wrong is certainly wrong
// (the programs differ at one of its positions on some input).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/box.h"

namespace tessera::pet {

enum class Verdict {
  Equivalent,  // no wrong box
  Partial,     // some boxes wrong: listed exactly, per output
  Different,   // not comparable: signatures differ, or an op cannot be evaluated (see reason)
};
std::string verdict_name(Verdict v);  // "equivalent", "partial", "different"

struct VerifyOptions {
  int tests = 2;                    // t, independent random inputs
  uint64_t seed = 0x5EEDF1E1D5ull;  // of the random inputs
  // More boxes than this in one output is refused (Different, with the reason),
  // so a pathological split cannot stall a search.
  int64_t max_boxes = int64_t{1} << 20;
  // Stop once the wrong boxes found hold more than this many output elements
  // (< 0: no limit): the search drops such a mutant anyway, its corrections
  // would redo most of the work. The result is then Partial with
  // `gave_up` set and an incomplete list of wrong boxes.
  int64_t max_wrong_elements = -1;
};

struct OutputCheck {
  std::vector<Box> wrong;      // the wrong boxes as contiguous boxes of the output
                               // (a box over factored dims may be several)
  int64_t wrong_elements = 0;  // elements inside them
  int64_t boxes = 0;           // boxes checked (over atoms)
};

struct VerifyResult {
  Verdict verdict = Verdict::Equivalent;
  std::string reason;                // why Different
  std::vector<OutputCheck> outputs;  // per graph output (empty when Different)
  int64_t positions = 0;             // positions evaluated per program per test
  bool gave_up = false;              // stopped at max_wrong_elements: the wrong boxes are not all listed

  int64_t wrong_boxes() const;
  int64_t wrong_elements() const;
  bool equivalent() const { return verdict == Verdict::Equivalent; }
};

VerifyResult verify(const Graph& original, const Graph& mutant, const VerifyOptions& options = {});

// The same, for many mutants of one original (the search checks dozens per
// subprogram): the original is planned and its splitting points inferred
// once, and its exact evaluators (one per test, with their memo of computed
// elements) are kept across mutants, so each mutant pays only for its own
// side. check(m) returns what verify(original, m, options) returns. The
// original must outlive the Verifier.
class Verifier {
 public:
  explicit Verifier(const Graph& original, const VerifyOptions& options = {});
  ~Verifier();
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  VerifyResult check(const Graph& mutant);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The brute-force reference for tests and the mutation test: both graphs run
// by the reference interpreter on the same random float inputs (uniform in
// [-1, 1), seeded), every output element compared; an element differs when
// |a - b| > rtol * (1 + the largest magnitude of the original's output), or
// exactly one of them is NaN, on any of `trials` independent inputs (one
// input can make a real difference as small as the tolerance by chance).
// Throws an Error when a graph cannot run.
struct FloatDiff {
  std::vector<Dims> dims;                       // per output
  std::vector<std::vector<int64_t>> differing;  // per output, flat indices, ascending
  int64_t count() const;
};
FloatDiff brute_force_diff(const Graph& original, const Graph& mutant, uint64_t seed, double rtol = 1e-5,
                           int trials = 2);

// Per output, whether each element lies in a wrong box (flat, row-major).
std::vector<std::vector<char>> wrong_mask(const VerifyResult& r, const std::vector<Dims>& dims);

}  // namespace tessera::pet
