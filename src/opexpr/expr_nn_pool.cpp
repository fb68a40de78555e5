// Tensor expressions of the pooling ops: MaxPool (with Indices, storage_order,
// dilations, ceil_mode), AveragePool (count_include_pad), LpPool, the global
// pools, and MaxUnpool (an extern scatter).
//
// A windowed pool is a reduction stage tagged "pool" over the spatial output
// axes (n, c, h, w) and one reduce axis per window dim (ry, rx):
//   pool[n, c, h, w] = reduce over (ry, rx) of x[n, c, h*sh - ph + ry*dh, w*sw - pw + rx*dw]
// with taps outside the input guarded by if_then_else (padding is never read).
// Averages and Lp norms accumulate in f64 and finish in a separate elementwise
// stage, as the reference does; max pooling compares in the compute type and
// propagates NaN (the first NaN of a window wins) like the reference.
#include <cmath>
#include <limits>

#include "opexpr/expr_nn.h"
#include "ops/nn_ops.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

using namespace nn_expr;

namespace {

// Window geometry of a pool over X [N, C, in...].
struct PoolGeom {
  int64_t nsp = 0;
  Dims in, out, k, s, d, pb, pe;
  Dims out_dims;  // [N, C, out...]
};

PoolGeom pool_geom(const OpAttrs& attrs, const Dims& x) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() >= 3, n.describe(), ": input X must have rank >= 3 (N, C, spatial...), got rank ", x.size());
  PoolGeom g;
  g.nsp = static_cast<int64_t>(x.size()) - 2;
  WindowAttrs a = read_window_attrs(attrs, g.nsp, {}, true);
  std::vector<int64_t> pads;
  g.in = spatial_dims(x);
  g.out = window_output_dims(n, a, g.in, &pads);
  g.k = a.kernel;
  g.s = a.strides;
  g.d = a.dilations;
  for (int64_t i = 0; i < g.nsp; ++i) {
    g.pb.push_back(pads[static_cast<size_t>(i)]);
    g.pe.push_back(pads[static_cast<size_t>(i + g.nsp)]);
  }
  g.out_dims = {x[0], x[1]};
  g.out_dims.insert(g.out_dims.end(), g.out.begin(), g.out.end());
  return g;
}

std::vector<std::string> pool_names(int64_t nsp) {
  std::vector<std::string> names{"n", "c"};
  for (const auto& s : spatial_axis_names(nsp)) names.push_back(s);
  return names;
}

// The input position read by window tap rk at output index i, per spatial dim,
// and the condition that it lies inside the input (undefined: always).
struct Taps {
  std::vector<loop::ReduceAxis> axes;
  std::vector<Expr> pos;
  Expr inside;
};

Taps window_taps(const PoolGeom& g, const Indices& i) {
  Taps t;
  t.axes = window_axes(g.k);
  std::vector<Expr> conds;
  for (int64_t d = 0; d < g.nsp; ++d) {
    size_t u = static_cast<size_t>(d);
    // A window of 1 (a blocked image's lanes) reads exactly the output's index.
    Expr p = g.s[u] == 1 ? Expr(i[u + 2]) : Expr(i[u + 2]) * g.s[u];
    if (g.k[u] > 1) p = p + Expr(t.axes[u].var) * g.d[u];
    if (g.pb[u]) {
      p = p - g.pb[u];
      conds.push_back(p >= 0);
    }
    // The last tap of the last window: beyond the input only with padding or ceil_mode.
    if ((g.out[u] - 1) * g.s[u] - g.pb[u] + (g.k[u] - 1) * g.d[u] >= g.in[u]) conds.push_back(p < g.in[u]);
    t.pos.push_back(p);
  }
  t.inside = all_of(conds);
  return t;
}

std::vector<Expr> x_index(const Indices& i, const std::vector<Expr>& pos) {
  std::vector<Expr> r{i[0], i[1]};
  r.insert(r.end(), pos.begin(), pos.end());
  return r;
}

