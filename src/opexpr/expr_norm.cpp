// Tensor-expression definitions of Softmax / LogSoftmax / Hardmax and the
// normalizations: BatchNormalization, InstanceNormalization,
// GroupNormalization, LayerNormalization, RMSNormalization,
// MeanVarianceNormalization, LpNormalization and LRN.
//
// Row statistics (Softmax's maximum and sum, Layer / RMS normalization's
// mean and variance) run in the compute type (f32 for f16 / bf16 / f32, f64
// for f64) for rows up to kF32RowTerms (expr_reduce.h); the others
// accumulate in double, as the references (nn_softmax.cpp, nn_batchnorm.cpp,
// nn_layernorm.cpp, nn_lrn.cpp) do. The per-element normalize step runs in the compute type
// with the per-row factors rounded once. Every reduction is its own
// materialized stage (max, sum, mean, inverse deviation ...).
#include <cmath>
#include <numeric>

#include "opexpr/expr_reduce.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::ReduceOp;
using red::AxisPlan;
using red::f64;
using red::fconst;
using red::is_nan;
using Idx = std::vector<Expr>;

void check_float(ExprContext& c, DType t) {
  TESSERA_CHECK(is_float(t), c.node.describe(), ": needs a float input, got ", dtype_name(t));
}

// ---------------------------------------------------------------- Softmax family

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

// The reduced axes: [axis, rank) before opset 13 (the input coerced to 2-D),
// the one axis from 13.
AxisPlan soft_plan(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  AxisPlan p{x.shape(), {}, true};
  if (rank == 0) return p;
  if (c.opset < 13) {
    int64_t axis = op_attrs(c).i("axis");
    TESSERA_CHECK(axis >= -rank && axis <= rank, c.node.describe(), ": axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    for (int64_t a = axis; a < rank; ++a) p.axes.push_back(a);
  } else {
    p.axes.push_back(red::norm_axis(c.node, op_attrs(c).i("axis"), rank));
  }
  return p;
}

std::vector<te::Tensor> soft_expr(ExprContext& c, SoftKind kind) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  check_float(c, T);
  const DType C = red::compute_dtype(T);
  AxisPlan p = soft_plan(c);
  const Dims sd = p.out_dims();
  auto xc = [&](const Idx& i) { return cast_to(x(i), C); };
  // The row maximum, NaN ignored (the reference's `v > max`), in the compute
  // type: a maximum is exact in any type, and f32 fills twice the lanes of f64.
  te::Tensor md = red::reduce_stage(p, ReduceOp::Max, [&](const Idx& i) {
    Expr v = xc(i);
    return loop::select(is_nan(v), fconst(C, -INFINITY), v);
  }, c.stage_name("max"));
  struct CastRead {
    const te::Tensor& t;
    DType to;
    Expr operator()(const Idx& i) const { return cast_to(t(i), to); }
  } m{md, C};
  if (kind == SoftKind::Hardmax) {
    // The first position holding the maximum (none when it is -inf: position 0).
    const int64_t none = std::max<int64_t>(p.count(), 1);
    te::Tensor first = te::compute(sd, [&](const Indices& oi) {
      Idx o = as_exprs(oi);
      Expr mv = m(o);
      std::vector<loop::ReduceAxis> rv = p.make_axes();
      Idx in = p.input_index(o, rv);
      Expr hit = loop::eq(xc(in), mv) && loop::ne(mv, fconst(C, -INFINITY));
      Expr key = loop::select(hit, p.flat_position(rv), loop::int_imm(none));
      if (p.axes.empty()) return loop::min(loop::int_imm(none), key);
      return loop::reduce(ReduceOp::Min, key, rv);
    }, c.stage_name("arg"), te::OpClass::Reduce);
    return {te::compute(x.shape(), [&](const Indices& ii) {
      Idx i = as_exprs(ii);
      Expr pos = loop::int_imm(0);
      for (int64_t a : p.axes) pos = pos * x.dim(static_cast<int>(a)) + i[static_cast<size_t>(a)];
      Expr f = first(p.stat_index(i));
      Expr arg = loop::select(loop::eq(f, loop::int_imm(none)), loop::int_imm(0), f);
      return loop::select(loop::eq(pos, arg), fconst(T, 1), fconst(T, 0));
    }, c.stage_name(""), "softmax")};
  }
  if (kind == SoftKind::Softmax) {
    // The exponentials once, read by the sum and by the quotient (a row rule
    // keeps them per row, in cache): exp costs more than the rest of a
    // softmax together, and computing it twice, as the sum and the quotient
    // each inlined it, would double the kernel's time.
    te::Tensor e = te::compute(x.shape(), [&](const Indices& ii) {
      Idx i = as_exprs(ii);
      return loop::call("exp", {xc(i) - m(p.stat_index(i))});
    }, c.stage_name("exp"), "softmax");
    // The sum of terms in (0, 1]: in the compute type up to red::kF32RowTerms.
    const DType S = p.count() <= red::kF32RowTerms ? C : DType::F64;
    te::Tensor se = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) { return cast_to(e(i), S); },
                                      c.stage_name("sum"));
    // One reciprocal per row, then a product per element instead of a quotient.
    te::Tensor inv = red::materialize(sd, [&](const Idx& o) { return cast_to(fconst(S, 1) / se(o), C); },
                                      c.stage_name("inv"), "softmax");
    return {te::compute(x.shape(), [&](const Indices& ii) {
      Idx i = as_exprs(ii);
      return cast_to(e(i) * inv(p.stat_index(i)), T);
    }, c.stage_name(""), "softmax")};
  }
  te::Tensor s = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) {
    return f64(loop::call("exp", {xc(i) - m(p.stat_index(i))}));
  }, c.stage_name("sum"));
  te::Tensor lsd = red::materialize(sd, [&](const Idx& o) { return loop::call("log", {s(o)}); },
                                    c.stage_name("logsum"), "softmax");
  CastRead ls{lsd, C};
  return {te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    Idx st = p.stat_index(i);
    return cast_to(xc(i) - m(st) - ls(st), T);
  }, c.stage_name(""), "softmax")};
}

