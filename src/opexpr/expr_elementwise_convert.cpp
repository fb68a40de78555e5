// Tensor expressions of conversions and the remaining one-to-one ops: Cast,
// CastLike, BitCast, QuantizeLinear, DequantizeLinear, SwiGLU and Dropout
// (inference). Identity (expr_tensor_shape.cpp) and DynamicQuantizeLinear
// (expr_misc_small.cpp) are defined by their families' files.
#include <cmath>

#include "opexpr/expr_elementwise.h"
#include "ops/op_attrs.h"

namespace tessera::ops::ewx {

namespace {

using loop::select;
using loop::Type;
using loop::Var;

// ---------------------------------------------------------------- BitCast

struct FloatFormat {
  int ebits, mbits, bias;
};
FloatFormat format_of(DType d) {
  switch (d) {
    case DType::F16: return {5, 10, 15};
    case DType::BF16: return {8, 7, 127};
    case DType::F32: return {8, 23, 127};
    default: return {11, 52, 1023};
  }
}

Expr f64c(double v) { return loop::make_const({DType::F64, 1}, v); }

// v * 2^x for an integer expression x with |x| < 2^steps, exactly: one factor
// per bit of |x|, applied in order so intermediates stay between v and the
// result (factors 2^±1024 split in two).
Expr scale2(Lets& l, Expr v, const Expr& x, int steps) {
  Expr ax = l.bind("sc_x", select(x < 0, 0 - x, x));
  Expr neg = x < 0;
  for (int j = 0; j < steps; ++j) {
    int p = 1 << j;
    Expr bit = eq((ax / (int64_t{1} << j)) % 2, 1);
    int parts = p > 512 ? 2 : 1;
    for (int q = 0; q < parts; ++q) {
      double up_f = std::ldexp(1.0, p / parts), down_f = std::ldexp(1.0, -p / parts);
      Expr f = select(bit, select(neg, f64c(down_f), f64c(up_f)), f64c(1.0));
      v = l.bind("sc_v", v * f);
    }
  }
  return v;
}

// The IEEE bit pattern of float x as an unsigned integer of its width. NaN
// becomes the canonical quiet NaN (its payload and sign are not visible to
// arithmetic).
Expr float_to_bits(const Expr& x_in, DType u) {
  const FloatFormat f = format_of(x_in.type().dtype);
  const Type ut{u, 1};
  Lets l;
  Expr x = l.bind("fb_x", cast_to(x_in, DType::F64));
  Expr a = l.bind("fb_a", loop::call("abs", {x}));
  Expr sign = x < 0.0 || (eq(x, 0.0) && f64c(1.0) / x < 0.0);  // -0.0: 1/x == -inf
  // Normal numbers: a = m * 2^e with m in [1, 2).
  Expr m = a, e = loop::int_imm(0);
  int top = 1;
  while ((top << 1) <= f.bias) top <<= 1;
  for (int s = top; s >= 1; s /= 2) {
    Expr big = m >= std::ldexp(1.0, s);
    m = l.bind("fb_m", select(big, m * std::ldexp(1.0, -s), m));
    e = l.bind("fb_e", select(big, e + s, e));
  }
  for (int s = top; s >= 1; s /= 2) {
    Expr small = m < std::ldexp(1.0, 1 - s);
    m = l.bind("fb_m", select(small, m * std::ldexp(1.0, s), m));
    e = l.bind("fb_e", select(small, e - s, e));
  }
  const int64_t mant_one = int64_t{1} << f.mbits;
  Expr normal = cast_to(e + f.bias, u) * loop::make_int_const(ut, mant_one) +
                cast_to((m - 1.0) * static_cast<double>(mant_one), u);
  // Subnormals: the mantissa field is a / 2^(1 - bias - mbits).
  int sub_shift = f.bias - 1 + f.mbits;
  Expr sub = cast_to(a * std::ldexp(1.0, sub_shift / 2) * std::ldexp(1.0, sub_shift - sub_shift / 2), u);
  const int64_t exp_all = ((int64_t{1} << f.ebits) - 1) * mant_one;
  Expr mag = select(a < std::ldexp(1.0, 1 - f.bias), sub, normal);
  mag = select(eq(a, HUGE_VAL), loop::make_int_const(ut, exp_all), mag);
  Expr sign_bit = loop::make_int_const(ut, static_cast<int64_t>(uint64_t{1} << (f.ebits + f.mbits)));
  Expr bits = select(sign, sign_bit + mag, mag);
  bits = select(ne(x, x), loop::make_int_const(ut, exp_all + mant_one / 2), bits);
  return l.wrap(bits);
}

// The float of type d whose IEEE bit pattern is the unsigned integer u.
Expr bits_to_float(const Expr& u_in, DType d) {
  const FloatFormat f = format_of(d);
  const Type ut = u_in.type().element();
  Lets l;
  Expr u = l.bind("bf_u", u_in);
  const int64_t mant_one = int64_t{1} << f.mbits;
  auto c = [&](int64_t v) { return loop::make_int_const(ut, v); };
  Expr mant = l.bind("bf_m", cast_to(u % c(mant_one), DType::F64));
  Expr ef = l.bind("bf_e", cast_to((u / c(mant_one)) % c(int64_t{1} << f.ebits), DType::I64));
  Expr sign = eq(u / c(static_cast<int64_t>(uint64_t{1} << (f.ebits + f.mbits))), c(1));
  int steps = 0;
  while ((1 << steps) <= f.bias + f.mbits) ++steps;
  Expr normal = scale2(l, mant + static_cast<double>(mant_one), ef - (f.bias + f.mbits), steps);
  int sub_shift = f.bias - 1 + f.mbits;
  Expr sub = mant * std::ldexp(1.0, -(sub_shift / 2)) * std::ldexp(1.0, -(sub_shift - sub_shift / 2));
  const int64_t emax = (int64_t{1} << f.ebits) - 1;
  Expr v = select(eq(ef, 0), sub, normal);
  v = select(eq(ef, emax), select(eq(mant, 0.0), f64c(HUGE_VAL), f64c(NAN)), v);
  v = select(sign, v * -1.0, v);
  return l.wrap(cast_to(v, d));
}

Expr bitcast_expr(const Expr& x, DType to) {
  DType from = x.type().dtype;
  if (!is_float(from) && !is_float(to)) return cast_to(x, to);  // same width: wrapping cast
  Expr bits = is_float(from) ? float_to_bits(x, unsigned_of(from)) : cast_to(x, unsigned_of(from));
  return is_float(to) ? bits_to_float(bits, to) : cast_to(bits, to);
}

// ---------------------------------------------------------------- quantization

// Reads a scale / zero point at output index idx under the node's layout:
// per tensor, per axis, or blocked along axis.
Expr read_quant_param(ExprContext& c, const te::Tensor& p, const te::Tensor& scale, const std::vector<Expr>& idx) {
  const Dims& s = scale.shape();
  int64_t block = op_attrs(c).i("block_size");
  if (numel_of(p.shape()) == 1 && (block == 0 || numel_of(s) == 1))
    return p(std::vector<Expr>(static_cast<size_t>(p.rank()), loop::int_imm(0)));
  TESSERA_CHECK(p.shape() == s, c.node.describe(), ": zero point [", dims_to_string(p.shape()),
                "] differs from scale [", dims_to_string(s), "]");
  int64_t rank = static_cast<int64_t>(idx.size());
  auto axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), rank));
  if (block == 0) {
    TESSERA_CHECK(s.size() == 1, c.node.describe(), ": per-axis scale must be 1-D");
    return p(idx[axis]);
  }
  std::vector<Expr> pi = idx;
  pi[axis] = idx[axis] / block;
  return p(std::move(pi));
}

