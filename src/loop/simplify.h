// The loop-IR simplifier: constant folding (floor div/mod semantics),
// algebraic identities, canonical constant placement, index arithmetic,
// vector (ramp/broadcast) folding, bounds-based simplification from loop
// ranges and if-conditions, and removal of extent-1 loops and no-op statements.
// It preserves the IR's semantics exactly (see expr.h), assuming i32/i64 index
// arithmetic does not overflow.
#pragma once

#include "loop/bounds.h"
#include "loop/stmt.h"

namespace tessera::loop {

// Simplifies an expression, given known ranges of its free variables.
Expr simplify(const Expr& e, const VarBounds& vars = {});
// Simplifies a statement, given known ranges of its free variables.
Stmt simplify(const Stmt& s, const VarBounds& vars = {});
// Simplifies a kernel's body.
Kernel simplify(const Kernel& k);

}  // namespace tessera::loop