// ---------------------------------------------------------------- Layer / RMS normalization

std::vector<te::Tensor> layer_norm_expr(ExprContext& c, bool layer) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  check_float(c, T);
  const DType C = red::compute_dtype(T);
  const int64_t rank = x.rank();
  const int64_t axis = red::norm_axis(c.node, op_attrs(c).i("axis"), rank);
  const double eps = op_attrs(c).f("epsilon");
  AxisPlan p{x.shape(), {}, true};
  for (int64_t a = axis; a < rank; ++a) p.axes.push_back(a);
  const Dims sd = p.out_dims();
  const double n = static_cast<double>(p.count());
  const te::Tensor& scale = c.in(1);
  const te::Tensor* bias = layer && c.has_input(2) ? &c.in(2) : nullptr;
  // The statistics in the compute type for rows up to red::kF32RowTerms, unless
  // stash_type asks for double.
  const bool stash_f64 = static_cast<DType>(op_attrs(c).i("stash_type")) == DType::F64;
  const DType S = p.count() <= red::kF32RowTerms && !stash_f64 ? C : DType::F64;
  auto xs = [&](const Idx& i) { return cast_to(x(i), S); };
  // Deviations are taken from the row's first value x0 and the mean's offset
  // from it, d = (x - x0) - (mean - x0): x - x0 is exact for values near x0,
  // so a row far from 0 with a small spread (hidden states with a large
  // offset) keeps its spread in an f32 sum, and the per-element step never
  // subtracts a mean rounded at the row's magnitude.
  auto first = [&](const Idx& i, DType t) {
    Idx f = i;
    for (int64_t a : p.axes) f[static_cast<size_t>(a)] = loop::int_imm(0);
    return cast_to(x(f), t);
  };
  te::Tensor offset;  // mean - x0
  if (layer) {
    te::Tensor s1 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) { return xs(i) - first(i, S); },
                                      c.stage_name("sum"));
    offset = red::materialize(sd, [&](const Idx& o) { return s1(o) / fconst(S, n); }, c.stage_name("offset"),
                              "layernorm");
  }
  // x - mean in type t.
  auto dev = [&](const Idx& i, DType t) {
    Expr v = cast_to(x(i), t);
    return layer ? v - first(i, t) - cast_to(offset(p.stat_index(i)), t) : v;
  };
  te::Tensor s2 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) {
    Expr d = dev(i, S);
    return d * d;
  }, c.stage_name("sqsum"));
  te::Tensor inv = red::materialize(sd, [&](const Idx& o) {
    return fconst(S, 1) / loop::call("sqrt", {s2(o) / fconst(S, n) + fconst(S, eps)});
  }, c.stage_name("inv"), "layernorm");
  std::vector<te::Tensor> outs;
  outs.push_back(te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii), st = p.stat_index(i);
    Expr v = dev(i, C) * cast_to(inv(st), C) * cast_to(broadcast_read(scale, i), C);
    if (bias) v = v + cast_to(broadcast_read(*bias, i), C);
    return cast_to(v, T);
  }, c.stage_name(""), "layernorm"));
  if (layer && c.num_outputs() > 1) {
    for (int k = 1; k < c.num_outputs(); ++k) {
      const DType st = c.out(k).dtype;
      outs.push_back(te::compute(sd, [&](const Indices& oi) {
        Idx o = as_exprs(oi);
        return cast_to(k == 1 ? first(o, S) + offset(o) : Expr(inv(o)), st);
      }, c.stage_name(k == 1 ? "mean_out" : "inv_out"), "layernorm"));
    }
  }
  return outs;
}

