// Simplifier expression rules. Each rule takes simplified operands and returns
// a simplified result, recursing through the rule functions for the new terms.
#include "loop/simplify.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "loop/scalar_ops.h"
#include "loop/simplifier.h"

namespace tessera::loop {

bool is_index_like(Type t) { return t.dtype == DType::I64 || t.dtype == DType::I32; }

namespace {

const int64_t* ci(const Expr& e) { return as_const_int(e); }
const double* cf(const Expr& e) { return as_const_float(e); }
Expr kint(Type t, int64_t v) { return make_int_const(t, v); }

// A ramp, or a broadcast when the stride is 0.
Expr ramp_of(const Expr& base, const Expr& stride, int lanes) {
  return is_const_int(stride, 0) ? broadcast(base, lanes) : ramp(base, stride, lanes);
}

// True when e is structurally a multiple of c (c != 0).
bool known_multiple(const Expr& e, int64_t c) {
  if (const int64_t* v = ci(e)) return floor_mod(*v, c) == 0;
  if (auto* b = e.as<BinaryNode>()) {
    if (b->kind == ExprKind::Mul) return known_multiple(b->a, c) || known_multiple(b->b, c);
    if (b->kind == ExprKind::Add || b->kind == ExprKind::Sub) return known_multiple(b->a, c) && known_multiple(b->b, c);
  }
  if (auto* r = e.as<RampNode>()) return known_multiple(r->base, c) && known_multiple(r->stride, c);
  if (auto* b = e.as<BroadcastNode>()) return known_multiple(b->value, c);
  return false;
}

// The largest m (> 0) that e is structurally known to be a multiple of.
int64_t known_factor(const Expr& e) {
  if (const int64_t* v = ci(e)) return *v == 0 ? (int64_t{1} << 62) : (*v < 0 ? -*v : *v);
  if (auto* b = e.as<BinaryNode>()) {
    if (b->kind == ExprKind::Mul) {
      int64_t fa = known_factor(b->a), fb = known_factor(b->b), r;
      return __builtin_mul_overflow(fa, fb, &r) ? std::max(fa, fb) : r;
    }
    if (b->kind == ExprKind::Add || b->kind == ExprKind::Sub) return std::gcd(known_factor(b->a), known_factor(b->b));
  }
  return 1;
}

const BinaryNode* as_kind(const Expr& e, ExprKind k) {
  auto* b = e.as<BinaryNode>();
  return b && b->kind == k ? b : nullptr;
}

ExprKind inverse(ExprKind k) {
  switch (k) {
    case ExprKind::EQ: return ExprKind::NE;
    case ExprKind::NE: return ExprKind::EQ;
    case ExprKind::LT: return ExprKind::GE;
    case ExprKind::LE: return ExprKind::GT;
    case ExprKind::GT: return ExprKind::LE;
    default: return ExprKind::LT;  // GE
  }
}

// Decides a comparison of a - b against 0 from the range of a - b.
std::optional<bool> decide(ExprKind k, const Interval& d) {
  switch (k) {
    case ExprKind::EQ: if (d.is_single() && d.min == 0) return true; if (d.min > 0 || d.max < 0) return false; break;
    case ExprKind::NE: if (d.is_single() && d.min == 0) return false; if (d.min > 0 || d.max < 0) return true; break;
    case ExprKind::LT: if (d.max < 0) return true; if (d.min >= 0) return false; break;
    case ExprKind::LE: if (d.max <= 0) return true; if (d.min > 0) return false; break;
    case ExprKind::GT: if (d.min > 0) return true; if (d.max <= 0) return false; break;
    case ExprKind::GE: if (d.min >= 0) return true; if (d.max < 0) return false; break;
    default: break;
  }
  return std::nullopt;
}

// Range of a - b from separate ranges (saturating; exact enough for proofs).
Interval difference(const Interval& a, const Interval& b) {
  auto sub = [](int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_sub_overflow(x, y, &r)) return y < 0 ? Interval::kPosInf : Interval::kNegInf;
    return r;
  };
  Interval d{sub(a.min, b.max), sub(a.max, b.min)};
  if (!a.has_min() || !b.has_max()) d.min = Interval::kNegInf;
  if (!a.has_max() || !b.has_min()) d.max = Interval::kPosInf;
  return d;
}

// x/c*c + x%c -> x and (x/c)%k*c + x%c -> x%(c*k) for constants c, k > 0
// (floor division: exact for every x); null when a + b has neither form.
Expr recombine_div_mod(const Expr& a, const Expr& b) {
  auto* m = as_kind(b, ExprKind::Mod);
  auto* scaled = as_kind(a, ExprKind::Mul);
  if (!m || !scaled || !ci(m->b) || *ci(m->b) <= 0 || !ci(scaled->b) || *ci(scaled->b) != *ci(m->b)) return Expr();
  const int64_t c = *ci(m->b);
  const Expr& x = m->a;
  if (auto* d = as_kind(scaled->a, ExprKind::Div); d && ci(d->b) && *ci(d->b) == c && equal(d->a, x)) return x;
  auto* outer = as_kind(scaled->a, ExprKind::Mod);
  if (!outer || !ci(outer->b) || *ci(outer->b) <= 0) return Expr();
  auto* d = as_kind(outer->a, ExprKind::Div);
  int64_t ck;
  if (!d || !ci(d->b) || *ci(d->b) != c || !equal(d->a, x) || __builtin_mul_overflow(c, *ci(outer->b), &ck)) return Expr();
  return binary(ExprKind::Mod, x, make_int_const(x.type(), ck));
}

}  // namespace

