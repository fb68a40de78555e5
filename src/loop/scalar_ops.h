// Scalar semantics of the loop IR's arithmetic, shared by the reference
// evaluator and the simplifier's constant folding so both agree bit for bit.
// Integers travel as int64 (u64 as its bit pattern), floats as double holding a
// value already rounded to the element type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loop/expr.h"

namespace tessera::loop {

// Truncates v to t's width and sign- or zero-extends it back (bool: v != 0).
int64_t wrap_int(DType t, int64_t v);
// Rounds v to the precision of float type t (f16, bf16, f32; f64 unchanged).
double round_float(DType t, double v);

// Floor division and floor modulo; division by zero yields 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

// An integer or bool binary op (Add .. Or) on values of type t; comparisons and
// logic return 0 or 1, arithmetic wraps to t.
int64_t int_binary(ExprKind op, DType t, int64_t a, int64_t b);
// A float arithmetic op (Add .. Max) on values of type t, rounded to t.
double float_arith(ExprKind op, DType t, double a, double b);
// A float comparison (EQ .. GE).
bool float_compare(ExprKind op, double a, double b);

// Conversions with Cast's semantics: float -> int truncates toward zero and
// saturates (NaN -> 0); int -> float rounds to nearest; int -> int wraps.
int64_t cast_to_int(DType to, double v);
int64_t cast_int_to_int(DType to, DType from, int64_t v);
double cast_to_float(DType to, DType from, int64_t v);

// Math intrinsics on floats: exp, log, sqrt, rsqrt, tanh, erf, sigmoid, abs,
// floor, ceil, round (half to even), trunc, sin, cos, tan, asin, acos, atan,
// sinh, cosh, asinh, acosh, atanh, log1p, expm1, pow, fmod (C's truncated
// remainder, sign of the dividend), fma.
// Arity of a math intrinsic, or -1 when `name` is not one.
int math_arity(const std::string& name);
// Evaluates a math intrinsic in type t; throws on an unknown name.
double call_math(const std::string& name, DType t, const std::vector<double>& args);

}  // namespace tessera::loop