// ---------------------------------------------------------------- Batch normalization

bool bn_training(const Node& n, int64_t opset, int num_outputs) {
  if (opset >= 14) return OpAttrs(n, opset).i("training_mode") != 0;
  if (opset <= 6 && n.has_attr("is_test")) return OpAttrs(n, opset).i("is_test") == 0 && num_outputs > 1;
  return num_outputs > 1;
}

// Reads a parameter (any rank) at flat position k.
Expr param_at(const te::Tensor& t, const Expr& k) { return t.rank() == 1 ? t(k) : red::read_flat(t, k); }

std::vector<te::Tensor> batch_norm_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype();
  check_float(c, T);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2 (N, C, ...)");
  const int64_t rank = x.rank(), C = x.dim(1);
  int64_t plane = 1;
  for (int64_t d = 2; d < rank; ++d) plane *= x.dim(static_cast<int>(d));
  const DType CT = red::compute_dtype(T);
  const double eps = op_attrs(c).f("epsilon");
  const double momentum = op_attrs(c).f("momentum");
  const te::Tensor &scale = c.in(1), &bias = c.in(2), &mean = c.in(3), &var = c.in(4);
  const int64_t per = numel_of(scale.shape());
  TESSERA_CHECK(per == C || per == C * plane, c.node.describe(), ": scale has ", per, " values, expected ", C);
  for (int i = 2; i <= 4; ++i)
    TESSERA_CHECK(numel_of(c.in(i).shape()) == per, c.node.describe(), ": input ", i, " has the wrong size");
  const bool training = bn_training(c.node, c.opset, c.num_outputs());
  TESSERA_CHECK(!training || per == C, c.node.describe(), ": training mode needs per-channel parameters");
  // Parameter index of element i.
  auto kidx = [&](const Idx& i) -> Expr {
    if (per == C) return i[1];
    Expr flat = i[1];
    for (int64_t d = 2; d < rank; ++d) flat = flat * x.dim(static_cast<int>(d)) + i[static_cast<size_t>(d)];
    return flat;
  };
  te::Tensor bmean, bvar;
  if (training) {
    AxisPlan p{x.shape(), {0}, false};
    for (int64_t d = 2; d < rank; ++d) p.axes.push_back(d);
    const double cnt = static_cast<double>(p.count());
    te::Tensor s1 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) { return f64(x(i)); }, c.stage_name("sum"));
    bmean = red::materialize({C}, [&](const Idx& o) { return s1(o) / fconst(DType::F64, cnt); }, c.stage_name("bmean"),
                             "batchnorm");
    te::Tensor s2 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) {
      Expr d = f64(x(i)) - bmean(i[1]);
      return d * d;
    }, c.stage_name("sqsum"));
    bvar = red::materialize({C}, [&](const Idx& o) { return s2(o) / fconst(DType::F64, cnt); }, c.stage_name("bvar"),
                            "batchnorm");
  }
  auto um = [&](const Expr& k) { return training ? bmean(k) : f64(param_at(mean, k)); };
  auto uv = [&](const Expr& k) { return training ? bvar(k) : f64(param_at(var, k)); };
  // Per parameter: a = scale / sqrt(var + eps), then y = (x - mean) * a + bias.
  te::Tensor a = red::materialize({per}, [&](const Idx& o) {
    return cast_to(f64(param_at(scale, o[0])) / loop::call("sqrt", {uv(o[0]) + fconst(DType::F64, eps)}), CT);
  }, c.stage_name("factor"), "batchnorm");
  std::vector<te::Tensor> outs;
  outs.push_back(te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    Expr k = kidx(i);
    Expr v = (cast_to(x(i), CT) - cast_to(um(k), CT)) * a(k) + cast_to(param_at(bias, k), CT);
    return cast_to(v, T);
  }, c.stage_name(""), "batchnorm"));
  for (int o = 1; o < c.num_outputs(); ++o) {
    const TensorType& ot = c.out(o);
    const bool is_mean = o % 2 == 1;
    const te::Tensor& given = is_mean ? mean : var;
    const te::Tensor& batch = is_mean ? bmean : bvar;
    outs.push_back(te::compute(ot.dims, [&](const Indices& ii) {
      Expr k = loop::int_imm(0);
      for (size_t d = 0; d < ii.size(); ++d) k = k * ot.dims[d] + ii[d];
      Expr g = f64(param_at(given, k));
      Expr v = g;
      if (training) v = o <= 2 ? g * fconst(DType::F64, momentum) + batch(k) * fconst(DType::F64, 1 - momentum)
                               : Expr(batch(k));
      return cast_to(v, ot.dtype);
    }, c.stage_name("out" + std::to_string(o)), "batchnorm"));
  }
  return outs;
}