// Number of taps k in [0, K) with lo <= p0 + k*d < hi (closed form; floor division).
Expr tap_count(const Expr& p0, int64_t K, int64_t d, int64_t lo, int64_t hi) {
  Expr a = lo - p0;                        // k*d >= a  ->  k >= ceil(a / d)
  Expr kmin = loop::max(loop::int_imm(0) - (loop::int_imm(0) - a) / d, loop::int_imm(0));
  Expr kmax = loop::min((hi - 1 - p0) / d, loop::int_imm(K - 1));
  return loop::max(kmax - kmin + 1, loop::int_imm(0));
}

Expr float_lowest(DType t) {
  if (is_float(t)) return loop::make_const({t, 1}, -std::numeric_limits<double>::infinity());
  switch (t) {
    case DType::I8: return loop::make_int_const({t, 1}, -128);
    case DType::U8: return loop::make_int_const({t, 1}, 0);
    default: TESSERA_FAIL("MaxPool: unsupported element type ", dtype_name(t));
  }
}

// ---------------------------------------------------------------- MaxPool

// Stages: the window maximum with NaN read as +inf ("pool"); with the Indices
// output also the first tap holding it (a NaN first, then the maximum:
// min over key * plane + offset), from which Y is read back, so Y and Indices
// are exactly the reference's. Without Indices, Y is the maximum unless it is
// +inf, where a second reduction (run for those windows only) tells NaN from inf.
std::vector<te::Tensor> max_pool_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType dt = x.dtype();
  TESSERA_CHECK(is_float(dt) || dt == DType::I8 || dt == DType::U8, c.node.describe(), ": unsupported element type ",
                dtype_name(dt));
  const int64_t order = op_attrs(c).i("storage_order");
  TESSERA_CHECK(order == 0 || order == 1, c.node.describe(), ": storage_order must be 0 or 1");
  PoolGeom g = pool_geom(op_attrs(c), x.shape());
  const bool fl = is_float(dt);
  const DType A = fl ? float_acc(dt) : dt;
  const std::vector<std::string> names = pool_names(g.nsp);
  const loop::Type AT{A, 1};
  Expr inf = fl ? loop::make_const(AT, std::numeric_limits<double>::infinity()) : Expr();
  auto value = [&](const Expr& v) {  // NaN read as +inf
    Expr a = cast_to(v, A);
    return fl ? loop::select(ne(a, a), inf, a) : a;
  };
  te::Tensor mx = te::compute(g.out_dims, [&](const Indices& i) {
    Taps t = window_taps(g, i);
    return te::max_of(guard(t.inside, value(x(x_index(i, t.pos))), float_lowest(A)), t.axes);
  }, c.stage_name("max"), te::OpClass::Pool, names);

  if (c.num_outputs() < 2) {
    if (!fl) return {mx};
    return {te::compute(g.out_dims, [&](const Indices& i) {
      Expr m = mx(as_exprs(i));
      Taps t = window_taps(g, i);
      Expr a = cast_to(x(x_index(i, t.pos)), A);
      Expr one = loop::make_one(AT), zero = loop::make_zero(AT);
      Expr has_nan = te::max_of(guard(t.inside, loop::select(ne(a, a), one, zero), zero), t.axes);
      Expr nan = loop::make_const(AT, std::numeric_limits<double>::quiet_NaN());
      return store_as(te::if_then_else(eq(m, inf), loop::select(has_nan > zero, nan, inf), m), dt);
    }, c.stage_name(""), te::OpClass::Pool, names)};
  }

  // First tap (row-major offset inside the plane) holding the result.
  const int64_t plane = numel_of(g.in), none = 3 * plane;
  const Dims rstr = strides_of(g.in);
  te::Tensor arg = te::compute(g.out_dims, [&](const Indices& i) {
    Taps t = window_taps(g, i);
    Expr a = cast_to(x(x_index(i, t.pos)), A);
    Expr m = mx(as_exprs(i));
    Expr key = fl ? loop::select(ne(a, a), loop::int_imm(0), loop::select(eq(a, m), loop::int_imm(1), loop::int_imm(2)))
                  : loop::select(eq(a, m), loop::int_imm(0), loop::int_imm(1));
    Expr off = loop::int_imm(0);
    for (int64_t d = 0; d < g.nsp; ++d) off = off + t.pos[static_cast<size_t>(d)] * rstr[static_cast<size_t>(d)];
    return te::min_of(guard(t.inside, key * plane + off, loop::int_imm(none)), t.axes);
  }, c.stage_name("argmax"), te::OpClass::Pool, names);

  auto unravel = [&](const Expr& r) {
    std::vector<Expr> pos;
    for (int64_t d = 0; d < g.nsp; ++d) {
      size_t u = static_cast<size_t>(d);
      Expr p = r;
      if (rstr[u] != 1) p = p / rstr[u];
      if (d > 0) p = p % g.in[u];
      pos.push_back(p);
    }
    return pos;
  };
  te::Tensor y = te::compute(g.out_dims, [&](const Indices& i) {
    Expr r = arg(as_exprs(i));
    Expr found = r < none;
    return te::if_then_else(found, x(x_index(i, unravel(r % plane))), float_lowest(dt));
  }, c.stage_name(""), "injective", names);
  const int64_t C = x.dim(1);
  te::Tensor ind = te::compute(g.out_dims, [&](const Indices& i) {
    Expr r = arg(as_exprs(i));
    Expr off = r % plane;
    if (order == 1) {  // column-major: the first spatial dim fastest
      std::vector<Expr> pos = unravel(off);
      off = loop::int_imm(0);
      int64_t st = 1;
      for (int64_t d = 0; d < g.nsp; ++d) {
        off = off + pos[static_cast<size_t>(d)] * st;
        st *= g.in[static_cast<size_t>(d)];
      }
    }
    Expr base = (Expr(i[0]) * C + i[1]) * plane;
    return loop::select(r < none, base + off, loop::int_imm(-1));
  }, c.stage_name("indices"), "injective", names);
  return {y, ind};
}

