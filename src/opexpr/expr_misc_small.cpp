// Tensor expressions of TopK (an extern stage ranking each row), the losses
// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss, DynamicQuantizeLinear
// and the ai.onnx.ml ops Binarizer and ArrayFeatureExtractor.
#include "opexpr/expr_misc.h"

#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::Stmt;
using loop::Var;
using misc::f64;
using misc::Scalar;
using misc::serial;
using misc::to_f64;

Expr i64c(int64_t v) { return loop::int_imm(v); }

// ---------------------------------------------------------------- TopK
//
// Each row (the axis, for every outer/inner position) is ranked with the
// reference's stable order: element i goes to position
//   #{m : m ranks before i, or m ties with i and m < i}
// and is written out when that position is below k. NaN ranks above every
// number for largest and below every number for smallest.

std::vector<te::Tensor> topk_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  TESSERA_CHECK(x.dtype() != DType::Bool && x.dtype() != DType::String, c.node.describe(),
                ": unsupported element type ", dtype_name(x.dtype()));
  const int64_t rank = x.rank();
  const int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), rank);
  const bool largest = op_attrs(c).i("largest") != 0;
  const int64_t k = c.out(0).dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  const int64_t n = x.dim(static_cast<int>(axis));
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) outer *= x.dim(static_cast<int>(d));
    else if (d > axis) inner *= x.dim(static_cast<int>(d));
  }
  const bool want_idx = c.num_outputs() > 1;
  const DType xd = x.dtype();
  const bool fl = is_float(xd);
  std::vector<Dims> shapes = {c.out(0).dims};
  std::vector<DType> dtypes = {xd};
  if (want_idx) {
    shapes.push_back(c.out(1).dims);
    dtypes.push_back(DType::I64);
  }
  auto build = [=](const std::vector<loop::Buffer>& in, const std::vector<loop::Buffer>& out) {
    Var o("o"), j("j"), i("i"), m("m");
    Scalar cnt("topk_rank", DType::I64);
    auto at = [&](const Expr& e) { return (o * n + e) * inner + j; };
    auto val = [&](const Expr& e) {
      Expr v = loop::load(in[0], at(e));
      return fl && xd != DType::F64 ? cast_to(v, DType::F32) : v;
    };
    Expr a = val(m), b = val(i);
    Expr before;  // m ranks before i
    if (fl) {
      Expr na = loop::ne(a, a), nb = loop::ne(b, b);
      before = largest ? ((na && !nb) || a > b) : ((!na && nb) || a < b);
    } else {
      before = largest ? a > b : a < b;
    }
    // m ties with i: neither ranks before the other.
    Expr b_before_a;
    if (fl) {
      Expr na = loop::ne(a, a), nb = loop::ne(b, b);
      b_before_a = largest ? ((nb && !na) || b > a) : ((!nb && na) || b < a);
    } else {
      b_before_a = largest ? b > a : b < a;
    }
    Expr counts = before || (!b_before_a && m < i);
    Stmt count = serial(m, n, cnt.set(cnt.get() + loop::select(counts, i64c(1), i64c(0))));
    Expr pos = cnt.get();
    Expr oat = (o * k + pos) * inner + j;
    std::vector<Stmt> writes = {loop::store(out[0], loop::load(in[0], at(i)), oat)};
    if (want_idx) writes.push_back(loop::store(out[1], Expr(i), oat));
    Stmt row = loop::block({cnt.set(i64c(0)), count, loop::if_then_else(pos < k, loop::block(writes))});
    Stmt body = serial(o, outer, serial(j, inner, serial(i, n, row)));
    return loop::allocate(cnt.buf, i64c(1), body);
  };
  return te::extern_stage(shapes, dtypes, {x}, build, c.stage_name("topk"));
}

// ---------------------------------------------------------------- losses
//
// Computed in f64 as the reference: per-element loss -w[t] * lp[n, t, d]
// (0 where t == ignore_index), then none / sum / mean (sum over the summed
// weights of the counted targets).

