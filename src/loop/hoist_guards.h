// Loop-invariant guards hoisted out of loops: a loop whose whole body is an
// if (without else) on a condition that does not depend on the loop variable
// runs inside the if instead (`for v: if c: S` -> `if c: for v: S`), and
// the parts of a conjunction that do not depend on it move out alone
// (`for v: if a && b(v): S` -> `if a: for v: if b(v): S`). Applied inside
// out, a guard on a reduction tap (a convolution's zero padding along its
// outermost axis, left as a reduction condition instead of a padded copy)
// ends up around the loops inside that tap's loop, tested once per tap
// rather than once per multiply-add of the unrolled, vectorized tile.
// Lets and allocations between are passed when the condition does not use
// what they bind. Only conditions that read no memory and call nothing move;
// the statements run are exactly those run before.
#pragma once

#include "loop/stmt.h"

namespace tessera::loop {

// The statement with every loop-invariant guard hoisted as far out as it goes.
Stmt hoist_invariant_guards(const Stmt& s);
// hoist_invariant_guards on a kernel's body.
Kernel hoist_invariant_guards(const Kernel& k);

}  // namespace tessera::loop