// ---------------------------------------------------------------- AveragePool, LpPool

Expr f64c(double v) { return loop::make_const({DType::F64, 1}, v); }

// |v|^p (v*v for p = 2), as the reference accumulates.
Expr lp_term(const Expr& v, double p) {
  return p == 2.0 ? v * v : loop::call("pow", {loop::call("abs", {v}), f64c(p)});
}
Expr lp_finish(const Expr& acc, double p) {
  return p == 2.0 ? loop::call("sqrt", {acc}) : loop::call("pow", {acc, f64c(1.0 / p)});
}

enum class PoolKind { Avg, Lp };

std::vector<te::Tensor> float_pool_expr(ExprContext& c, PoolKind kind) {
  const te::Tensor& x = c.in(0);
  const DType dt = x.dtype();
  TESSERA_CHECK(is_float(dt), c.node.describe(), ": needs a float input, got ", dtype_name(dt));
  PoolGeom g = pool_geom(op_attrs(c), x.shape());
  const int64_t cip = kind == PoolKind::Avg ? op_attrs(c).i("count_include_pad") : 0;  // LpPool has none
  if (kind == PoolKind::Avg) TESSERA_CHECK(cip == 0 || cip == 1, c.node.describe(), ": count_include_pad must be 0 or 1");
  const double p = kind == PoolKind::Lp ? lp_order(op_attrs(c)) : 1.0;
  const std::vector<std::string> names = pool_names(g.nsp);
  const DType F64 = DType::F64;
  te::Tensor acc = te::compute(g.out_dims, [&](const Indices& i) {
    Taps t = window_taps(g, i);
    Expr v = cast_to(x(x_index(i, t.pos)), F64);
    if (kind == PoolKind::Lp) v = lp_term(v, p);
    return te::sum(guard(t.inside, v, f64c(0)), t.axes);
  }, c.stage_name(kind == PoolKind::Avg ? "sum" : "lp_sum"), te::OpClass::Pool, names);
  return {te::compute(g.out_dims, [&](const Indices& i) {
    Expr a = acc(as_exprs(i));
    if (kind == PoolKind::Lp) return store_as(lp_finish(a, p), dt);
    // Taps inside the input (or inside the padded input with count_include_pad), per dim.
    Expr count = loop::int_imm(1);
    for (int64_t d = 0; d < g.nsp; ++d) {
      size_t u = static_cast<size_t>(d);
      Expr p0 = Expr(i[u + 2]) * g.s[u] - g.pb[u];
      Expr n = cip ? tap_count(p0, g.k[u], g.d[u], -g.pb[u], g.in[u] + g.pe[u])
                   : tap_count(p0, g.k[u], g.d[u], 0, g.in[u]);
      count = d == 0 ? n : count * n;
    }
    return store_as(a / cast_to(count, F64), dt);
  }, c.stage_name(""), te::OpClass::Elementwise, names)};
}

