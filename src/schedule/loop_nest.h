// The loops of one stage under a schedule: the stage's axes (one loop per
// output dimension, then one per axis of a top-level reduction) transformed
// by split / fuse / reorder and annotated (vectorize / unroll / parallel),
// then built into a loop-IR nest. Loops run from 0; each original axis is an
// expression of the leaf loop variables, and splits whose factor does not
// divide the extent add guards.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

struct Leaf {
  std::string name;  // stage-local loop name
  loop::Var var;     // named "<stage>.<name>"
  loop::Expr extent;
  loop::ForKind kind = loop::ForKind::Serial;
  bool reduce = false;
};

class LoopNest {
 public:
  // Axes of `stage` over the given domain (per output dim: first index and
  // extent; expressions may use enclosing loop variables).
  // `limits` (optional, per dim) adds a guard axis < limit, for domains whose
  // loops run over a constant bound larger than the symbolic extent.
  LoopNest(const te::Stage& stage, const std::vector<loop::Expr>& mins, const std::vector<loop::Expr>& extents,
           const std::vector<loop::Expr>& limits = {});

  // Applies a loop step (split, fuse, reorder, vectorize, unroll, parallel,
  // accumulate).
  void apply(const Directive& step);

  const std::vector<Leaf>& leaves() const { return leaves_; }
  const Leaf* find(const std::string& name) const;
  // Values of the spatial axes and of the top reduction's axes in leaf variables.
  const std::vector<loop::Expr>& spatial_values() const { return spatial_; }
  const std::vector<loop::Expr>& reduce_values() const { return reduce_; }

  // Builds the nest. `store(indices, value)` makes the store of one element
  // (indices are the spatial values), `load_self(indices, predicate)` a read
  // of one (predicate: undefined, or read only where true, else zero).
  // Bodies without a top-level reduction store their formula; a top-level
  // reduction stores its init in the loops that enclose no reduce loop, then
  // updates with the combiner. With an accumulate loop, see accumulated().
  using StoreFn = std::function<loop::Stmt(const std::vector<loop::Expr>&, loop::Expr)>;
  using LoadFn = std::function<loop::Expr(const std::vector<loop::Expr>&, loop::Expr)>;
  loop::Stmt build(const StoreFn& store, const LoadFn& load_self) const;

 private:
  Leaf& leaf(const std::string& name);
  void substitute_all(const loop::Var& v, const loop::Expr& value);
  size_t position(const std::string& name) const;
  // The nest from the accumulate loop (at `at`) inward: the elements it
  // updates are read into a local accumulator before the loop (the init on
  // the first iteration of the reduce loops outside it), updated there, and
  // written back after it. With reduce loops outside, each block sums from
  // the identity and joins the element at the write-back; when those reduce
  // loops are the innermost ones outside (from `from` to `at`, see
  // accumulated_from), the nest starts at `from`: the elements take the
  // init once before them, and each block adds into them unconditionally.
  loop::Stmt accumulated(size_t at, size_t from, const StoreFn& store, const LoadFn& load_self) const;
  // Where the accumulated nest starts: the first of the reduce loops
  // directly outside `at` (single-iteration spatial loops may sit among
  // them) when no other loop outside is a reduction (and combine(init,
  // first block) is the number the select gave), else `at`.
  size_t accumulated_from(size_t at) const;
  // Iterations of the leaves with constant extents (saturating at INT64_MAX).
  int64_t constant_iterations() const;
  // Schedules are untrusted input too (artifacts, records): a split may not
  // make the loops run far more iterations than the domain, nor the unrolled
  // and vectorized loops of one body hold too many copies of it.
  void check_bounds(const Directive& step) const;

  const te::Stage& stage_;
  int64_t domain_ = 1;  // constant_iterations() before any step
  std::vector<Leaf> leaves_;
  std::vector<loop::Expr> spatial_, reduce_;
  std::vector<loop::Expr> guards_;  // conditions from non-dividing splits
  std::vector<loop::Expr> last_;    // per spatial axis: its last index in the domain
  std::string accumulate_;          // the accumulate loop, if any
  bool shifted_ = false;            // some split shifted its last iteration back (overlap)
};

// Rewrites every Reduce inside a statement's expressions into explicit
// accumulation: a one-element temporary, its init, and loops over the
// reduction's axes (for formulas that use a reduction inside a larger
// expression). Reads under a select branch stay guarded by its condition.
loop::Stmt lower_inner_reductions(const loop::Stmt& s);

}  // namespace tessera::schedule
