// Tensor-expression definitions of the elementwise family: shared helpers and
// the registration entry point (the ops themselves live in
// expr_elementwise_math.cpp, _binary.cpp and _convert.cpp).
#include "opexpr/expr_elementwise.h"

#include "ops/elementwise_common.h"

namespace tessera::ops {

namespace ewx {

using loop::Type;

DType work_float(DType d) { return d == DType::F16 || d == DType::BF16 ? DType::F32 : d; }

Expr up(const Expr& e) { return e.type().is_float() ? cast_to(e, work_float(e.type().dtype)) : e; }

Expr k(const Expr& e, double v) { return loop::make_const(e.type().element(), v); }

Expr read_reshaped(const te::Tensor& t, const Dims& as, const std::vector<Expr>& idx) {
  if (as == t.shape()) return broadcast_read(t, idx);
  const int ra = static_cast<int>(as.size()), ro = static_cast<int>(idx.size());
  TESSERA_CHECK(ra <= ro, "read_reshaped: ", t.name(), " viewed as [", dims_to_string(as),
                "] has a higher rank than the output");
  Expr flat = loop::int_imm(0);
  int64_t stride = 1;
  for (int d = ra - 1; d >= 0; --d) {
    if (as[static_cast<size_t>(d)] != 1) flat = flat + idx[static_cast<size_t>(ro - ra + d)] * stride;
    stride *= as[static_cast<size_t>(d)];
  }
  std::vector<Expr> ti(static_cast<size_t>(t.rank()));
  stride = 1;
  for (int d = t.rank() - 1; d >= 0; --d) {
    ti[static_cast<size_t>(d)] = t.dim(d) == 1 ? loop::int_imm(0) : (flat / stride) % t.dim(d);
    stride *= t.dim(d);
  }
  return t(std::move(ti));
}

Expr read_legacy_b(ExprContext& c, const std::vector<Expr>& idx) {
  const te::Tensor& b = c.in(1);
  Dims as = ew::legacy_broadcast_b_dims(op_attrs(c), c.in(0).shape(), b.shape());
  return read_reshaped(b, as, idx);
}

te::Tensor ew(ExprContext& c, const Fn& f, bool legacy, int n_read) {
  const TensorType& out = c.out(0);
  const bool old = legacy && c.opset < 7 && c.num_inputs() == 2;
  return te::compute(out.dims, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i), args;
    for (int n = 0; n < c.num_inputs(); ++n) {
      if (!c.has_input(n) || (n_read >= 0 && n >= n_read)) args.emplace_back();
      else if (old && n == 1) args.push_back(read_legacy_b(c, idx));
      else args.push_back(broadcast_read(c.in(n), idx));
    }
    return cast_to(f(args), out.dtype);
  }, c.stage_name(""), te::OpClass::Elementwise);
}

ExprFn ew_fn(Fn f, bool legacy) {
  return [f = std::move(f), legacy](ExprContext& c) { return std::vector<te::Tensor>{ew(c, f, legacy)}; };
}

ExprFn float_unary(std::function<Expr(const Expr&)> f) {
  return ew_fn([f = std::move(f)](const Args& a) { return f(up(a[0])); });
}

int int_bits(DType d) { return d == DType::Bool ? 8 : static_cast<int>(dtype_size(d)) * 8; }

DType unsigned_of(DType d) {
  switch (int_bits(d)) {
    case 8: return DType::U8;
    case 16: return DType::U16;
    case 32: return DType::U32;
    default: return DType::U64;
  }
}

Expr pow2(const Expr& s) {
  const Type t = s.type().element();
  const int bits = int_bits(t.dtype);
  Expr r = loop::make_one(t);
  for (int j = 0; (1 << j) < bits; ++j) {
    Expr bit = eq((s / loop::make_int_const(t, int64_t{1} << j)) % loop::make_int_const(t, 2), 1);
    r = r * loop::select(bit, loop::make_int_const(t, int64_t{1} << (1 << j)), loop::make_one(t));
  }
  return r;
}

Expr bitwise(BitOp op, const Expr& a, const Expr& b) {
  const Type t = a.type().element();
  const Type u{unsigned_of(t.dtype), 1};
  const int bits = int_bits(t.dtype);
  loop::Var va("bw_a", u), vb("bw_b", u);
  Expr r = loop::make_zero(u);
  for (int j = 0; j < bits; ++j) {
    Expr p = loop::make_int_const(u, static_cast<int64_t>(uint64_t{1} << j));
    Expr x = (Expr(va) / p) % 2, y = (Expr(vb) / p) % 2;
    Expr bit = op == BitOp::And ? x * y : op == BitOp::Or ? x + y - x * y : (x + y) % 2;
    r = r + bit * p;
  }
  return cast_to(loop::let(va, cast_to(a, u.dtype), loop::let(vb, cast_to(b, u.dtype), r)), t.dtype);
}

Expr trunc_div(const Expr& a, const Expr& b) {
  if (!is_signed(a.type().dtype)) return a / b;
  Expr q = a / b, r = a % b;
  return loop::select(ne(r, 0) && ne(a < 0, b < 0), q + 1, q);
}

Expr trunc_mod(const Expr& a, const Expr& b) {
  if (!is_signed(a.type().dtype)) return a % b;
  Expr m = a % b;
  return loop::select(ne(m, 0) && ne(a < 0, b < 0), m - b, m);
}

}  // namespace ewx

void register_elementwise_exprs(ExprRegistry& r) {
  ewx::register_math_exprs(r);
  ewx::register_binary_exprs(r);
  ewx::register_convert_exprs(r);
}

}  // namespace tessera::ops