// ---------------------------------------------------------------- global pools

enum class GlobalKind { Avg, Max, Lp };

std::vector<te::Tensor> global_pool_expr(ExprContext& c, GlobalKind kind) {
  const te::Tensor& x = c.in(0);
  const DType dt = x.dtype();
  TESSERA_CHECK(is_float(dt), c.node.describe(), ": needs a float input, got ", dtype_name(dt));
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input X must have rank >= 2");
  const int64_t nsp = x.rank() - 2;
  const Dims sp = spatial_dims(x.shape());
  Dims od = x.shape();
  for (size_t i = 2; i < od.size(); ++i) od[i] = 1;
  const double p = kind == GlobalKind::Lp ? lp_order(op_attrs(c)) : 2.0;
  std::vector<std::string> names{"n", "c"};
  for (const auto& s : spatial_axis_names(nsp)) names.push_back(s);
  // Reduce axes over the whole plane (one of extent 1 when there is no spatial dim).
  auto plane_axes = [&]() { return window_axes(nsp ? sp : Dims{1}); };
  auto read = [&](const Indices& i, const std::vector<loop::ReduceAxis>& ax) {
    std::vector<Expr> idx{i[0], i[1]};
    for (int64_t d = 0; d < nsp; ++d) idx.push_back(ax[static_cast<size_t>(d)].var);
    return x(idx);
  };
  if (kind == GlobalKind::Max) {
    // Max in the compute type with NaN read as +inf; a second reduction, for
    // +inf results only, tells NaN (which the reference propagates) from inf.
    const DType A = float_acc(dt);
    const loop::Type AT{A, 1};
    Expr inf = loop::make_const(AT, std::numeric_limits<double>::infinity());
    te::Tensor mx = te::compute(od, [&](const Indices& i) {
      auto ax = plane_axes();
      Expr a = cast_to(read(i, ax), A);
      return te::max_of(loop::select(ne(a, a), inf, a), ax);
    }, c.stage_name("max"), te::OpClass::Pool, names);
    return {te::compute(od, [&](const Indices& i) {
      Expr m = mx(as_exprs(i));
      auto ax = plane_axes();
      Expr a = cast_to(read(i, ax), A);
      Expr one = loop::make_one(AT), zero = loop::make_zero(AT);
      Expr has_nan = te::max_of(loop::select(ne(a, a), one, zero), ax);
      Expr nan = loop::make_const(AT, std::numeric_limits<double>::quiet_NaN());
      return store_as(te::if_then_else(eq(m, inf), loop::select(has_nan > zero, nan, inf), m), dt);
    }, c.stage_name(""), te::OpClass::Pool, names)};
  }
  const DType F64 = DType::F64;
  te::Tensor acc = te::compute(od, [&](const Indices& i) {
    auto ax = plane_axes();
    Expr v = cast_to(read(i, ax), F64);
    return te::sum(kind == GlobalKind::Lp ? lp_term(v, p) : v, ax);
  }, c.stage_name("sum"), te::OpClass::Pool, names);
  const double plane = static_cast<double>(numel_of(sp));
  return {te::compute(od, [&](const Indices& i) {
    Expr a = acc(as_exprs(i));
    return store_as(kind == GlobalKind::Lp ? lp_finish(a, p) : a / f64c(plane), dt);
  }, c.stage_name(""), te::OpClass::Elementwise, names)};
}

