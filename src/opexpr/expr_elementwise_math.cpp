// Tensor expressions of unary math (elementwise_unary.cpp) and activations
// (elementwise_activation.cpp). Float math runs in f32 for f16/bf16 and is
// rounded once to the element type; the selects are ordered so that NaN takes
// the same branch as in the reference's comparisons.
#include <cmath>
#include <limits>

#include "opexpr/expr_elementwise.h"
#include "ops/op_attrs.h"

namespace tessera::ops::ewx {

namespace {

using loop::call;
using loop::select;

constexpr double kPi = 3.14159265358979323846;

Expr softplus(const Expr& v) {
  // log(1 + exp(v)) without overflow, as the reference.
  return select(v > 0, v + call("log1p", {call("exp", {-v})}), call("log1p", {call("exp", {v})}));
}

// A float activation whose formula depends on the node: make(node, x).
ExprFn act(std::function<Expr(const OpAttrs&, const Expr&)> make) {
  return [make = std::move(make)](ExprContext& c) {
    const OpAttrs attrs = op_attrs(c);
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) { return make(attrs, up(a[0])); })};
  };
}

void register_unary(ExprRegistry& r) {
  r.set_expr("Abs", "", ew_fn([](const Args& a) {
    const Expr& x = a[0];
    if (x.type().is_float()) return call("abs", {x});
    if (!is_signed(x.type().dtype)) return x;
    return select(x < 0, 0 - x, x);  // abs(min) wraps
  }));
  r.set_expr("Neg", "", ew_fn([](const Args& a) {
    const Expr& x = a[0];
    return x.type().is_float() ? x * -1.0 : 0 - x;  // -0.0 for 0.0, as the reference
  }));
  r.set_expr("Sign", "", ew_fn([](const Args& a) {
    const Expr& x = a[0];
    if (!x.type().is_float() && !is_signed(x.type().dtype)) return select(x > 0, k(x, 1), k(x, 0));
    return select(x > 0, k(x, 1), select(x < 0, k(x, -1), x));  // keeps NaN and -0.0
  }));
  for (const char* fn : {"Ceil", "Floor", "Round", "Sqrt", "Exp", "Log", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
                         "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Sigmoid"}) {
    std::string name = fn;
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    r.set_expr(fn, "", float_unary([name](const Expr& x) { return call(name, {x}); }));
  }
  r.set_expr("Reciprocal", "", float_unary([](const Expr& x) { return 1.0 / x; }));
  // Integer inputs: erf in double, truncated and saturated to the type.
  r.set_expr("Erf", "", ew_fn([](const Args& a) {
    const Expr& x = a[0];
    return call("erf", {x.type().is_float() ? up(x) : cast_to(x, DType::F64)});
  }));
  r.set_expr("Not", "", ew_fn([](const Args& a) { return !a[0]; }));
  r.set_expr("BitwiseNot", "", ew_fn([](const Args& a) { return -1 - a[0]; }));  // ~x == -1 - x, wrapping
  r.set_expr("IsNaN", "", ew_fn([](const Args& a) { return ne(a[0], a[0]); }));
  r.set_expr("IsInf", "", [](ExprContext& c) {
    bool neg = op_attrs(c).i("detect_negative") != 0, pos = op_attrs(c).i("detect_positive") != 0;
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) {
      const double inf = std::numeric_limits<double>::infinity();
      Expr x = a[0], r = loop::bool_imm(false);
      if (pos) r = r || eq(x, k(x, inf));
      if (neg) r = r || eq(x, k(x, -inf));
      return r;
    })};
  });
}

