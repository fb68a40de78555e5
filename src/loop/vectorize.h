// Lowering of vectorized loops to vector code (the idea of Halide's
// VectorizeLoops): a `for (i, min, n) vectorized` loop with a constant extent n
// becomes its body run once with i = ramp(min, 1, n). Expressions that depend on
// i become n-lane vectors (arithmetic, casts, selects, math calls, loads:
// contiguous ramp indices give vector loads, others gathers; stores likewise
// vector stores or scatters); the rest stay scalar and are broadcast where
// they meet vectors. Lets whose value becomes a vector get a vector variable;
// an if whose condition depends on i becomes predicated stores and loads (a
// false lane reads 0 and touches no memory), an if whose condition does not
// stays a scalar if. Inner serial and unrolled loops stay loops with a
// vectorized body; temporaries allocated inside get one slice per lane.
//
// The result computes exactly what the serial loop computes. A loop stays
// serial (ForKind::Serial) when that cannot be guaranteed or expressed:
//  - its extent is not a constant, or is larger than kMaxVectorLanes;
//  - lanes might interact through memory: every buffer the body stores to must
//    be accessed at one index only (the same expression in every load and
//    store of it), affine in i with a nonzero stride larger than what the
//    inner loops add (`C[i*N + j]`, `T[i*K + k]` with k < K), so that each
//    lane owns its elements. This rejects reductions into one element
//    (`acc[0] = acc[0] + x[i]`) and loop-carried dependences (`A[i+1] = A[i]`);
//  - the body has a parallel loop, an inner loop whose bounds depend on i, a
//    runtime call or Evaluate statement, or is already vector code (so of two
//    nested vectorized loops only the inner one is vectorized).
// Scalar loads inside a masked region stay scalar only when their index is
// known in bounds (else they become masked gathers of a broadcast index), so
// no memory is touched that the serial loop would not touch.
// An extent of 1 binds i to min; an extent <= 0 removes the loop. The body is
// simplified before (with i's range known) and after vectorizing (ramps
// folded, so contiguous accesses show as `ramp(base, 1, n)` indices; a gather
// of one element becomes a broadcast scalar load). No vectorized loop remains
// in the output.
#pragma once

#include "loop/stmt.h"

namespace tessera::loop {

// Vectorized loops with a larger constant extent are left serial.
inline constexpr int kMaxVectorLanes = 64;

// Turns every vectorized loop into vector code, or into a serial loop where it cannot.
Stmt vectorize_loops(const Stmt& s);
// vectorize_loops on a kernel's body.
Kernel vectorize_loops(const Kernel& k);

}  // namespace tessera::loop
