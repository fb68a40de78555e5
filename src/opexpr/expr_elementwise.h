// Shared helpers of the elementwise family's tensor expressions
// (src/ops/expr_elementwise*.cpp): reading inputs under numpy, legacy
// (opset < 7) and reshaped broadcasting, float work types, and integer bit
// manipulation built from the loop IR's arithmetic (it has no bitwise ops).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "opexpr/expr_util.h"
#include "support/error.h"

namespace tessera::ops::ewx {

using Args = std::vector<Expr>;
using Fn = std::function<Expr(const Args&)>;

// The type float math runs in: f32 for f16/bf16 (as the reference computes
// them, rounding once at the end), the type itself otherwise.
DType work_float(DType d);
// e converted to work_float(e's dtype) (ints unchanged).
Expr up(const Expr& e);
// A constant of e's type.
Expr k(const Expr& e, double v);

// Reads `t` as if reshaped to `as` (same element count), broadcast numpy-style
// to the output index `idx`.
Expr read_reshaped(const te::Tensor& t, const Dims& as, const std::vector<Expr>& idx);
// Reads input 1 (B) of a binary op with legacy broadcasting (opset < 7,
// attributes broadcast / axis) at output index idx.
Expr read_legacy_b(ExprContext& c, const std::vector<Expr>& idx);

// One output of c.out(0)'s type: f(inputs read at the broadcast position),
// converted to the output type. With `legacy`, opset < 7 reads B with legacy
// broadcasting. Absent inputs are undefined Exprs; only the first n_read
// inputs are read (-1: all), the others are passed undefined.
te::Tensor ew(ExprContext& c, const Fn& f, bool legacy = false, int n_read = -1);
// ExprFns: f of every input (unary ops read a[0]).
ExprFn ew_fn(Fn f, bool legacy = false);
// Float unary math: f gets input 0 in its work type.
ExprFn float_unary(std::function<Expr(const Expr&)> f);

// Let-bound intermediate values (each used several times, so that nested
// uses stay linear in size), wrapped around a body.
struct Lets {
  std::vector<std::pair<loop::Var, Expr>> lets;
  Expr bind(const std::string& name, const Expr& v) {
    loop::Var x(name + std::to_string(lets.size()), v.type());
    lets.emplace_back(x, v);
    return x;
  }
  Expr wrap(Expr body) const {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = loop::let(it->first, it->second, body);
    return body;
  }
};

// Integer helpers (wrapping arithmetic of the type's width).
int int_bits(DType d);
DType unsigned_of(DType d);  // same width, unsigned (u8 for bool)
// 2^s for an unsigned integer s < bits(type), exactly (product of constants
// selected by the bits of s).
Expr pow2(const Expr& s);
// Bitwise and/or/xor of two integers of one type, bit by bit.
enum class BitOp { And, Or, Xor };
Expr bitwise(BitOp op, const Expr& a, const Expr& b);
// ONNX integer division (truncation toward zero; INT_MIN / -1 wraps).
Expr trunc_div(const Expr& a, const Expr& b);
// C's remainder (sign of the dividend) of integers.
Expr trunc_mod(const Expr& a, const Expr& b);

// Registration, one per file.
void register_math_exprs(ExprRegistry& r);        // expr_elementwise_math.cpp: unary math, activations
void register_binary_exprs(ExprRegistry& r);      // expr_elementwise_binary.cpp: arithmetic, logic, variadic
void register_convert_exprs(ExprRegistry& r);     // expr_elementwise_convert.cpp: casts, quantization, misc

}  // namespace tessera::ops::ewx
