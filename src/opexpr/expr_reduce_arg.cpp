// Tensor-expression definitions of ArgMax / ArgMin (a max, then the first or
// last position holding it), CumSum / CumProd (an extern stage with a running
// accumulator: O(n) per slice) and Det (an extern stage: LU with partial
// pivoting in double, as src/ops/reduce_det.cpp).
#include <cmath>

#include "opexpr/expr_reduce.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::Buffer;
using loop::ForKind;
using loop::ReduceOp;
using loop::Stmt;
using loop::Var;
using red::AxisPlan;
using red::fconst;
using red::is_nan;

Expr i64c(int64_t v) { return loop::int_imm(v); }

// ---------------------------------------------------------------- ArgMax / ArgMin

// NaN wins (the first NaN, or the last with select_last_index), then the
// first (last) position equal to the extreme of the other values.
std::vector<te::Tensor> arg_expr(ExprContext& c, bool largest) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  TESSERA_CHECK(T != DType::Bool && T != DType::String, c.node.describe(), ": unsupported element type ", dtype_name(T));
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  const int64_t axis = red::norm_axis(c.node, op_attrs(c).i("axis"), x.rank());
  const bool last = op_attrs(c).i("select_last_index") != 0;
  AxisPlan p{x.shape(), {axis}, op_attrs(c).i("keepdims") != 0};
  const int64_t n = x.dim(static_cast<int>(axis));
  TESSERA_CHECK(n > 0, c.node.describe(), ": cannot take the arg", largest ? "max" : "min", " of an empty axis");
  const bool fl = is_float(T);
  // Floats compare in double (exact): the extreme stage stays off the f32 contraction schedule.
  const DType C = fl ? DType::F64 : T;
  auto xc = [&](const std::vector<Expr>& i) { return cast_to(x(i), C); };
  ReduceOp ext = largest ? ReduceOp::Max : ReduceOp::Min;
  te::Tensor m = red::reduce_stage(p, ext, [&](const std::vector<Expr>& i) {
    Expr v = xc(i);
    return fl ? loop::select(is_nan(v), loop::reduce_identity(ext, v.type()), v) : v;
  }, c.stage_name("ext"));
  te::Tensor k = te::compute(p.out_dims(), [&](const Indices& oi) {
    std::vector<Expr> o = as_exprs(oi);
    return red::reduce_at(p, last ? ReduceOp::Max : ReduceOp::Min, [&](const std::vector<Expr>& i) {
      Expr v = xc(i), j = i[static_cast<size_t>(axis)];
      Expr miss = i64c(last ? -1 : 2 * n);
      Expr hit = loop::select(loop::eq(v, m(p.stat_index(i))), last ? j : j + n, miss);
      return fl ? loop::select(is_nan(v), last ? j + n : j, hit) : hit;
    }, o);
  }, c.stage_name("key"), te::OpClass::Reduce);
  return {te::compute(p.out_dims(), [&](const Indices& oi) {
    Expr kv = k(as_exprs(oi));
    return loop::select(kv >= n, kv - n, kv);
  }, c.stage_name(""), te::OpClass::Elementwise)};
}

// ---------------------------------------------------------------- CumSum / CumProd

std::vector<te::Tensor> cum_expr(ExprContext& c, bool prod) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  TESSERA_CHECK(T != DType::Bool && T != DType::String, c.node.describe(), ": unsupported element type ", dtype_name(T));
  const Tensor& av = c.value(1);
  TESSERA_CHECK(av.numel() == 1 && av.rank() <= 1, c.node.describe(), ": axis must be a scalar");
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  const int64_t axis = red::norm_axis(c.node, av.get_int(0), x.rank());
  const bool exclusive = op_attrs(c).i("exclusive") != 0;
  const bool reverse = op_attrs(c).i("reverse") != 0;
  int64_t outer = 1, n = x.dim(static_cast<int>(axis)), inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(static_cast<int>(i));
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(static_cast<int>(i));
  // Floats accumulate in double; integers in their own type (wrapping, as the
  // reference's 64-bit arithmetic truncated to the type).
  const DType A = is_float(T) ? DType::F64 : T;
  const std::string acc_name = c.stage_name("acc");
  auto build = [=](const std::vector<Buffer>& ins, const std::vector<Buffer>& outs) -> Stmt {
    Buffer acc(acc_name, A, {inner});
    Var o("o"), s("s"), in("in"), in0("in0");
    Expr j = reverse ? (n - 1 - s) : Expr(s);
    Expr at = (o * n + j) * inner + in;
    Expr v = cast_to(loop::load(ins[0], at), A);
    Expr cur = loop::load(acc, in);
    Stmt upd = loop::store(acc, prod ? cur * v : cur + v, in);
    Stmt out = loop::store(outs[0], cast_to(loop::load(acc, in), T), at);
    Stmt step = exclusive ? loop::block({out, upd}) : loop::block({upd, out});
    Stmt init = loop::for_loop(in0, i64c(0), i64c(inner), ForKind::Serial,
                               loop::store(acc, loop::make_const({A, 1}, prod ? 1 : 0), in0));
    Stmt scan = loop::for_loop(s, i64c(0), i64c(n), ForKind::Serial,
                               loop::for_loop(in, i64c(0), i64c(inner), ForKind::Serial, step));
    Stmt body = loop::for_loop(o, i64c(0), i64c(outer), ForKind::Serial, loop::block({init, scan}));
    return loop::allocate(acc, i64c(inner), body);
  };
  return te::extern_stage({x.shape()}, {T}, {x}, build, c.stage_name(""), prod ? "cumprod" : "cumsum");
}

