// Guard chains resolved per interval (loop unswitching): guarded selects
// (te::if_then_else) whose condition is one comparison of an index
// expression `e` with a constant — a concatenation's input boundaries,
// select(c < 32, x0[c], select(c < 64, x1[c - 32], x2[c - 64])) — are tested
// once around the outermost loop in which `e` does not change, instead of at
// every element: the loop is copied once per interval between the
// constants, chosen by a balanced tree of ifs on `e`, and in each copy the
// selects on `e` are replaced by the branch that interval takes. A
// concatenation computed with its axis outside its inner loops (the
// generic rule's partition, generic_schedule.h) becomes one plain copy loop
// per input, its reads neither guarded nor predicated.
//
// Each cut is first simplified with the bounds of the loops around it (a
// channel read back through a blocked reorder, (c * 16 + lane) / 16, is c;
// a cut those bounds decide is replaced by its branch).
//
// Runs on a lowered nest before flattening (stage reads and guards still
// marked). Conjunctions (padding's in-bounds tests) are left as they are.
// Every element gets the value it had; only which select branch is
// evaluated is decided earlier.
#pragma once

#include <cstdint>
#include <optional>

#include "loop/stmt.h"

namespace tessera::schedule {

// A guard that is one comparison of index arithmetic `e` (variables and
// constants) with an integer constant, as `e < threshold` or its negation.
struct GuardCut {
  loop::Expr e;
  int64_t threshold = 0;
  bool below = true;  // the guard holds for e < threshold (else for e >= threshold)
};
// The cut of a guarded select's condition (te::if_then_else); none for
// other conditions (conjunctions, plain selects, comparisons of loads).
std::optional<GuardCut> guard_cut(const loop::Expr& cond);

// The most intervals one loop is copied into; a loop whose guard chain
// has more boundaries keeps its selects.
inline constexpr int kMaxUnswitchCopies = 128;

// The statement with every such guard chain resolved around its loops.
loop::Stmt unswitch_guards(const loop::Stmt& s);

}  // namespace tessera::schedule
