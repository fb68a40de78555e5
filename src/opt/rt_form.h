// The canonical form of a chain of reshapes and transposes ("R/T", PET's
// fused Reshape+Transpose op) on a static shape: x [in] -> reshape to
// `split` -> transpose by `perm` -> reshape to `out`. Every Reshape, Flatten,
// Squeeze, Unsqueeze and Transpose is one; two forms compose into one when
// the shape between them refines both (always for the chains PET's D2H/N2H
// mutants write); the normalized form is minimal, so an R/T and its inverse
// compose to the identity and a chain to at most three ops. Used by the R/T
// post-optimizations (rt_simplify.cpp).
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace tessera::rt {

struct Form {
  Dims in;                    // the input's dims
  Dims split;                 // the dims it is reshaped to (same element count)
  std::vector<int64_t> perm;  // transposed axis i is split axis perm[i]
  Dims out;                   // the output's dims (same element count)

  // The dims after the transpose: split[perm[i]] for every i.
  Dims transposed() const;
  // True when no element moves: the form is a reshape (after normalize()).
  bool is_reshape() const;
  // A reshape to the input's own dims (after normalize()).
  bool is_identity() const { return is_reshape() && in == out; }
  // The ops emit() writes for the normalized form: 0 (identity) to 3.
  int op_count() const;
  bool operator==(const Form&) const = default;
};

// The form of one R/T node (default domain Reshape, Flatten, Squeeze,
// Unsqueeze or Transpose, statically typed, a non-string dtype, at least one
// element), or nullopt for any other node.
std::optional<Form> form_of(const Node& n);

// The same map with size-1 axes of `split` dropped and the axes the transpose
// leaves adjacent and in order merged: the fewest axes that express it.
Form normalize(Form f);

// `first` then `second` (second.in == first.out) as one normalized form, or
// nullopt when no single reshape-transpose-reshape expresses the pair (the
// dims between them do not refine to a common factorization, e.g. [2,3]
// transposed then read as [3,2] then ...).
std::optional<Form> compose(const Form& first, const Form& second);

// The form mapping f's output back to its input.
Form inverse(const Form& f);

// Writes the normalized form's ops (Reshape, Transpose, Reshape; those that
// do nothing left out) reading `x`, before `pos` (or at the end when null),
// with output types of x's dtype; returns the last value (x itself when the
// form is the identity and `at_least_one` is false; with it, one Reshape).
Value* emit(Graph& g, Node* pos, Value* x, const Form& f, const std::string& name, bool at_least_one = false);

// t (dims f.in) moved as the form moves elements (dims f.out), computed by
// the reference interpreter on the emitted ops.
Tensor apply(const Form& f, const Tensor& t);

}  // namespace tessera::rt