ExprFn quantize_fn() {
  return [](ExprContext& c) {
    const te::Tensor& x = c.in(0);
    const te::Tensor& s = c.in(1);
    int64_t pa = op_attrs(c).i("precision");
    DType prec = pa ? static_cast<DType>(pa) : (x.dtype() == DType::I32 ? DType::F64 : x.dtype());
    TESSERA_CHECK(is_float(prec), c.node.describe(), ": precision ", pa, " is not a supported float type");
    DType wd = x.dtype() == DType::I32 || x.dtype() == DType::F64 || prec == DType::F64 ? DType::F64 : DType::F32;
    const TensorType& out = c.out(0);
    return std::vector<te::Tensor>{te::compute(out.dims, [&](const Indices& i) {
      std::vector<Expr> idx = as_exprs(i);
      Expr sc = cast_to(cast_to(read_quant_param(c, s, s, idx), prec), wd);
      Expr q = cast_to(cast_to(cast_to(x(idx), wd) / sc, prec), DType::F64);
      q = loop::call("round", {q});
      if (c.has_input(2)) q = q + cast_to(read_quant_param(c, c.in(2), s, idx), DType::F64);
      return cast_to(q, out.dtype);  // saturating, NaN -> 0
    }, c.stage_name(""), te::OpClass::Elementwise)};
  };
}

