// Tensor expressions of binary arithmetic (elementwise_binary.cpp),
// comparisons / logic / bitwise ops / Where (elementwise_logic.cpp) and the
// variadic ops (elementwise_variadic.cpp). Integer arithmetic wraps like the
// reference; integer Div and Mod(fmod=1) truncate toward zero. Ops that had
// legacy broadcasting before opset 7 read B through read_legacy_b there.
#include "opexpr/expr_elementwise.h"
#include "ops/op_attrs.h"

namespace tessera::ops::ewx {

namespace {

using loop::select;
using loop::Type;
using loop::Var;

bool is_f32_like(DType d) { return d == DType::F16 || d == DType::BF16 || d == DType::F32; }

// Integer power with wrap-around (the reference's int_pow): square and
// multiply over the exponent's bits; negative exponents truncate 1/b^e.
Expr int_pow(const Expr& base_in, const Expr& e_in) {
  const Type t = base_in.type().element(), et = e_in.type().element();
  const bool signed_e = is_signed(et.dtype);
  const int steps = int_bits(et.dtype) - (signed_e ? 1 : 0);
  Var vb("pow_b", t), ve("pow_e", et);
  Expr base = vb, e = ve;
  std::vector<std::pair<Var, Expr>> lets;
  Var b("pow_b0", t), r("pow_r0", t);
  lets.emplace_back(b, base);
  lets.emplace_back(r, loop::make_one(t));
  for (int j = 0; j < steps; ++j) {
    Expr bit = eq((e / loop::make_int_const(et, static_cast<int64_t>(uint64_t{1} << j))) % 2, 1);
    Var r2("pow_r" + std::to_string(j + 1), t);
    lets.emplace_back(r2, select(bit, Expr(r) * Expr(b), Expr(r)));
    r = r2;
    if (j + 1 < steps) {
      Var b2("pow_b" + std::to_string(j + 1), t);
      lets.emplace_back(b2, Expr(b) * Expr(b));
      b = b2;
    }
  }
  Expr body = r;
  if (signed_e) {
    Expr neg = select(eq(base, 1), k(base, 1), k(base, 0));
    if (is_signed(t.dtype)) neg = select(eq(base, -1), select(eq(e % 2, 0), k(base, 1), k(base, -1)), neg);
    body = select(e < 0, neg, body);
  }
  for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = loop::let(it->first, it->second, body);
  return loop::let(vb, base_in, loop::let(ve, e_in, body));
}

Expr pow_expr(const Expr& x, const Expr& e) {
  DType tx = x.type().dtype, te_ = e.type().dtype;
  if (!x.type().is_float() && !e.type().is_float()) return int_pow(x, e);
  // Float math in double as the reference unless both fit f32 exactly.
  bool f32 = is_f32_like(tx) && (is_f32_like(te_) || (!is_float(te_) && int_bits(te_) <= 16));
  DType w = f32 ? DType::F32 : DType::F64;
  return loop::call("pow", {cast_to(x, w), cast_to(e, w)});
}

Expr mod_expr(const Expr& a, const Expr& b, bool fmod) {
  if (a.type().is_float()) {
    Expr x = up(a), y = up(b);
    Expr m = loop::call("fmod", {x, y});
    if (fmod) return m;
    return select(ne(m, 0.0) && ne(m < 0.0, y < 0.0), m + y, m);  // the divisor's sign
  }
  return fmod ? trunc_mod(a, b) : a % b;  // loop IR Mod is floor modulo
}

// Max/Min of the variadic ops: NaN wins (first NaN), else a < b ? b : a.
Expr nan_max(const Expr& a, const Expr& b, bool is_max) {
  Expr pick = is_max ? select(a < b, b, a) : select(b < a, b, a);
  if (!a.type().is_float()) return pick;
  return select(ne(a, a), a, select(ne(b, b), b, pick));
}

ExprFn variadic(int kind) {  // 0 Sum, 1 Mean, 2 Max, 3 Min
  return ew_fn([kind](const Args& a) {
    Lets l;
    Expr acc = up(a[0]);
    for (size_t i = 1; i < a.size(); ++i) {
      if (kind <= 1) {
        acc = acc + up(a[i]);
      } else {
        Expr x = l.bind("vm_a", acc), v = l.bind("vm_b", up(a[i]));
        acc = nan_max(x, v, kind == 2);
      }
    }
    if (kind == 1) acc = acc / static_cast<double>(a.size());
    return l.wrap(acc);
  });
}

}  // namespace

void register_binary_exprs(ExprRegistry& r) {
  const bool legacy = true;
  r.set_expr("Add", "", ew_fn([](const Args& a) { return up(a[0]) + up(a[1]); }, legacy));
  r.set_expr("Sub", "", ew_fn([](const Args& a) { return up(a[0]) - up(a[1]); }, legacy));
  r.set_expr("Mul", "", ew_fn([](const Args& a) { return up(a[0]) * up(a[1]); }, legacy));
  r.set_expr("Div", "", ew_fn([](const Args& a) {
    return a[0].type().is_float() ? up(a[0]) / up(a[1]) : trunc_div(a[0], a[1]);
  }, legacy));
  r.set_expr("Mod", "", [](ExprContext& c) {
    int64_t fmod = op_attrs(c).i("fmod");
    TESSERA_CHECK(fmod == 0 || fmod == 1, c.node.describe(), ": fmod must be 0 or 1, got ", fmod);
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) { return mod_expr(a[0], a[1], fmod == 1); })};
  });
  r.set_expr("Pow", "", ew_fn([](const Args& a) { return pow_expr(a[0], a[1]); }, legacy));
  r.set_expr("BitShift", "", [](ExprContext& c) {
    std::string dir = op_attrs(c).s("direction");
    TESSERA_CHECK(dir == "LEFT" || dir == "RIGHT", c.node.describe(), ": direction must be LEFT or RIGHT, got '",
                  dir, "'");
    bool left = dir == "LEFT";
    return std::vector<te::Tensor>{ew(c, [&](const Args& a) {
      const Expr &v = a[0], &s = a[1];
      Expr p = pow2(s);
      return select(s >= int_bits(v.type().dtype), k(v, 0), left ? v * p : v / p);
    })};
  });

  r.set_expr("Equal", "", [](ExprContext& c) {
    for (int i = 0; i < 2; ++i)
      TESSERA_CHECK(c.in(i).dtype() != DType::String, c.node.describe(),
                    ": comparing string tensors has no compiled kernel");
    return std::vector<te::Tensor>{ew(c, [](const Args& a) { return eq(a[0], a[1]); }, true)};
  });
  r.set_expr("Less", "", ew_fn([](const Args& a) { return a[0] < a[1]; }, legacy));
  r.set_expr("Greater", "", ew_fn([](const Args& a) { return a[0] > a[1]; }, legacy));
  r.set_expr("LessOrEqual", "", ew_fn([](const Args& a) { return a[0] <= a[1]; }));
  r.set_expr("GreaterOrEqual", "", ew_fn([](const Args& a) { return a[0] >= a[1]; }));
  r.set_expr("And", "", ew_fn([](const Args& a) { return a[0] && a[1]; }, legacy));
  r.set_expr("Or", "", ew_fn([](const Args& a) { return a[0] || a[1]; }, legacy));
  r.set_expr("Xor", "", ew_fn([](const Args& a) { return ne(a[0], a[1]); }, legacy));
  r.set_expr("BitwiseAnd", "", ew_fn([](const Args& a) { return bitwise(BitOp::And, a[0], a[1]); }));
  r.set_expr("BitwiseOr", "", ew_fn([](const Args& a) { return bitwise(BitOp::Or, a[0], a[1]); }));
  r.set_expr("BitwiseXor", "", ew_fn([](const Args& a) { return bitwise(BitOp::Xor, a[0], a[1]); }));
  r.set_expr("Where", "", ew_fn([](const Args& a) { return select(a[0], a[1], a[2]); }));

  r.set_expr("Sum", "", variadic(0));
  r.set_expr("Mean", "", variadic(1));
  r.set_expr("Max", "", variadic(2));
  r.set_expr("Min", "", variadic(3));
}

}  // namespace tessera::ops::ewx
