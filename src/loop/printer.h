// Deterministic text form of the loop IR, for dumps and tests. Binary
// operators get the fewest parentheses that keep the tree unambiguous
// (`i*128 + j`, `(a + b)*c`, `a - (b - c)`); `*`, `/`, `%` are printed tight.
#pragma once

#include <string>

#include "loop/stmt.h"

namespace tessera::loop {

// One-line text of an expression: `A[i*64 + k]`, `select(x < 0, 0.0f, x)`.
std::string to_string(const Expr& e);
// A statement, two spaces per level from `indent`, one line per statement,
// every line ending in '\n'.
std::string to_string(const Stmt& s, int indent = 0);
// `kernel NAME(A: f32[64x32], B: f32[32x128]) -> (C: f32[64x128]) {` body `}`.
std::string to_string(const Kernel& k);

}  // namespace tessera::loop
