// Tensor-expression definitions of the remaining op families (recurrent nets,
// signal processing, losses, sampling-grid vision ops, TopK, dynamic
// quantization, the ai.onnx.ml ops) and the list of ops that stay opaque.
// register_misc_exprs (expr_util.h) calls each of these.
#pragma once

#include "opexpr/expr_util.h"

namespace tessera::ops {

void register_misc_opaque(ExprRegistry& r);         // expr_misc.cpp: random, control flow, strings, NMS ...
void register_misc_small_exprs(ExprRegistry& r);    // expr_misc_small.cpp: TopK, losses, DynamicQuantizeLinear, ml
void register_misc_signal_exprs(ExprRegistry& r);   // expr_misc_signal.cpp: windows, DFT, STFT, MelWeightMatrix
void register_misc_vision_exprs(ExprRegistry& r);   // expr_misc_vision.cpp: GridSample, AffineGrid, RoiAlign
void register_misc_rnn_exprs(ExprRegistry& r);      // expr_misc_rnn.cpp: RNN, GRU, LSTM

// Helpers shared by the misc expression files.
namespace misc {

// A scalar f64 temporary: a one-element buffer with load/store helpers.
struct Scalar {
  loop::Buffer buf;
  explicit Scalar(const std::string& name, DType d = DType::F64) : buf(name, d, {1}) {}
  Expr get() const { return loop::load(buf, loop::int_imm(0)); }
  loop::Stmt set(Expr v) const { return loop::store(buf, std::move(v), loop::int_imm(0)); }
};

// A serial loop var over [0, extent).
loop::Stmt serial(const loop::Var& v, Expr extent, loop::Stmt body);
loop::Stmt serial(const loop::Var& v, int64_t extent, loop::Stmt body);
// Constant of type f64.
Expr f64(double v);
// Converts e to f64 (no-op when already f64).
Expr to_f64(const Expr& e);

}  // namespace misc

}  // namespace tessera::ops