// ---------------------------------------------------------------- Det

std::vector<te::Tensor> det_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  TESSERA_CHECK(is_float(T), c.node.describe(), ": input must be a float tensor");
  TESSERA_CHECK(x.rank() >= 2 && x.dim(-1 + x.rank()) == x.dim(x.rank() - 2), c.node.describe(),
                ": input must be a batch of square matrices");
  const int64_t n = x.dim(x.rank() - 1);
  const Dims od(x.shape().begin(), x.shape().end() - 2);
  const int64_t batch = numel_of(od);
  const std::string base = c.stage_name("");
  auto build = [=](const std::vector<Buffer>& ins, const std::vector<Buffer>& outs) -> Stmt {
    const loop::Type F{DType::F64, 1};
    Buffer a(base + ".lu", DType::F64, {n * n}), det(base + ".det", DType::F64, {1}),
        piv(base + ".piv", DType::I64, {1}), zero(base + ".zero", DType::I32, {1});
    Var b("b"), i("i"), col("col"), r("r"), k("k"), r2("r2"), k2("k2");
    Var pv("p", F), pi("pi"), f("f", F), t("t", F);
    Expr z = i64c(0);
    auto A = [&](Expr row, Expr cl) { return loop::load(a, row * n + cl); };
    auto absf = [](Expr e) { return loop::call("abs", {std::move(e)}); };
    Stmt copy = loop::for_loop(i, z, i64c(n * n), ForKind::Serial,
                               loop::store(a, cast_to(loop::load(ins[0], b * (n * n) + i), DType::F64), i));
    // Pivot: the first row with the largest |a[r][col]| at or below col.
    Stmt search = loop::block({
        loop::store(piv, col, z),
        loop::for_loop(r, col + 1, i64c(n) - (col + 1), ForKind::Serial,
                       loop::if_then_else(absf(A(r, col)) > absf(A(loop::load(piv, z), col)),
                                          loop::store(piv, r, z))),
    });
    Stmt swap = loop::for_loop(k, z, i64c(n), ForKind::Serial,
                               loop::let_stmt(t, A(pi, k), loop::block({
                                   loop::store(a, A(col, k), pi * n + k),
                                   loop::store(a, t, col * n + k)})));
    Stmt eliminate = loop::for_loop(
        r2, col + 1, i64c(n) - (col + 1), ForKind::Serial,
        loop::let_stmt(f, A(r2, col) / pv,
                       loop::if_then_else(loop::ne(f, fconst(DType::F64, 0)),
                                          loop::for_loop(k2, col, i64c(n) - col, ForKind::Serial,
                                                         loop::store(a, A(r2, k2) - f * A(col, k2), r2 * n + k2)))));
    Stmt nonzero = loop::block({
        loop::if_then_else(loop::ne(pi, col),
                           loop::block({swap, loop::store(det, -loop::load(det, z), z)})),
        loop::store(det, loop::load(det, z) * pv, z),
        eliminate,
    });
    Stmt column = loop::if_then_else(
        loop::eq(loop::load(zero, z), loop::make_zero({DType::I32, 1})),
        loop::block({search,
                     loop::let_stmt(pi, loop::load(piv, z),
                                    loop::let_stmt(pv, A(pi, col),
                                                   loop::if_then_else(loop::eq(pv, fconst(DType::F64, 0)),
                                                                      loop::store(zero, loop::make_one({DType::I32, 1}), z),
                                                                      nonzero)))}));
    Expr result = loop::select(loop::eq(loop::load(zero, z), loop::make_zero({DType::I32, 1})), loop::load(det, z),
                               fconst(DType::F64, 0));
    Stmt per = loop::block({
        copy,
        loop::store(det, fconst(DType::F64, 1), z),
        loop::store(zero, loop::make_zero({DType::I32, 1}), z),
        loop::for_loop(col, z, i64c(n), ForKind::Serial, column),
        loop::store(outs[0], cast_to(result, T), b),
    });
    Stmt body = loop::for_loop(b, z, i64c(batch), ForKind::Serial, per);
    body = loop::allocate(zero, i64c(1), body);
    body = loop::allocate(piv, i64c(1), body);
    body = loop::allocate(det, i64c(1), body);
    return loop::allocate(a, i64c(std::max<int64_t>(n * n, 1)), body);
  };
  return te::extern_stage({od}, {T}, {x}, build, c.stage_name(""), "det");
}

}  // namespace

void register_reduce_arg_exprs(ExprRegistry& r) {
  r.set_expr("ArgMax", "", [](ExprContext& c) { return arg_expr(c, true); });
  r.set_expr("ArgMin", "", [](ExprContext& c) { return arg_expr(c, false); });
  r.set_expr("CumSum", "", [](ExprContext& c) { return cum_expr(c, false); });
  r.set_expr("CumProd", "", [](ExprContext& c) { return cum_expr(c, true); });
  r.set_expr("Det", "", det_expr);
}

}  // namespace tessera::ops