// ---------------------------------------------------------------- Instance / Group normalization

// Statistics over `groups` runs of channels per sample; per_group_params:
// scale / bias hold one value per group, else one per channel.
std::vector<te::Tensor> group_norm_core(ExprContext& c, int64_t groups, bool per_group_params) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype(), CT = red::compute_dtype(T);
  const int64_t rank = x.rank(), N = x.dim(0), C = x.dim(1);
  const int64_t cpg = C / groups;
  int64_t plane = 1;
  for (int64_t d = 2; d < rank; ++d) plane *= x.dim(static_cast<int>(d));
  const double len = static_cast<double>(cpg * plane);
  const double eps = op_attrs(c).f("epsilon");
  const te::Tensor &scale = c.in(1), &bias = c.in(2);
  // x at sample n, group g, in-group channel rc and spatial reduce vars.
  auto group_sum = [&](const std::function<Expr(const Idx& in, const Idx& stat)>& f, const std::string& nm) {
    return te::compute({N, groups}, [&](const Indices& o) {
      std::vector<loop::ReduceAxis> rv{te::reduce_axis(cpg, "rc")};
      for (int64_t d = 2; d < rank; ++d) rv.push_back(te::reduce_axis(x.dim(static_cast<int>(d)), "rs" + std::to_string(d)));
      Idx in{o[0], o[1] * cpg + rv[0].var};
      for (size_t d = 1; d < rv.size(); ++d) in.push_back(rv[d].var);
      return loop::reduce(ReduceOp::Sum, f(in, as_exprs(o)), rv);
    }, c.stage_name(nm), te::OpClass::Reduce);
  };
  te::Tensor s1 = group_sum([&](const Idx& in, const Idx&) { return f64(x(in)); }, "sum");
  te::Tensor mean = red::materialize({N, groups}, [&](const Idx& o) { return s1(o) / fconst(DType::F64, len); },
                                     c.stage_name("mean"), "groupnorm");
  te::Tensor s2 = group_sum([&](const Idx& in, const Idx& st) {
    Expr d = f64(x(in)) - mean(st);
    return d * d;
  }, "sqsum");
  te::Tensor inv = red::materialize({N, groups}, [&](const Idx& o) {
    return fconst(DType::F64, 1) / loop::call("sqrt", {s2(o) / fconst(DType::F64, len) + fconst(DType::F64, eps)});
  }, c.stage_name("inv"), "groupnorm");
  return {te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    Expr g = cpg == 1 ? i[1] : i[1] / cpg;
    Idx st{i[0], g};
    Expr k = per_group_params ? g : i[1];
    Expr v = (cast_to(x(i), CT) - cast_to(mean(st), CT)) * cast_to(inv(st), CT) * cast_to(param_at(scale, k), CT) +
             cast_to(param_at(bias, k), CT);
    return cast_to(v, T);
  }, c.stage_name(""), "groupnorm")};
}

