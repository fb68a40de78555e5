// Bound inference for compute_at: the symbolic range of index expressions
// when the loops inside a given loop vary, and from it the region of a
// producer that a statement reads.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "loop/stmt.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// An inclusive range [lo, hi] whose ends are expressions of fixed variables.
struct SymRange {
  loop::Expr lo, hi;
};
using SymRanges = std::unordered_map<const loop::VarNode*, SymRange>;

// The range of integer expression `e` when each variable in `vars` varies
// over its range (others are fixed). nullopt when the expression is not of a
// form the analysis handles (affine terms, division and modulo by positive
// constants, min, max, select, integer casts).
std::optional<SymRange> symbolic_range(const loop::Expr& e, const SymRanges& vars);

// Per dimension, the range of indices at which `s` reads output `value_index`
// of `producer`, with every loop inside `s` varying; nullopt when some index
// cannot be bounded. An unread producer gives an empty vector.
std::optional<std::vector<SymRange>> region_read(const loop::Stmt& s, const te::Stage* producer, int value_index);

}  // namespace tessera::schedule