void register_activations(ExprRegistry& r) {
  // Loop IR's max(a, b) is b when either is NaN (x86 maxps): with x second a
  // NaN propagates, as in torch, and Relu stays one maxps.
  r.set_expr("Relu", "", ew_fn([](const Args& a) { return loop::max(loop::make_zero(a[0].type()), a[0]); }));
  r.set_expr("LeakyRelu", "", act([](const OpAttrs& at, const Expr& x) {
    return select(x >= 0, x, x * static_cast<double>(at.f("alpha")));
  }));
  r.set_expr("Elu", "", act([](const OpAttrs& at, const Expr& x) {
    return select(x >= 0, x, call("expm1", {x}) * static_cast<double>(at.f("alpha")));
  }));
  r.set_expr("Selu", "", act([](const OpAttrs& at, const Expr& x) {
    double al = at.f("alpha");
    double g = at.f("gamma");
    return select(x > 0, x * g, (call("exp", {x}) * al - al) * g);
  }));
  r.set_expr("Celu", "", act([](const OpAttrs& at, const Expr& x) {
    double al = at.f("alpha");
    TESSERA_CHECK(al != 0, at.node().describe(), ": alpha must be non-zero");
    // The data second in max/min: NaN propagates (see Relu).
    return loop::max(k(x, 0), x) + loop::min(k(x, 0), call("expm1", {x / al}) * al);
  }));
  r.set_expr("ThresholdedRelu", "", act([](const OpAttrs& at, const Expr& x) {
    return select(x > static_cast<double>(at.f("alpha")), x, k(x, 0));
  }));
  r.set_expr("HardSigmoid", "", act([](const OpAttrs& at, const Expr& x) {
    double al = at.f("alpha"), b = at.f("beta");
    return loop::max(k(x, 0), loop::min(k(x, 1), x * al + b));  // NaN propagates (see Relu)
  }));
  r.set_expr("HardSwish", "", act([](const OpAttrs&, const Expr& x) {
    return x * loop::max(k(x, 0), loop::min(k(x, 1), x / 6.0 + 0.5));
  }));
  r.set_expr("Softplus", "", act([](const OpAttrs&, const Expr& x) { return softplus(x); }));
  r.set_expr("Softsign", "", act([](const OpAttrs&, const Expr& x) { return x / (call("abs", {x}) + 1.0); }));
  r.set_expr("Mish", "", act([](const OpAttrs&, const Expr& x) { return x * call("tanh", {softplus(x)}); }));
  r.set_expr("Gelu", "", act([](const OpAttrs& at, const Expr& x) {
    std::string ap = at.s("approximate");
    TESSERA_CHECK(ap == "none" || ap == "tanh", at.node().describe(), ": approximate must be 'none' or 'tanh', got '",
                  ap, "'");
    if (ap == "tanh")
      return x * 0.5 * (call("tanh", {(x + x * x * x * 0.044715) * std::sqrt(2.0 / kPi)}) + 1.0);
    return x * 0.5 * (call("erf", {x * (1.0 / std::sqrt(2.0))}) + 1.0);
  }));
  // Integer inputs run in double and are truncated and saturated, as the reference.
  r.set_expr("Shrink", "", [](ExprContext& c) {
    double bias = op_attrs(c).f("bias"), lambd = op_attrs(c).f("lambd");
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) {
      Expr x = a[0].type().is_float() ? up(a[0]) : cast_to(a[0], DType::F64);
      return select(x < -lambd, x + bias, select(x > lambd, x - bias, k(x, 0)));
    })};
  });
  r.set_expr("Swish", "", act([](const OpAttrs& at, const Expr& x) {
    double al = at.f("alpha");
    return x / (call("exp", {x * -al}) + 1.0);
  }));

  // PRelu: before opset 7 the slope has one element or one per channel (axis 1).
  r.set_expr("PRelu", "", [](ExprContext& c) {
    const te::Tensor& x = c.in(0);
    const te::Tensor& s = c.in(1);
    Dims sd = s.shape();
    if (c.opset < 7) {
      int64_t count = numel_of(sd);
      if (count == 1) sd = {};
      else {
        TESSERA_CHECK(x.rank() >= 2 && count == x.dim(1), c.node.describe(), ": before opset 7 the slope [",
                      dims_to_string(s.shape()), "] must have 1 element or one per channel of the input");
        sd = Dims(static_cast<size_t>(x.rank() - 1), 1);
        sd[0] = count;
      }
    }
    const TensorType& out = c.out(0);
    return std::vector<te::Tensor>{te::compute(out.dims, [&](const Indices& i) {
      std::vector<Expr> idx = as_exprs(i);
      Expr v = x(idx);
      Expr sl = c.opset < 7 && sd.empty() ? s(std::vector<Expr>(static_cast<size_t>(s.rank()), loop::int_imm(0)))
                                          : read_reshaped(s, sd, idx);
      if (v.type().is_float()) {
        Expr w = up(v);
        return cast_to(select(w < 0, w * up(sl), w), out.dtype);
      }
      if (!is_signed(v.type().dtype)) return v;
      return select(v < 0, v * sl, v);
    }, c.stage_name(""), te::OpClass::Elementwise)};
  });

  // Clip: bounds from attributes before opset 11, from scalar inputs after.
  r.set_expr("Clip", "", [](ExprContext& c) {
    const te::Tensor& x = c.in(0);
    TESSERA_CHECK(c.opset >= 11 || is_float(x.dtype()), c.node.describe(), ": Clip before opset 11 needs a float input");
    auto scalar = [&](int i) {
      const te::Tensor& b = c.in(i);
      TESSERA_CHECK(b.dtype() == x.dtype() && numel_of(b.shape()) == 1, c.node.describe(), ": ",
                    i == 1 ? "min" : "max", " must be a scalar of the input's type");
      return b(std::vector<Expr>(static_cast<size_t>(b.rank()), loop::int_imm(0)));
    };
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) {
      Expr v = up(a[0]), lo, hi;
      if (c.opset < 11) {
        if (c.node.has_attr("min")) lo = k(v, op_attrs(c).f("min"));
        if (c.node.has_attr("max")) hi = k(v, op_attrs(c).f("max"));
      } else {
        if (c.has_input(1)) lo = up(scalar(1));
        if (c.has_input(2)) hi = up(scalar(2));
      }
      if (lo.defined()) v = select(v < lo, lo, v);
      if (hi.defined()) v = select(v > hi, hi, v);  // min > max: everything becomes max
      return v;
    }, false, 1)};
  });
}

}  // namespace

void register_math_exprs(ExprRegistry& r) {
  register_unary(r);
  register_activations(r);
}

}  // namespace tessera::ops::ewx