std::vector<te::Tensor> instance_norm_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  check_float(c, x.dtype());
  TESSERA_CHECK(x.rank() >= 3, c.node.describe(), ": X must have rank >= 3");
  const int64_t C = x.dim(1);
  TESSERA_CHECK(numel_of(c.in(1).shape()) == C && numel_of(c.in(2).shape()) == C, c.node.describe(),
                ": scale and B must have ", C, " values");
  return group_norm_core(c, C, true);
}

std::vector<te::Tensor> group_norm_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  check_float(c, x.dtype());
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2");
  const int64_t C = x.dim(1), G = op_attrs(c).i("num_groups");
  TESSERA_CHECK(G > 0 && C % G == 0, c.node.describe(), ": ", C, " channels are not divisible into ", G, " groups");
  const int64_t ns = numel_of(c.in(1).shape());
  TESSERA_CHECK((ns == C || ns == G) && numel_of(c.in(2).shape()) == ns, c.node.describe(),
                ": scale and bias must have ", C, " (or ", G, ") values");
  return group_norm_core(c, G, ns != C);
}

// ---------------------------------------------------------------- MVN, Lp, LRN

std::vector<te::Tensor> mvn_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype(), CT = red::compute_dtype(T);
  check_float(c, T);
  AxisPlan p{x.shape(), {}, true};
  for (int64_t a : op_attrs(c).ints("axes")) {
    int64_t na = red::norm_axis(c.node, a, x.rank());
    if (!p.reduced(na)) p.axes.push_back(na);
  }
  std::sort(p.axes.begin(), p.axes.end());
  const Dims sd = p.out_dims();
  const double cnt = static_cast<double>(p.count());
  te::Tensor s1 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) { return f64(x(i)); }, c.stage_name("sum"));
  te::Tensor s2 = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) {
    Expr v = f64(x(i));
    return v * v;
  }, c.stage_name("sqsum"));
  te::Tensor mean = red::materialize(sd, [&](const Idx& o) { return s1(o) / fconst(DType::F64, cnt); },
                                     c.stage_name("mean"), "mvn");
  te::Tensor den = red::materialize(sd, [&](const Idx& o) {
    Expr m = s1(o) / fconst(DType::F64, cnt);
    Expr var = loop::max(fconst(DType::F64, 0), s2(o) / fconst(DType::F64, cnt) - m * m);
    return loop::call("sqrt", {var}) + fconst(DType::F64, 1e-9);
  }, c.stage_name("den"), "mvn");
  return {te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii), st = p.stat_index(i);
    return cast_to((cast_to(x(i), CT) - cast_to(mean(st), CT)) / cast_to(den(st), CT), T);
  }, c.stage_name(""), "mvn")};
}

