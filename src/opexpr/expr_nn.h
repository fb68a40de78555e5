// Shared pieces of the nn compute ops' tensor expressions (expr_nn_*.cpp):
// the per-file registration functions and small helpers for accumulation
// types, per-channel parameters and axis names.
#pragma once

#include <string>
#include <vector>

#include "ops/blocked_conv.h"
#include "opexpr/expr_util.h"

namespace tessera::ops {

void register_nn_conv_exprs(ExprRegistry& r);    // Conv, ConvTranspose, ConvInteger, QLinearConv
void register_nn_vision_exprs(ExprRegistry& r);  // DeformConv, Col2Im
void register_nn_gemm_exprs(ExprRegistry& r);    // MatMul, Gemm, MatMulInteger, QLinearMatMul
void register_nn_pool_exprs(ExprRegistry& r);    // MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool
void register_blocked_conv_exprs(ExprRegistry& r);  // NCHWc reorders and convolutions (domain "tessera")
void register_winograd_exprs(ExprRegistry& r);      // Winograd F(4x4, 3x3) transforms and products (domain "tessera")

namespace nn_expr {

// The type the reference computes a float dtype in: f32 for f16/bf16, else itself.
DType float_acc(DType t);
// e converted to its compute type (f16/bf16 -> f32; others unchanged).
Expr to_float_acc(const Expr& e);
// A computed float value stored as dtype `out` the way the reference's
// to_storage<T>(compute_t<T>(v)) does (f64 -> f32 -> f16/bf16; integers by the
// loop IR's truncating, saturating cast).
Expr store_as(const Expr& e, DType out);

// Element `flat` of a small parameter tensor (zero point, scale) holding 1 or
// more values: a single value is shared by every index.
Expr param_at(const te::Tensor& t, const Expr& flat);
// Checks that optional input i (when present) has 1 or `count` elements, as
// the reference does; throws naming the node.
void check_param_count(ExprContext& c, int i, int64_t count, const char* what);
// Optional parameter input i at `flat` converted to `t`, or 0 when absent.
Expr param_or_zero(ExprContext& c, int i, const Expr& flat, DType t);

// Requantization as the reference: round half to even, add the zero point,
// clamp to the 8-bit range of `yt`, cast. v is f64.
Expr requantize(const Expr& v, const Expr& zero_point_f64, DType yt);

// Axis names of `nsp` spatial dims: {w}, {h, w}, {d, h, w}, else s0, s1, ...
std::vector<std::string> spatial_axis_names(int64_t nsp, const std::string& prefix = "");
// `a && b && ...`, or an undefined Expr when the list is empty (loop/expr.h).
using loop::all_of;
// cond ? t : f when cond is defined, else t.
Expr guard(const Expr& cond, const Expr& t, const Expr& f);
// x ([N, C, H, W] or blocked [N, Cb, H, W, b]) as a window reads it: `rows`
// x `cols` pixels from (-ph, -pw), zero outside the image; x itself when that
// is inside it.
te::Tensor zero_padded(ExprContext& c, const te::Tensor& x, int64_t ph, int64_t pw, int64_t rows, int64_t cols);
// The same over the spatial dims pads.size() (2 or 3) of x ([N, C, sp...] or
// blocked [N, Cb, sp..., b]): `extents` positions from -pads per dim.
te::Tensor zero_padded(ExprContext& c, const te::Tensor& x, const std::vector<int64_t>& pads,
                       const std::vector<int64_t>& extents);
// Input block rb (of the R an output block reads) of output block kb: g.first_block(kb) + rb.
Expr group_block(const BlockGroups& g, const Expr& kb, const Expr& rb);
// Reduce axes, one per spatial dim, named ry/rx style (rz, ry, rx; rk0 ... beyond 3-D).
std::vector<loop::ReduceAxis> window_axes(const std::vector<int64_t>& extents);

}  // namespace nn_expr
}  // namespace tessera::ops
