// Full unrolling of loops marked ForKind::Unrolled: a loop with a constant
// extent n <= kMaxUnrollIterations becomes n copies of its body, the loop
// variable replaced by min, min + 1, ..., min + n - 1, then simplified (a min
// that reads memory or mentions a variable the body rebinds is bound once by
// a let first, as the loop evaluated it once). Unrolled loops with a larger or
// non-constant extent become serial loops. Nested unrolled loops unroll
// inside out (an inner 8 x outer 8 nest gives 64 copies). Exact semantics are
// preserved.
#pragma once

#include "loop/stmt.h"

namespace tessera::loop {

// Unrolled loops with a larger constant extent are left serial.
inline constexpr int64_t kMaxUnrollIterations = 64;

// Replaces every unrolled loop by copies of its body, or by a serial loop where it cannot.
Stmt unroll_loops(const Stmt& s);
// unroll_loops on a kernel's body.
Kernel unroll_loops(const Kernel& k);

}  // namespace tessera::loop