std::vector<te::Tensor> loss_expr(ExprContext& c, bool sce) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& tgt = c.in(1);
  const bool has_w = c.has_input(2);
  const DType dt = x.dtype();
  std::string red = op_attrs(c).s("reduction");
  TESSERA_CHECK(red == "none" || red == "sum" || red == "mean", c.node.describe(), ": unsupported reduction '", red,
                "'");
  const bool has_ii = c.node.has_attr("ignore_index");
  const int64_t ii = has_ii ? op_attrs(c).i("ignore_index") : 0;
  const int64_t C = x.dim(1);
  const Dims xdims = x.shape();
  const Dims tdims = tgt.shape();
  // lp(b, k, d...) in f64.
  std::function<Expr(const std::vector<Expr>&)> lp;
  te::Tensor mx, se;
  if (sce) {
    Dims rd = tdims;  // [N, d...]
    auto red_idx = [&](const Indices& i, const Expr& k) {
      std::vector<Expr> v = {i[0], k};
      for (size_t d = 1; d < i.size(); ++d) v.push_back(i[d]);
      return v;
    };
    auto rk = te::reduce_axis(C, "k");
    mx = te::compute(rd, [&](const Indices& i) { return te::max_of(to_f64(x(red_idx(i, rk.var))), {rk}); },
                     c.stage_name("max"), te::OpClass::Reduce);
    auto rk2 = te::reduce_axis(C, "k");
    se = te::compute(rd, [&](const Indices& i) {
      std::vector<Expr> bi = as_exprs(i);
      return te::sum(loop::call("exp", {to_f64(x(red_idx(i, rk2.var))) - mx(bi)}), {rk2});
    }, c.stage_name("sumexp"), te::OpClass::Reduce);
    lp = [&, mx, se](const std::vector<Expr>& idx) {
      std::vector<Expr> bi = {idx[0]};
      for (size_t d = 2; d < idx.size(); ++d) bi.push_back(idx[d]);
      return (to_f64(x(idx)) - mx(bi)) - loop::call("log", {se(bi)});
    };
  } else {
    lp = [&](const std::vector<Expr>& idx) { return to_f64(x(idx)); };
  }
  // Per-element loss and weight over the target's shape.
  auto elem = [&](const std::vector<Expr>& i, bool weight_only) {
    Expr t = cast_to(tgt(i), DType::I64);
    Expr ok = t >= int64_t{0} && t < C;
    if (has_ii) ok = ok && loop::ne(t, ii);
    Expr wt = has_w ? to_f64(c.in(2)(t)) : f64(1.0);
    if (weight_only) return te::if_then_else(ok, wt, f64(0.0));
    std::vector<Expr> li = {i[0], t};
    for (size_t d = 1; d < i.size(); ++d) li.push_back(i[d]);
    return te::if_then_else(ok, (f64(0.0) - wt) * lp(li), f64(0.0));
  };
  std::vector<te::Tensor> outs;
  if (red == "none") {
    outs.push_back(te::compute(tdims, [&](const Indices& i) { return cast_to(elem(as_exprs(i), false), dt); },
                               c.stage_name("loss")));
  } else {
    std::vector<loop::ReduceAxis> axes;
    for (size_t d = 0; d < tdims.size(); ++d) axes.push_back(te::reduce_axis(tdims[d], "r" + std::to_string(d)));
    std::vector<Expr> ri;
    for (const auto& a : axes) ri.push_back(a.var);
    te::Tensor lsum = te::compute({}, [&](const Indices&) { return te::sum(elem(ri, false), axes); },
                                  c.stage_name("lsum"), te::OpClass::Reduce);
    if (red == "sum") {
      outs.push_back(te::compute({}, [&](const Indices&) { return cast_to(lsum(std::vector<Expr>{}), dt); },
                                 c.stage_name("loss")));
    } else {
      std::vector<loop::ReduceAxis> axes2;
      for (size_t d = 0; d < tdims.size(); ++d) axes2.push_back(te::reduce_axis(tdims[d], "w" + std::to_string(d)));
      std::vector<Expr> wi;
      for (const auto& a : axes2) wi.push_back(a.var);
      te::Tensor wsum = te::compute({}, [&](const Indices&) { return te::sum(elem(wi, true), axes2); },
                                    c.stage_name("wsum"), te::OpClass::Reduce);
      outs.push_back(te::compute({}, [&](const Indices&) {
        return cast_to(lsum(std::vector<Expr>{}) / wsum(std::vector<Expr>{}), dt);
      }, c.stage_name("loss")));
    }
  }
  if (sce && c.num_outputs() > 1)
    outs.push_back(te::compute(xdims, [&](const Indices& i) { return cast_to(lp(as_exprs(i)), dt); },
                               c.stage_name("log_prob")));
  return outs;
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

