// Memory footprints of buffer accesses: an access's index as an affine form
// of the loop variables, and the bytes of distinct cache lines a set of
// accesses touches while some loop variables run over their ranges (the
// others held fixed). The static features measure each loop level's working
// set against the cache sizes with these.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loop/bounds.h"
#include "loop/stmt.h"

namespace tessera::cost {

// index = offset + sum(coefficient * term) + lane * lane_stride, lane in
// [0, lanes). A term is a variable or an opaque integer subexpression the
// form cannot see into (a division, modulo, product of variables, load):
// it varies when a variable it mentions does, over the range interval
// analysis gives it. Not affine (affine = false): vector index shapes the
// form cannot express (a ramp of ramps, a non-constant lane stride); the
// footprint then falls back to the interval of the whole index.
struct AffineIndex {
  bool affine = false;
  int64_t offset = 0;
  std::vector<std::pair<const loop::ExprNode*, int64_t>> terms;  // nonzero coefficients, sorted by term
  int64_t lane_stride = 0;
  int lanes = 1;
  // The opaque terms: their expression and the variables they mention.
  struct Opaque {
    loop::Expr expr;
    std::vector<const loop::VarNode*> vars;
  };
  std::vector<Opaque> opaque;
  bool operator==(const AffineIndex& o) const {
    return affine == o.affine && offset == o.offset && terms == o.terms && lane_stride == o.lane_stride &&
           lanes == o.lanes;
  }
};

// Affine forms of let-bound variables, substituted where they occur.
using LetForms = std::unordered_map<const loop::VarNode*, AffineIndex>;

AffineIndex affine_index(const loop::Expr& index, const LetForms& lets = {});

// One load or store of a buffer.
struct Access {
  const loop::BufferNode* buffer = nullptr;
  int elem_bytes = 4;
  int64_t buffer_bytes = 0;  // from the buffer's dims; 0 when unknown
  AffineIndex index;
  loop::Expr raw_index;      // for the interval fallback
  bool is_store = false;
};

// A loop's trip count (its constant extent, else the upper bound interval
// analysis gives it under `vb`; never negative); then binds its variable in
// `vb` to the range it runs over (walks of the loop IR call it on entering a loop).
int64_t enter_loop(const loop::ForNode* op, loop::VarBounds& vb);

// Loop variables that vary, with their trip counts; every other variable is fixed.
using VarExtents = std::unordered_map<const loop::VarNode*, int64_t>;

// Bytes of the distinct cache lines the accesses touch while the variables in
// `extents` run over [0, extent). Accesses of one buffer are unioned (their
// summed footprint, capped by the span they cover together); a buffer's
// footprint never exceeds its size.
double footprint_bytes(const std::vector<const Access*>& accesses, const VarExtents& extents, int line_bytes);

}  // namespace tessera::cost
