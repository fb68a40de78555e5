// Tensor-expression definitions of the Reduce* family, and the shared helpers
// of the reduction / normalization expressions (expr_reduce.h).
//
// Numerics follow src/ops/reduce.cpp: float inputs accumulate in double (the
// result rounded once), integer sums / products wrap like the storage type,
// Mean / L2 / LogSum / LogSumExp of integers go through double and saturate.
// ReduceMax / ReduceMin propagate NaN (a NaN anywhere in the reduction gives
// NaN): NaN reads as +inf (max) / -inf (min) in the main reduction, and only
// where the result is that infinity a second, guarded reduction looks for NaN.
#include "opexpr/expr_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"
#include "support/error.h"

namespace tessera::ops {

namespace red {

Dims AxisPlan::out_dims() const {
  Dims o;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (!reduced(d)) o.push_back(in[static_cast<size_t>(d)]);
    else if (keep) o.push_back(1);
  }
  return o;
}

bool AxisPlan::reduced(int64_t d) const { return std::find(axes.begin(), axes.end(), d) != axes.end(); }

int64_t AxisPlan::count() const {
  int64_t n = 1;
  for (int64_t a : axes) n *= in[static_cast<size_t>(a)];
  return n;
}

std::vector<loop::ReduceAxis> AxisPlan::make_axes(const std::string& prefix) const {
  std::vector<loop::ReduceAxis> r;
  for (size_t k = 0; k < axes.size(); ++k)
    r.push_back(te::reduce_axis(in[static_cast<size_t>(axes[k])], prefix + std::to_string(k)));
  return r;
}

std::vector<Expr> AxisPlan::input_index(const std::vector<Expr>& out, const std::vector<loop::ReduceAxis>& rv) const {
  std::vector<Expr> idx;
  size_t o = 0, k = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (reduced(d)) {
      idx.push_back(rv[k++].var);
      if (keep) ++o;
    } else {
      idx.push_back(out[o++]);
    }
  }
  return idx;
}

std::vector<Expr> AxisPlan::stat_index(const std::vector<Expr>& in_idx) const {
  std::vector<Expr> s;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    if (!reduced(d)) s.push_back(in_idx[static_cast<size_t>(d)]);
    else if (keep) s.push_back(loop::int_imm(0));
  }
  return s;
}

Expr AxisPlan::flat_position(const std::vector<loop::ReduceAxis>& rv) const {
  Expr pos = loop::int_imm(0);
  for (size_t k = 0; k < axes.size(); ++k) pos = pos * in[static_cast<size_t>(axes[k])] + rv[k].var;
  return pos;
}

Expr reduce_at(const AxisPlan& p, loop::ReduceOp op, const std::function<Expr(const std::vector<Expr>&)>& src,
               const std::vector<Expr>& out, const std::function<Expr(const std::vector<Expr>&)>& cond) {
  std::vector<loop::ReduceAxis> rv = p.make_axes();
  std::vector<Expr> idx = p.input_index(out, rv);
  Expr s = src(idx);
  if (p.axes.empty()) {
    Expr v = loop::reduce_combine(op, loop::reduce_identity(op, s.type()), s);
    return cond ? loop::select(cond(idx), v, loop::reduce_identity(op, s.type())) : v;
  }
  return loop::reduce(op, s, rv, cond ? cond(idx) : Expr());
}

te::Tensor reduce_stage(const AxisPlan& p, loop::ReduceOp op, const std::function<Expr(const std::vector<Expr>&)>& src,
                        const std::string& name, const te::StageTag& tag,
                        const std::function<Expr(const std::vector<Expr>&)>& cond) {
  return te::compute(p.out_dims(), [&](const Indices& i) { return reduce_at(p, op, src, as_exprs(i), cond); }, name,
                     tag);
}

te::Tensor materialize(const Dims& shape, const std::function<Expr(const std::vector<Expr>&)>& f,
                       const std::string& name, const te::StageTag& tag) {
  return te::compute(shape, [&](const Indices& i) {
    return loop::reduce(loop::ReduceOp::Sum, f(as_exprs(i)), {te::reduce_axis(1, "one")});
  }, name, tag);
}

Expr read_flat(const te::Tensor& t, const Expr& flat) {
  std::vector<Expr> idx(static_cast<size_t>(t.rank()));
  int64_t stride = 1;
  for (int d = t.rank(); d-- > 0;) {
    Expr q = stride == 1 ? flat : flat / stride;
    idx[static_cast<size_t>(d)] = d == 0 ? q : q % t.dim(d);
    stride *= t.dim(d);
  }
  return t(idx);
}

int64_t norm_axis(const Node& n, int64_t axis, int64_t rank) { return normalize_axis(n, axis, rank); }

}  // namespace red

