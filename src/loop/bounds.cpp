// Interval analysis with saturating int64 arithmetic: a saturated bound is a
// true (weaker) bound as long as the program itself does not overflow.
#include "loop/bounds.h"

#include <algorithm>

#include "loop/scalar_ops.h"

namespace tessera::loop {

namespace {

constexpr int64_t kNegInf = Interval::kNegInf;
constexpr int64_t kPosInf = Interval::kPosInf;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kPosInf : kNegInf;
  return r;
}
int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kPosInf : kNegInf;
  return r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? kNegInf : kPosInf;
  return r;
}
int64_t sat_div(int64_t a, int64_t b) {
  if (a == kNegInf && b == -1) return kPosInf;
  return floor_div(a, b);
}
int64_t sat_abs(int64_t a) { return a == kNegInf ? kPosInf : (a < 0 ? -a : a); }

Interval corners(int64_t (*f)(int64_t, int64_t), const Interval& a, const Interval& b) {
  int64_t v[4] = {f(a.min, b.min), f(a.min, b.max), f(a.max, b.min), f(a.max, b.max)};
  return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
}

// Sums and differences keep an unbounded side unbounded.
Interval add(const Interval& a, const Interval& b) {
  return {a.has_min() && b.has_min() ? sat_add(a.min, b.min) : kNegInf,
          a.has_max() && b.has_max() ? sat_add(a.max, b.max) : kPosInf};
}
Interval sub(const Interval& a, const Interval& b) {
  return {a.has_min() && b.has_max() ? sat_sub(a.min, b.max) : kNegInf,
          a.has_max() && b.has_min() ? sat_sub(a.max, b.min) : kPosInf};
}

Interval div(const Interval& a, const Interval& b) {
  if (b.min > 0 || b.max < 0) {  // monotonic on each sign of b
    Interval r = corners(sat_div, a, b);
    // An unbounded dividend stays unbounded (rather than INT64_MIN / c).
    bool pos = b.min > 0;
    if (!a.has_min()) (pos ? r.min : r.max) = pos ? kNegInf : kPosInf;
    if (!a.has_max()) (pos ? r.max : r.min) = pos ? kPosInf : kNegInf;
    return r;
  }
  // The divisor may be 0 (result 0) or +-1 (|result| up to |a|).
  int64_t m = std::max(sat_abs(a.min), sat_abs(a.max));
  return {m == kPosInf ? kNegInf : -m, m};
}

Interval mod(const Interval& a, const Interval& b) {
  if (b.min > 0) {
    Interval r{0, b.max == kPosInf ? kPosInf : b.max - 1};
    if (a.min >= 0) r.max = std::min(r.max, a.max);  // x % c never exceeds x for x >= 0
    return r;
  }
  if (b.max < 0) return {b.min == kNegInf ? kNegInf : b.min + 1, 0};
  return {b.min == kNegInf ? kNegInf : std::min<int64_t>(0, b.min + 1),
          b.max == kPosInf ? kPosInf : std::max<int64_t>(0, b.max - 1)};
}

class Bounder {
 public:
  explicit Bounder(const VarBounds& vars) : vars_(vars) {}

  Interval of(const Expr& e) {
    Type t = e.type();
    if (!(t.is_int() || t.is_bool()) || t.dtype == DType::U64) return Interval::everything();
    Interval r = compute(e);
    // Never wider than the type (bool: 0..1).
    Interval tr = type_range(t);
    return {std::max(r.min, tr.min), std::min(r.max, tr.max)};
  }

 private:
  Interval compute(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: return Interval::single(e.as<IntImmNode>()->value);
      case ExprKind::Var: {
        auto* v = e.as<VarNode>();
        if (auto it = lets_.find(v); it != lets_.end()) return it->second;
        auto it = vars_.find(v);
        return it == vars_.end() ? type_range(e.type()) : it->second;
      }
      case ExprKind::Cast: {
        const Expr& v = e.as<CastNode>()->value;
        if (v.type().is_float()) return type_range(e.type());
        Interval in = of(v);
        Interval tr = type_range(e.type());
        if (e.type().is_bool()) return in.min > 0 || in.max < 0 ? Interval::single(1) : tr;
        return in.min >= tr.min && in.max <= tr.max ? in : tr;  // wraps otherwise
      }
      case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div:
      case ExprKind::Mod: case ExprKind::Min: case ExprKind::Max: {
        // Only i32/i64 index arithmetic is assumed not to overflow; narrower
        // and unsigned types wrap as a matter of course.
        bool index_like = e.type().dtype == DType::I64 || e.type().dtype == DType::I32;
        bool minmax = e.kind() == ExprKind::Min || e.kind() == ExprKind::Max;
        if (!index_like && !minmax) return type_range(e.type());
        auto* op = e.as<BinaryNode>();
        Interval a = of(op->a), b = of(op->b);
        switch (e.kind()) {
          case ExprKind::Add: return add(a, b);
          case ExprKind::Sub: return sub(a, b);
          case ExprKind::Mul: return corners(sat_mul, a, b);
          case ExprKind::Div: return div(a, b);
          case ExprKind::Mod: return mod(a, b);
          case ExprKind::Min: return {std::min(a.min, b.min), std::min(a.max, b.max)};
          default: return {std::max(a.min, b.min), std::max(a.max, b.max)};
        }
      }
      case ExprKind::Select: {
        auto* op = e.as<SelectNode>();
        Interval c = of(op->cond);
        if (c.min == 1) return of(op->true_value);
        if (c.max == 0) return of(op->false_value);
        return interval_union(of(op->true_value), of(op->false_value));
      }
      case ExprKind::Ramp: {
        auto* op = e.as<RampNode>();
        if (e.type().dtype != DType::I64 && e.type().dtype != DType::I32) return type_range(e.type());
        Interval base = of(op->base);
        Interval span = corners(sat_mul, of(op->stride), Interval{0, op->lanes - 1});
        return add(base, span);
      }
      case ExprKind::Broadcast: return of(e.as<BroadcastNode>()->value);
      case ExprKind::Let: {
        auto* op = e.as<LetNode>();
        if (!op->value.type().is_int()) return of(op->body);
        Interval v = of(op->value);
        lets_[op->var.node()] = v;
        Interval r = of(op->body);
        lets_.erase(op->var.node());
        return r;
      }
      default:  // comparisons, logic, loads, calls
        return type_range(e.type());
    }
  }

  const VarBounds& vars_;
  VarBounds lets_;  // variables bound by a Let inside the expression
};

}  // namespace

std::string Interval::to_string() const {
  std::string lo = has_min() ? std::to_string(min) : "-inf";
  std::string hi = has_max() ? std::to_string(max) : "inf";
  return "[" + lo + ", " + hi + "]";
}

Interval interval_union(const Interval& a, const Interval& b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

Interval type_range(Type t) {
  switch (t.dtype) {
    case DType::Bool: return {0, 1};
    case DType::I8: return {-128, 127};
    case DType::I16: return {-32768, 32767};
    case DType::I32: return {-2147483648LL, 2147483647LL};
    case DType::U8: return {0, 255};
    case DType::U16: return {0, 65535};
    case DType::U32: return {0, 4294967295LL};
    default: return Interval::everything();  // i64; u64 values above 2^63 do not fit
  }
}

Interval bounds_of(const Expr& e, const VarBounds& vars) {
  if (!e.defined()) return Interval::everything();
  Bounder b(vars);
  return b.of(e);
}

}  // namespace tessera::loop