Expr Simplifier::binary_of(ExprKind k, const Expr& a, const Expr& b) {
  switch (k) {
    case ExprKind::Add: return add(a, b);
    case ExprKind::Sub: return sub(a, b);
    case ExprKind::Mul: return mul(a, b);
    case ExprKind::Div: return div(a, b);
    case ExprKind::Mod: return mod(a, b);
    case ExprKind::Min: case ExprKind::Max: return min_max(k, a, b);
    case ExprKind::And: case ExprKind::Or: return logic(k, a, b);
    default: return compare(k, a, b);
  }
}

// Broadcast op Broadcast -> Broadcast(op); null when the rule does not apply.
static const BroadcastNode* both_broadcast(const Expr& a, const Expr& b) {
  auto *x = a.as<BroadcastNode>(), *y = b.as<BroadcastNode>();
  return x && y ? x : nullptr;
}

Expr Simplifier::add(const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(add(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
  auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
  if (ra && rb) return ramp_of(add(ra->base, rb->base), add(ra->stride, rb->stride), t.lanes);
  if (ra && bb) return ramp_of(add(ra->base, bb->value), ra->stride, t.lanes);
  if (ba && rb) return ramp_of(add(ba->value, rb->base), rb->stride, t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(ExprKind::Add, t.dtype, *x, *y));
    if (x && !y) return add(b, a);
    if (y && *y == 0 && std::signbit(*y)) return a;  // x + -0.0 == x exactly
    return binary(ExprKind::Add, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(ExprKind::Add, t.dtype, *x, *y));
  if (x) return add(b, a);
  if (y && *y == 0) return a;
  if (auto* s = as_kind(a, ExprKind::Sub); s && equal(s->b, b)) return s->a;   // (x - y) + y
  if (auto* s = as_kind(b, ExprKind::Sub); s && equal(s->b, a)) return s->a;   // y + (x - y)
  if (auto* p = as_kind(a, ExprKind::Add); p && ci(p->b)) {                   // (x + c1) + y
    if (y) return add(p->a, kint(t, int_binary(ExprKind::Add, t.dtype, *ci(p->b), *y)));
    return add(add(p->a, b), p->b);
  }
  if (auto* p = as_kind(b, ExprKind::Add); p && ci(p->b)) return add(add(a, p->a), p->b);  // x + (y + c)
  auto *ma = as_kind(a, ExprKind::Mul), *mb = as_kind(b, ExprKind::Mul);
  if (ma && mb && ci(ma->b) && ci(mb->b) && equal(ma->a, mb->a))  // x*c1 + x*c2
    return mul(ma->a, kint(t, int_binary(ExprKind::Add, t.dtype, *ci(ma->b), *ci(mb->b))));
  if (is_index_like(t)) {
    if (Expr r = recombine_div_mod(a, b); r.defined()) return mutate(r);
    if (Expr r = recombine_div_mod(b, a); r.defined()) return mutate(r);
    if (auto* p = as_kind(a, ExprKind::Add))  // (y + x/c*c) + x%c
      for (const auto& [keep, other] : {std::pair{p->a, p->b}, std::pair{p->b, p->a}}) {
        Expr r = recombine_div_mod(other, b);
        if (!r.defined()) r = recombine_div_mod(b, other);
        if (r.defined()) return add(keep, mutate(r));
      }
  }
  return binary(ExprKind::Add, a, b);
}

Expr Simplifier::sub(const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(sub(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
  auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
  if (ra && rb) return ramp_of(sub(ra->base, rb->base), sub(ra->stride, rb->stride), t.lanes);
  if (ra && bb) return ramp_of(sub(ra->base, bb->value), ra->stride, t.lanes);
  if (ba && rb) return ramp_of(sub(ba->value, rb->base), sub(make_zero(t.element()), rb->stride), t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(ExprKind::Sub, t.dtype, *x, *y));
    if (y && *y == 0 && !std::signbit(*y)) return a;  // x - +0.0 == x exactly
    return binary(ExprKind::Sub, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(ExprKind::Sub, t.dtype, *x, *y));
  if (y) return add(a, kint(t, int_binary(ExprKind::Sub, t.dtype, 0, *y)));  // x - c -> x + -c
  if (equal(a, b)) return make_zero(t);
  if (auto* p = as_kind(a, ExprKind::Add)) {
    if (equal(p->a, b)) return p->b;                      // (x + y) - x
    if (equal(p->b, b)) return p->a;                      // (x + y) - y
    if (ci(p->b)) return add(sub(p->a, b), p->b);         // (x + c) - y
  }
  if (auto* p = as_kind(b, ExprKind::Add)) {
    if (equal(p->a, a)) return sub(make_zero(t), p->b);   // x - (x + y)
    if (equal(p->b, a)) return sub(make_zero(t), p->a);   // y - (x + y)
    if (const int64_t* c = ci(p->b))                      // x - (y + c)
      return add(sub(a, p->a), kint(t, int_binary(ExprKind::Sub, t.dtype, 0, *c)));
  }
  auto *ma = as_kind(a, ExprKind::Mul), *mb = as_kind(b, ExprKind::Mul);
  if (ma && mb && ci(ma->b) && ci(mb->b) && equal(ma->a, mb->a))  // x*c1 - x*c2
    return mul(ma->a, kint(t, int_binary(ExprKind::Sub, t.dtype, *ci(ma->b), *ci(mb->b))));
  return binary(ExprKind::Sub, a, b);
}

Expr Simplifier::mul(const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(mul(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
  auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
  if (ra && bb) return ramp_of(mul(ra->base, bb->value), mul(ra->stride, bb->value), t.lanes);
  if (ba && rb) return ramp_of(mul(ba->value, rb->base), mul(ba->value, rb->stride), t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(ExprKind::Mul, t.dtype, *x, *y));
    if (x && !y) return mul(b, a);
    if (y && *y == 1) return a;
    return binary(ExprKind::Mul, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(ExprKind::Mul, t.dtype, *x, *y));
  if (x) return mul(b, a);
  if (y && *y == 0) return make_zero(t);
  if (y && *y == 1) return a;
  if (auto* p = as_kind(a, ExprKind::Mul); p && ci(p->b)) {             // (x*c1)*y
    if (y) return mul(p->a, kint(t, int_binary(ExprKind::Mul, t.dtype, *ci(p->b), *y)));
    return mul(mul(p->a, b), p->b);
  }
  if (auto* p = as_kind(a, ExprKind::Add); p && y && ci(p->b))          // (x + c1)*c2
    return add(mul(p->a, b), kint(t, int_binary(ExprKind::Mul, t.dtype, *ci(p->b), *y)));
  if (auto* p = as_kind(b, ExprKind::Mul); p && ci(p->b)) return mul(mul(a, p->a), p->b);  // x*(y*c)
  return binary(ExprKind::Mul, a, b);
}

Expr Simplifier::div(const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(div(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(ExprKind::Div, t.dtype, *x, *y));
    if (y && *y == 1) return a;
    return binary(ExprKind::Div, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(ExprKind::Div, t.dtype, *x, *y));
  if (y && *y == 1) return a;
  if (x && *x == 0) return a;  // 0 / y == 0, also for y == 0
  if (!y || *y == 0 || !is_index_like(t)) return binary(ExprKind::Div, a, b);
  const int64_t c = *y;
  if (auto* r = a.as<RampNode>()) {
    const int64_t* s = ci(r->stride);
    if (s && floor_mod(*s, c) == 0)  // ramp(x, k*c) / c == ramp(x / c, k)
      return ramp_of(div(r->base, b.as<BroadcastNode>()->value), kint(t.element(), *s / c), t.lanes);
    // The lanes stay inside one block of m | c that the base starts: all
    // divide to the base's quotient.
    if (s && c > 0 && *s >= 0 && *s * (r->lanes - 1) < std::gcd(known_factor(r->base), c))
      return broadcast(div(r->base, b.as<BroadcastNode>()->value), t.lanes);
  }
  if (auto* m = as_kind(a, ExprKind::Mul); m && ci(m->b) && floor_mod(*ci(m->b), c) == 0)  // (x*k*c)/c
    return mul(m->a, kint(t, *ci(m->b) / c));
  if (auto* p = as_kind(a, ExprKind::Add)) {
    if (known_multiple(p->a, c) || known_multiple(p->b, c))  // (m*c + y)/c == m + y/c
      return add(div(p->a, b), div(p->b, b));
    if (const int64_t* k = ci(p->b); k && c > 0 && floor_mod(*k, c) != *k)  // (x + k)/c
      return add(div(add(p->a, kint(t, floor_mod(*k, c))), b), kint(t, floor_div(*k, c)));
  }
  if (auto* d = as_kind(a, ExprKind::Div); d && ci(d->b) && *ci(d->b) > 0 && c > 0) {  // (x/c1)/c2
    int64_t prod;
    if (!__builtin_mul_overflow(*ci(d->b), c, &prod)) return div(d->a, kint(t, prod));
  }
  Interval ia = bounds(a);
  if (ia.has_min() && ia.has_max() && floor_div(ia.min, c) == floor_div(ia.max, c))
    return kint(t, floor_div(ia.min, c));
  return binary(ExprKind::Div, a, b);
}

Expr Simplifier::mod(const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(mod(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(ExprKind::Mod, t.dtype, *x, *y));
    return binary(ExprKind::Mod, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(ExprKind::Mod, t.dtype, *x, *y));
  if (y && (*y == 1 || (*y == -1 && t.dtype != DType::U64))) return make_zero(t);
  if (x && *x == 0) return a;
  if (!y || *y == 0 || !is_index_like(t)) return binary(ExprKind::Mod, a, b);
  const int64_t c = *y;
  if (known_multiple(a, c)) return make_zero(t);
  if (auto* r = a.as<RampNode>()) {
    const int64_t* s = ci(r->stride);
    if (s && c > 0 && *s >= 0 && *s * (r->lanes - 1) < std::gcd(known_factor(r->base), c))  // no wrap inside
      return ramp_of(mod(r->base, b.as<BroadcastNode>()->value), r->stride, t.lanes);
  }
  if (auto* p = as_kind(a, ExprKind::Add)) {
    if (known_multiple(p->a, c)) return mod(p->b, b);  // (m*c + y) % c
    if (known_multiple(p->b, c)) return mod(p->a, b);
    if (const int64_t* k = ci(p->b); k && floor_mod(*k, c) != *k)
      return mod(add(p->a, kint(t, floor_mod(*k, c))), b);
  }
  if (auto* m = as_kind(a, ExprKind::Mod); m && ci(m->b) && *ci(m->b) != 0 && floor_mod(*ci(m->b), c) == 0)  // (x % kc) % c
    return mod(m->a, b);
  Interval ia = bounds(a);
  if (c > 0 && ia.min >= 0 && ia.max < c) return a;
  return binary(ExprKind::Mod, a, b);
}

Expr Simplifier::min_max(ExprKind k, const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b))
    return broadcast(min_max(k, a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  if (equal(a, b)) return a;
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return make_const(t, float_arith(k, t.dtype, *x, *y));
    return binary(k, a, b);  // not commutative with NaN: keep the order
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return kint(t, int_binary(k, t.dtype, *x, *y));
  if (x) return min_max(k, b, a);
  const bool is_min = k == ExprKind::Min;
  if (auto le = prove(ExprKind::LE, a, b)) return *le == is_min ? a : b;
  if (prove(ExprKind::GE, a, b).value_or(false)) return is_min ? b : a;
  if (auto* inner = as_kind(a, k); inner && y && ci(inner->b))  // min(min(x, c1), c2)
    return min_max(k, inner->a, kint(t, int_binary(k, t.dtype, *ci(inner->b), *y)));
  return binary(k, a, b);
}

std::optional<bool> Simplifier::prove(ExprKind k, const Expr& a, const Expr& b) {
  Type t = a.type();
  if (!(t.is_int() || t.is_bool()) || t.dtype == DType::U64) return std::nullopt;
  if (equal(a, b)) return k == ExprKind::EQ || k == ExprKind::LE || k == ExprKind::GE;
  if (auto r = decide(k, difference(bounds(a), bounds(b)))) return r;
  if (!is_index_like(t)) return std::nullopt;
  return decide(k, bounds(sub(a, b)));  // catches correlated terms: x < x + 1
}

Expr Simplifier::compare(ExprKind k, const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b))
    return broadcast(compare(k, a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  if (t.is_float()) {
    const double *x = cf(a), *y = cf(b);
    if (x && y) return bool_imm(float_compare(k, *x, *y), t.lanes);
    return binary(k, a, b);
  }
  const int64_t *x = ci(a), *y = ci(b);
  if (x && y) return bool_imm(int_binary(k, t.dtype, *x, *y) != 0, t.lanes);
  if (auto r = prove(k, a, b)) return bool_imm(*r, t.lanes);
  if (x && (k == ExprKind::EQ || k == ExprKind::NE)) return binary(k, b, a);  // constant on the right
  return binary(k, a, b);
}

Expr Simplifier::logic(ExprKind k, const Expr& a, const Expr& b) {
  Type t = a.type();
  if (both_broadcast(a, b)) return broadcast(logic(k, a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value), t.lanes);
  const bool is_and = k == ExprKind::And;
  const int64_t *x = ci(a), *y = ci(b);
  // true && b == b, false && b == false; dually for ||.
  if (x) return (*x != 0) == is_and ? b : a;
  if (y) return (*y != 0) == is_and ? a : b;
  if (equal(a, b)) return a;
  return binary(k, a, b);
}

Expr Simplifier::negate(const Expr& a) {
  if (const int64_t* x = ci(a)) return bool_imm(*x == 0, a.type().lanes);
  if (auto* b = a.as<BroadcastNode>()) return broadcast(negate(b->value), b->lanes);
  if (auto* n = a.as<NotNode>()) return n->a;
  if (auto* c = a.as<BinaryNode>(); c && is_comparison(c->kind) && !c->a.type().is_float())
    return compare(inverse(c->kind), c->a, c->b);  // (floats: NaN breaks !(a < b) == a >= b)
  return logical_not(a);
}

Expr Simplifier::select_of(const Expr& c, const Expr& t, const Expr& f) {
  if (const int64_t* x = ci(c)) return *x ? t : f;
  if (equal(t, f)) return t;
  if (auto* n = c.as<NotNode>()) return select_of(n->a, f, t);
  auto *bc = c.as<BroadcastNode>(), *bt = t.as<BroadcastNode>(), *bf = f.as<BroadcastNode>();
  if (bc && bt && bf) return broadcast(select_of(bc->value, bt->value, bf->value), bc->lanes);
  return select(c, t, f);
}

Expr Simplifier::cast_to(Type t, const Expr& v) {
  Type from = v.type();
  if (t == from) return v;
  if (auto* b = v.as<BroadcastNode>()) return broadcast(cast_to(t.element(), b->value), t.lanes);
  if (const int64_t* x = ci(v)) {
    if (t.is_float()) return make_const(t, cast_to_float(t.dtype, from.dtype, *x));
    return kint(t, cast_int_to_int(t.dtype, from.dtype, *x));
  }
  if (const double* x = cf(v)) {
    if (t.is_float()) return make_const(t, round_float(t.dtype, *x));
    return kint(t, cast_to_int(t.dtype, *x));
  }
  if (auto* inner = v.as<CastNode>(); inner && inner->value.type() == t && t.is_int() && from.is_int()) {
    Interval r = bounds(inner->value), fits = type_range(from);  // i64(i32(x)) == x when x fits in i32
    if (from.dtype != DType::U64 && t.dtype != DType::U64 && r.min >= fits.min && r.max <= fits.max)
      return inner->value;
  }
  return cast(t, v);
}

// --- expression visitors --------------------------------------------------------

Expr Simplifier::visit(const CastNode* op, const Expr& e) { return cast_to(op->type, mutate(op->value)); }

Expr Simplifier::visit(const BinaryNode* op, const Expr& e) {
  return binary_of(op->kind, mutate(op->a), mutate(op->b));
}

Expr Simplifier::visit(const NotNode* op, const Expr& e) { return negate(mutate(op->a)); }

Expr Simplifier::visit(const SelectNode* op, const Expr& e) {
  return select_of(mutate(op->cond), mutate(op->true_value), mutate(op->false_value));
}

Expr Simplifier::visit(const LoadNode* op, const Expr& e) {
  Expr index = mutate(op->index), pred = mutate(op->predicate);
  if (pred.defined()) {
    if (const int64_t* p = ci(pred)) {
      if (*p == 0) return make_zero(op->type);  // masked-off lanes read 0
      pred = Expr();
    }
  }
  if (index.same_as(op->index) && pred.same_as(op->predicate)) return e;
  return load(op->buffer, index, pred);
}

Expr Simplifier::visit(const RampNode* op, const Expr& e) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  if (is_const_int(stride, 0)) return broadcast(base, op->lanes);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return e;
  return ramp_of(base, stride, op->lanes);
}

Expr Simplifier::visit(const BroadcastNode* op, const Expr& e) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? e : broadcast(v, op->lanes);
}

Expr Simplifier::visit(const CallNode* op, const Expr& e) {
  std::vector<Expr> args;
  std::vector<double> values;
  for (const Expr& a : op->args) {
    args.push_back(mutate(a));
    if (const double* v = cf(args.back())) values.push_back(*v);
  }
  if (math_arity(op->name) >= 0 && op->type.is_float() && values.size() == args.size())
    return make_const(op->type, call_math(op->name, op->type.dtype, values));
  return call(op->type, op->name, std::move(args));
}

Expr Simplifier::visit(const LetNode* op, const Expr& e) {
  Expr value = mutate(op->value);
  if (is_const(value) || value.as<VarNode>()) return mutate(substitute(op->body, op->var, value));
  Expr body;
  {
    ScopedBound scope(bounds_, op->var.node(), bounds(value));
    body = mutate(op->body);
  }
  if (!uses_var(body, op->var)) return body;
  return let(op->var, value, body);
}

// --- entry points ---------------------------------------------------------------

Expr simplify(const Expr& e, const VarBounds& vars) {
  Simplifier s(vars);
  return s.mutate(e);
}

Stmt simplify(const Stmt& st, const VarBounds& vars) {
  Simplifier s(vars);
  return s.mutate(st);
}

Kernel simplify(const Kernel& k) {
  Kernel r = k;
  r.body = simplify(k.body);
  return r;
}

}  // namespace tessera::loop