namespace {

using red::AxisPlan;
using red::f64;
using red::fconst;
using red::is_nan;
using loop::ReduceOp;
using Src = std::function<Expr(const std::vector<Expr>&)>;

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

AxisPlan reduce_plan(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& x = c.in(0);
  const ReduceAttrs ra = reduce_attrs(op_attrs(c));
  std::vector<int64_t> axes = ra.axes;
  if (c.has_input(1)) {
    TESSERA_CHECK(c.has_value(1), n.describe(), ": the axes input must be known when compiling");
    axes = c.value(1).to_int_vector();
  }
  AxisPlan p;
  p.in = x.shape();
  p.keep = ra.keepdims;
  p.axes = resolve_reduce_axes(n, ra, std::move(axes), x.rank());
  return p;
}

// NaN-propagating max (is_max) or min of src, in src's (float) type.
te::Tensor nan_extreme(ExprContext& c, const AxisPlan& p, const Src& src, DType t, bool is_max,
                       const std::string& suffix) {
  double inf = is_max ? INFINITY : -INFINITY;
  te::Tensor m = red::reduce_stage(p, is_max ? ReduceOp::Max : ReduceOp::Min, [&](const std::vector<Expr>& i) {
    Expr v = src(i);
    return loop::select(is_nan(v), fconst(t, inf), v);
  }, c.stage_name(suffix), te::OpClass::Reduce);
  return te::compute(p.out_dims(), [&](const Indices& i) {
    std::vector<Expr> o = as_exprs(i);
    Expr mv = m(o);
    Expr nans = red::reduce_at(p, ReduceOp::Max, [&](const std::vector<Expr>& ii) {
      return loop::select(is_nan(src(ii)), loop::make_int_const({DType::I32, 1}, 1),
                          loop::make_int_const({DType::I32, 1}, 0));
    }, o);
    return loop::select(loop::eq(mv, fconst(t, inf)),
                        loop::select(nans > 0, fconst(t, NAN), mv), mv);
  }, c.stage_name(suffix + "_nan"), te::OpClass::Reduce);
}

std::vector<te::Tensor> reduce_expr(ExprContext& c, RK k) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  AxisPlan p = reduce_plan(c);
  const Dims od = p.out_dims();
  TESSERA_CHECK(od == c.out(0).dims, c.node.describe(), ": reduced dims ", dims_to_string(od), " differ from inference");
  auto out_stage = [&](const std::function<Expr(const std::vector<Expr>&)>& f, const te::StageTag& tag = te::OpClass::Elementwise) {
    return te::compute(od, [&](const Indices& i) { return cast_to(f(as_exprs(i)), T); }, c.stage_name("out"), tag);
  };
  auto xr = [&](const std::vector<Expr>& i) { return x(i); };
  const double count = static_cast<double>(p.count());

  if (T == DType::Bool) {
    TESSERA_CHECK(k == RK::Max || k == RK::Min, c.node.describe(), ": bool inputs are only supported by ReduceMax and ReduceMin");
    te::Tensor a = red::reduce_stage(p, k == RK::Max ? ReduceOp::Max : ReduceOp::Min,
                                     [&](const std::vector<Expr>& i) { return cast_to(x(i), DType::U8); },
                                     c.stage_name("acc"));
    return {out_stage([&](const std::vector<Expr>& o) { return a(o); })};
  }