ExprFn dequantize_fn() {
  return [](ExprContext& c) {
    const te::Tensor& x = c.in(0);
    const te::Tensor& s = c.in(1);
    const TensorType& out = c.out(0);
    DType wd = x.dtype() == DType::I32 || s.dtype() == DType::F64 || out.dtype == DType::F64 ? DType::F64 : DType::F32;
    return std::vector<te::Tensor>{te::compute(out.dims, [&](const Indices& i) {
      std::vector<Expr> idx = as_exprs(i);
      Expr v = cast_to(x(idx), wd);
      if (c.has_input(2)) v = v - cast_to(read_quant_param(c, c.in(2), s, idx), wd);
      return cast_to(v * cast_to(read_quant_param(c, s, s, idx), wd), out.dtype);
    }, c.stage_name(""), te::OpClass::Elementwise)};
  };
}

// ---------------------------------------------------------------- Dropout

std::vector<te::Tensor> dropout(ExprContext& c) {
  bool training = false;
  double ratio = 0.5;
  bool ratio_known = true;
  if (c.opset >= 12) {
    if (c.has_input(2)) {
      TESSERA_CHECK(c.has_value(2), c.node.describe(),
                    ": training_mode is not a constant; only inference-mode Dropout has a compiled kernel");
      training = c.value(2).get_int(0) != 0;
    }
    ratio_known = !c.has_input(1) || c.has_value(1);
    if (c.has_input(1) && (training || ratio_known)) ratio = c.value(1).get_double(0);
  } else {
    ratio = op_attrs(c).f("ratio");
    if (c.opset < 7) training = op_attrs(c).i("is_test") == 0;
  }
  if (ratio_known)
    TESSERA_CHECK(ratio >= 0 && ratio < 1, c.node.describe(), ": ratio must be in [0, 1), got ", ratio);
  TESSERA_CHECK(!training || ratio == 0, c.node.describe(),
                ": training-mode Dropout draws random masks; only inference mode has a compiled kernel");
  std::vector<te::Tensor> outs{c.in(0)};
  if (c.num_outputs() > 1) {
    const TensorType& mt = c.out(1);
    outs.push_back(te::compute(mt.dims, [&](const Indices&) { return loop::make_one({mt.dtype, 1}); },
                               c.stage_name("mask"), te::OpClass::Elementwise));
  }
  return outs;
}

}  // namespace

void register_convert_exprs(ExprRegistry& r) {
  auto check_no_string = [](ExprContext& c) {
    TESSERA_CHECK(c.in(0).dtype() != DType::String && c.out(0).dtype != DType::String, c.node.describe(),
                  ": string casts have no compiled kernel");
  };
  r.set_expr("Cast", "", [check_no_string](ExprContext& c) {
    check_no_string(c);
    return std::vector<te::Tensor>{ew(c, [](const Args& a) { return a[0]; })};
  });
  r.set_expr("CastLike", "", [check_no_string](ExprContext& c) {
    check_no_string(c);
    return std::vector<te::Tensor>{ew(c, [](const Args& a) { return a[0]; }, false, 1)};
  });
  r.set_expr("BitCast", "", [](ExprContext& c) {
    DType from = c.in(0).dtype(), to = c.out(0).dtype;
    TESSERA_CHECK(from != DType::String && dtype_size(from) == dtype_size(to), c.node.describe(),
                  ": cannot bitcast ", dtype_name(from), " to ", dtype_name(to));
    return std::vector<te::Tensor>{ew(c, [to](const Args& a) { return bitcast_expr(a[0], to); })};
  });
  r.set_expr("QuantizeLinear", "", quantize_fn());
  r.set_expr("DequantizeLinear", "", dequantize_fn());
  r.set_expr("SwiGLU", "", [](ExprContext& c) {
    double alpha = op_attrs(c).f("alpha");
    return std::vector<te::Tensor>{ew(c, [alpha](const Args& a) {
      Expr x = up(a[0]), v = up(a[1]);
      return x / (loop::call("exp", {x * -alpha}) + 1.0) * v;
    })};
  });
  r.set_expr("Dropout", "", dropout);
}

}  // namespace tessera::ops::ewx