// ---------------------------------------------------------------- MaxUnpool

// An extern scatter: Y is zeroed, then each X element is stored at the
// position its index names in the default-shaped result (kept only when that
// position lies inside output_shape). Later elements overwrite earlier ones,
// as in the reference. Out-of-range indices (an error in the reference) are
// skipped.
std::vector<te::Tensor> max_unpool_expr(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  TESSERA_CHECK(is_float(x.dtype()), n.describe(), ": needs a float input");
  TESSERA_CHECK(ind.dtype() == DType::I64 && ind.shape() == x.shape(), n.describe(),
                ": indices I must be int64 with X's shape ", dims_to_string(x.shape()));
  TESSERA_CHECK(x.rank() >= 3, n.describe(), ": input X must have rank >= 3");
  const size_t ns = static_cast<size_t>(x.rank() - 2);
  WindowAttrs a = read_window_attrs(op_attrs(c), static_cast<int64_t>(ns), {}, false);
  TESSERA_CHECK(a.auto_pad == "NOTSET", n.describe(), ": MaxUnpool has no auto_pad");
  Dims d{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < ns; ++i)
    d.push_back((x.dim(static_cast<int>(i + 2)) - 1) * a.strides[i] + a.kernel[i] - a.pads[i] - a.pads[i + ns]);
  const Dims od = c.out(0).dims;
  TESSERA_CHECK(od.size() == d.size(), n.describe(), ": output_shape has ", od.size(), " values, expected ", d.size());
  const int64_t total = numel_of(d), count = numel_of(x.shape()), out_total = numel_of(od);
  const Dims dstr = strides_of(d), ostr = strides_of(od);
  const DType dt = x.dtype();
  auto build = [=](const std::vector<loop::Buffer>& in, const std::vector<loop::Buffer>& out) {
    const loop::Buffer& xb = in[0];
    const loop::Buffer& ib = in[1];
    const loop::Buffer& yb = out[0];
    loop::Var z("z");
    loop::Stmt zero = loop::for_loop(z, loop::int_imm(0), loop::int_imm(out_total), loop::ForKind::Serial,
                               loop::store(yb, loop::make_zero({dt, 1}), z));
    loop::Var e("e"), idx("idx");
    std::vector<Expr> conds{idx >= 0, idx < total};
    Expr off = loop::int_imm(0);
    for (size_t k = 0; k < d.size(); ++k) {
      Expr q = idx;
      if (dstr[k] != 1) q = q / dstr[k];
      if (k > 0) q = q % d[k];
      if (od[k] < d[k]) conds.push_back(q < od[k]);
      off = off + q * ostr[k];
    }
    loop::Stmt put = loop::if_then_else(all_of(conds), loop::store(yb, loop::load(xb, e), off));
    loop::Stmt scatter = loop::for_loop(e, loop::int_imm(0), loop::int_imm(count), loop::ForKind::Serial,
                                  loop::let_stmt(idx, loop::load(ib, e), put));
    return loop::block({zero, scatter});
  };
  return te::extern_stage({od}, {dt}, {x, ind}, build, c.stage_name("unpool"), "scatter");
}

}  // namespace

void register_nn_pool_exprs(ExprRegistry& r) {
  r.set_expr("MaxPool", "", max_pool_expr);
  r.set_expr("AveragePool", "", [](ExprContext& c) { return float_pool_expr(c, PoolKind::Avg); });
  r.set_expr("LpPool", "", [](ExprContext& c) { return float_pool_expr(c, PoolKind::Lp); });
  r.set_expr("GlobalAveragePool", "", [](ExprContext& c) { return global_pool_expr(c, GlobalKind::Avg); });
  r.set_expr("GlobalMaxPool", "", [](ExprContext& c) { return global_pool_expr(c, GlobalKind::Max); });
  r.set_expr("GlobalLpPool", "", [](ExprContext& c) { return global_pool_expr(c, GlobalKind::Lp); });
  r.set_expr("MaxUnpool", "", max_unpool_expr);
}

}  // namespace tessera::ops
