// Interval (bounds) analysis of integer loop-IR expressions: the range an
// expression can take given the ranges of its variables. Bounds are int64;
// the extreme values stand for "unbounded". Like the simplifier, the analysis
// assumes integer arithmetic does not overflow.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>

#include "loop/expr.h"

namespace tessera::loop {

struct Interval {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static Interval everything() { return {}; }
  static Interval single(int64_t v) { return {v, v}; }
  bool has_min() const { return min != kNegInf; }
  bool has_max() const { return max != kPosInf; }
  bool is_single() const { return min == max; }
  bool operator==(const Interval&) const = default;
  std::string to_string() const;  // "[0, 127]", "[-inf, 3]"
};

// The smallest interval holding both.
Interval interval_union(const Interval& a, const Interval& b);
// The values of integer (or bool) type t.
Interval type_range(Type t);

using VarBounds = std::unordered_map<const VarNode*, Interval>;

// Range of an integer or bool expression over all its lanes; variables not in
// `vars` range over their type. Float expressions give everything().
Interval bounds_of(const Expr& e, const VarBounds& vars = {});

}  // namespace tessera::loop