std::vector<te::Tensor> dynamic_quantize_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  TESSERA_CHECK(x.dtype() == DType::F32, c.node.describe(), ": input must be f32, got ", dtype_name(x.dtype()));
  const Dims d = x.shape();
  auto all = [&](const std::string& p, std::vector<Expr>& idx) {
    std::vector<loop::ReduceAxis> axes;
    for (size_t k = 0; k < d.size(); ++k) {
      axes.push_back(te::reduce_axis(d[k], p + std::to_string(k)));
      idx.push_back(axes.back().var);
    }
    return axes;
  };
  std::vector<Expr> li, hi_i;
  auto la = all("lo", li), ha = all("hi", hi_i);
  Expr zero = loop::float_imm(0.0f);
  // A rank-0 input is its own min and max (no reduction axes).
  te::Tensor lo = te::compute({}, [&](const Indices&) { return d.empty() ? x(li) : te::min_of(x(li), la); },
                              c.stage_name("min"), te::OpClass::Reduce);
  te::Tensor hi = te::compute({}, [&](const Indices&) { return d.empty() ? x(hi_i) : te::max_of(x(hi_i), ha); },
                              c.stage_name("max"), te::OpClass::Reduce);
  auto lo_v = [&] { return loop::min(lo(std::vector<Expr>{}), zero); };
  auto hi_v = [&] { return loop::max(hi(std::vector<Expr>{}), zero); };
  te::Tensor scale = te::compute({}, [&](const Indices&) { return (hi_v() - lo_v()) / loop::float_imm(255.0f); },
                                 c.stage_name("scale"));
  auto s = [&] { return scale(std::vector<Expr>{}); };
  auto clamp255 = [&](const Expr& v) { return loop::min(loop::max(v, zero), loop::float_imm(255.0f)); };
  // zero point as f32 (0 when the scale is 0).
  auto zpf = [&] {
    return loop::select(loop::ne(s(), zero), loop::call("round", {clamp255(zero - lo_v() / s())}), zero);
  };
  te::Tensor zp = te::compute({}, [&](const Indices&) { return cast_to(zpf(), DType::U8); }, c.stage_name("zero_point"));
  te::Tensor y = te::compute(d, [&](const Indices& i) {
    Expr q = loop::select(loop::ne(s(), zero), loop::call("round", {x(as_exprs(i)) / s()}) + zpf(), zpf());
    return cast_to(clamp255(q), DType::U8);
  }, c.stage_name("y"));
  std::vector<te::Tensor> outs = {y, scale, zp};
  outs.resize(static_cast<size_t>(c.num_outputs()));
  return outs;
}

// ---------------------------------------------------------------- ai.onnx.ml

std::vector<te::Tensor> binarizer_expr(ExprContext& c) {
  const DType d = c.in(0).dtype();
  TESSERA_CHECK(is_float(d) || is_integer(d), c.node.describe(), ": input must be numeric, got ", dtype_name(d));
  const double threshold = op_attrs(c).f("threshold");
  return {elementwise(c, [&](const std::vector<Expr>& a) {
    Expr v = to_f64(is_float(d) && d != DType::F64 ? cast_to(a[0], DType::F32) : a[0]);
    return cast_to(loop::select(v > f64(threshold), f64(1.0), f64(0.0)), d);
  })};
}

std::vector<te::Tensor> array_feature_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  TESSERA_CHECK(x.dtype() != DType::String, c.node.describe(),
                ": string tensors are not supported by compiled kernels (strings are not a loop-IR type)");
  const Dims idims = ind.shape();
  const int64_t m = x.dim(x.rank() - 1);
  const Dims od = c.out(0).dims;
  return {te::compute(od, [&](const Indices& i) {
    // Flat position j in the indices tensor, unflattened to its dims.
    Expr j = i.back();
    std::vector<Expr> ii(idims.size());
    for (size_t d = idims.size(); d-- > 0;) {
      ii[d] = j % idims[d];
      j = j / idims[d];
    }
    Expr col = ind(ii);
    std::vector<Expr> xi;
    if (x.rank() == 1) {
      xi = {col};
    } else {
      for (size_t d = 0; d + 1 < i.size(); ++d) xi.push_back(i[d]);
      xi.push_back(col);
    }
    return te::if_then_else(col >= int64_t{0} && col < m, x(xi), loop::make_zero(x.type()));
  }, c.stage_name("")) };
}

}  // namespace

void register_misc_small_exprs(ExprRegistry& r) {
  r.set_expr("TopK", "", topk_expr);
  r.set_expr("NegativeLogLikelihoodLoss", "", [](ExprContext& c) { return loss_expr(c, false); });
  r.set_expr("SoftmaxCrossEntropyLoss", "", [](ExprContext& c) { return loss_expr(c, true); });
  r.set_expr("DynamicQuantizeLinear", "", dynamic_quantize_expr);
  r.set_expr("Binarizer", "ai.onnx.ml", binarizer_expr);
  r.set_expr("ArrayFeatureExtractor", "ai.onnx.ml", array_feature_expr);
}

}  // namespace tessera::ops