std::vector<te::Tensor> lp_norm_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype(), CT = red::compute_dtype(T);
  check_float(c, T);
  const int64_t pw = op_attrs(c).i("p");
  TESSERA_CHECK(pw == 1 || pw == 2, c.node.describe(), ": p must be 1 or 2, got ", pw);
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": scalar inputs are not supported");
  AxisPlan p{x.shape(), {red::norm_axis(c.node, op_attrs(c).i("axis"), x.rank())}, true};
  te::Tensor s = red::reduce_stage(p, ReduceOp::Sum, [&](const Idx& i) {
    Expr v = f64(x(i));
    return pw == 1 ? loop::call("abs", {v}) : v * v;
  }, c.stage_name("sum"));
  te::Tensor norm = red::materialize(p.out_dims(), [&](const Idx& o) {
    return pw == 2 ? loop::call("sqrt", {s(o)}) : s(o);
  }, c.stage_name("norm"), "lpnorm");
  return {te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii), st = p.stat_index(i);
    Expr nv = norm(st);
    return cast_to(loop::select(loop::eq(nv, fconst(DType::F64, 0)), fconst(CT, 0),
                                cast_to(x(i), CT) / cast_to(nv, CT)), T);
  }, c.stage_name(""), "lpnorm")};
}

std::vector<te::Tensor> lrn_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const DType T = x.dtype(), CT = red::compute_dtype(T);
  check_float(c, T);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must be a float tensor of rank >= 2");
  const int64_t size = op_attrs(c).i("size");
  TESSERA_CHECK(size > 0, c.node.describe(), ": size must be positive");
  const double alpha = op_attrs(c).f("alpha"), beta = op_attrs(c).f("beta"),
               bias = op_attrs(c).f("bias");
  const int64_t C = x.dim(1), before = (size - 1) / 2;
  te::Tensor sq = te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    loop::ReduceAxis r = te::reduce_axis(size, "r");
    Expr j = i[1] - before + r.var;
    Idx at = i;
    at[1] = j;
    Expr v = f64(x(at));
    return loop::reduce(ReduceOp::Sum, v * v, {r}, j >= 0 && j < C);
  }, c.stage_name("sqsum"), te::OpClass::Reduce);
  return {te::compute(x.shape(), [&](const Indices& ii) {
    Idx i = as_exprs(ii);
    Expr base = fconst(DType::F64, bias) + fconst(DType::F64, alpha / static_cast<double>(size)) * sq(i);
    return cast_to(cast_to(x(i), CT) / loop::call("pow", {cast_to(base, CT), fconst(CT, beta)}), T);
  }, c.stage_name(""), "lrn")};
}

}  // namespace

void register_norm_exprs(ExprRegistry& r) {
  r.set_expr("Softmax", "", [](ExprContext& c) { return soft_expr(c, SoftKind::Softmax); });
  r.set_expr("LogSoftmax", "", [](ExprContext& c) { return soft_expr(c, SoftKind::LogSoftmax); });
  r.set_expr("Hardmax", "", [](ExprContext& c) { return soft_expr(c, SoftKind::Hardmax); });
  r.set_expr("LayerNormalization", "", [](ExprContext& c) { return layer_norm_expr(c, true); });
  r.set_expr("RMSNormalization", "", [](ExprContext& c) { return layer_norm_expr(c, false); });
  r.set_expr("BatchNormalization", "", batch_norm_expr);
  r.set_expr("InstanceNormalization", "", instance_norm_expr);
  r.set_expr("GroupNormalization", "", group_norm_expr);
  r.set_expr("MeanVarianceNormalization", "", mvn_expr);
  r.set_expr("LpNormalization", "", lp_norm_expr);
  r.set_expr("LRN", "", lrn_expr);
}

}  // namespace tessera::ops