  if (is_float(T)) {
    auto xd = [&](const std::vector<Expr>& i) { return f64(x(i)); };
    switch (k) {
      case RK::Max:
      case RK::Min: {
        // In double (exact for every float type): intermediate reductions stay
        // off the f32 contraction schedule.
        te::Tensor m = nan_extreme(c, p, xd, DType::F64, k == RK::Max, "ext");
        if (T == DType::F64) return {m};
        return {out_stage([&](const std::vector<Expr>& o) { return m(o); })};
      }
      case RK::Sum:
      case RK::Mean:
      case RK::LogSum:
      case RK::L1:
      case RK::L2:
      case RK::SumSquare:
      case RK::Prod: {
        // Sums and means of up to red::kF32RowTerms terms in the compute type
        // (a decomposed layer norm's two means), the rest in double.
        const bool short_sum = (k == RK::Sum || k == RK::Mean) && p.count() <= red::kF32RowTerms;
        const DType A = short_sum ? red::compute_dtype(T) : DType::F64;
        Src src = [&](const std::vector<Expr>& i) { return cast_to(x(i), A); };
        if (k == RK::L1) src = [&](const std::vector<Expr>& i) { return loop::call("abs", {xd(i)}); };
        if (k == RK::L2 || k == RK::SumSquare)
          src = [&](const std::vector<Expr>& i) { Expr v = xd(i); return v * v; };
        te::Tensor a = red::reduce_stage(p, k == RK::Prod ? ReduceOp::Prod : ReduceOp::Sum, src, c.stage_name("acc"));
        return {out_stage([&](const std::vector<Expr>& o) {
          Expr v = a(o);
          if (k == RK::Mean) return v / fconst(A, count);
          if (k == RK::L2) return loop::call("sqrt", {v});
          if (k == RK::LogSum) return loop::call("log", {v});
          return v;
        })};
      }
      case RK::LogSumExp: {
        // Max ignoring NaN; a NaN anywhere makes the sum (and the result) NaN,
        // except where the max is +inf: there the guarded check decides.
        te::Tensor m = red::reduce_stage(p, ReduceOp::Max, [&](const std::vector<Expr>& i) {
          Expr v = xd(i);
          return loop::select(is_nan(v), fconst(DType::F64, -INFINITY), v);
        }, c.stage_name("max"));
        te::Tensor s = red::reduce_stage(p, ReduceOp::Sum, [&](const std::vector<Expr>& i) {
          Expr v = xd(i), mv = m(p.stat_index(i));
          Expr inf = loop::eq(mv, fconst(DType::F64, INFINITY)) || loop::eq(mv, fconst(DType::F64, -INFINITY));
          return loop::select(inf, loop::select(loop::eq(v, mv), fconst(DType::F64, 1), fconst(DType::F64, 0)),
                              loop::call("exp", {v - mv}));
        }, c.stage_name("sum"));
        return {out_stage([&](const std::vector<Expr>& o) {
          Expr mv = m(o);
          Expr nans = red::reduce_at(p, ReduceOp::Max, [&](const std::vector<Expr>& ii) {
            return loop::select(is_nan(x(ii)), loop::make_int_const({DType::I32, 1}, 1),
                                loop::make_int_const({DType::I32, 1}, 0));
          }, o);
          return loop::select(loop::eq(mv, fconst(DType::F64, INFINITY)),
                              loop::select(nans > 0, fconst(DType::F64, NAN), mv),
                              mv + loop::call("log", {s(o)}));
        })};
      }
    }
  }

  // Integers.
  const bool is_signed = T == DType::I8 || T == DType::I16 || T == DType::I32 || T == DType::I64;
  switch (k) {
    case RK::Max:
    case RK::Min: {
      return {red::reduce_stage(p, k == RK::Max ? ReduceOp::Max : ReduceOp::Min, xr, c.stage_name("acc"))};
    }
    case RK::Sum:
    case RK::Prod:
    case RK::SumSquare:
    case RK::L1: {
      Src src = xr;
      if (k == RK::SumSquare) src = [&](const std::vector<Expr>& i) { Expr v = x(i); return v * v; };
      if (k == RK::L1 && is_signed)
        src = [&](const std::vector<Expr>& i) { Expr v = x(i); return loop::select(v < 0, 0 - v, v); };
      return {red::reduce_stage(p, k == RK::Prod ? ReduceOp::Prod : ReduceOp::Sum, src, c.stage_name("acc"))};
    }
    default: {
      Src src = [&](const std::vector<Expr>& i) { return f64(x(i)); };
      if (k == RK::L2) src = [&](const std::vector<Expr>& i) { Expr v = f64(x(i)); return v * v; };
      if (k == RK::LogSumExp) src = [&](const std::vector<Expr>& i) { return loop::call("exp", {f64(x(i))}); };
      te::Tensor a = red::reduce_stage(p, ReduceOp::Sum, src, c.stage_name("acc"));
      return {out_stage([&](const std::vector<Expr>& o) {
        Expr v = a(o);
        if (k == RK::Mean)
          return count == 0 ? fconst(DType::F64, 0) : v / fconst(DType::F64, count);
        if (k == RK::L2) return loop::call("sqrt", {v});
        return loop::call("log", {v});
      })};
    }
  }
}

}  // namespace

void register_reduce_exprs(ExprRegistry& r) {
  const std::pair<const char*, RK> ops[] = {
      {"ReduceSum", RK::Sum},       {"ReduceMean", RK::Mean},     {"ReduceMax", RK::Max},
      {"ReduceMin", RK::Min},       {"ReduceProd", RK::Prod},     {"ReduceL1", RK::L1},
      {"ReduceL2", RK::L2},         {"ReduceLogSum", RK::LogSum}, {"ReduceLogSumExp", RK::LogSumExp},
      {"ReduceSumSquare", RK::SumSquare}};
  for (const auto& [name, k] : ops) {
    RK kk = k;
    r.set_expr(name, "", [kk](ExprContext& c) { return reduce_expr(c, kk); });
  }
  register_reduce_arg_exprs(r);
  register_norm_exprs(r);
  register_einsum_exprs(r);
  register_attention_exprs(r);
}

}  // namespace tessera::ops
