// Scalar arithmetic semantics of the loop IR.
#include "loop/scalar_ops.h"

#include <cmath>
#include <limits>

#include "support/error.h"
#include "support/int_div.h"

namespace tessera::loop {

namespace {
bool is_u64(DType t) { return t == DType::U64; }
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
int64_t s(uint64_t v) { return static_cast<int64_t>(v); }
}  // namespace

int64_t wrap_int(DType t, int64_t v) {
  switch (t) {
    case DType::Bool: return v != 0 ? 1 : 0;
    case DType::I8: return static_cast<int8_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U32: return static_cast<uint32_t>(v);
    case DType::I64: case DType::U64: return v;
    default: TESSERA_FAIL("loop IR: ", dtype_name(t), " is not an integer type");
  }
}

double round_float(DType t, double v) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return static_cast<float>(Half(static_cast<float>(v)));
    case DType::BF16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    default: TESSERA_FAIL("loop IR: ", dtype_name(t), " is not a float type");
  }
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return s(0 - u(a));  // INT64_MIN / -1 wraps
  return tessera::floor_div(a, b);
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t int_binary(ExprKind op, DType t, int64_t a, int64_t b) {
  const bool uns = is_u64(t);
  auto less = [&](int64_t x, int64_t y) { return uns ? u(x) < u(y) : x < y; };
  int64_t r = 0;
  switch (op) {
    case ExprKind::Add: r = s(u(a) + u(b)); break;
    case ExprKind::Sub: r = s(u(a) - u(b)); break;
    case ExprKind::Mul: r = s(u(a) * u(b)); break;
    case ExprKind::Div: r = uns ? (b == 0 ? 0 : s(u(a) / u(b))) : floor_div(a, b); break;
    case ExprKind::Mod: r = uns ? (b == 0 ? 0 : s(u(a) % u(b))) : floor_mod(a, b); break;
    case ExprKind::Min: r = less(b, a) ? b : a; break;
    case ExprKind::Max: r = less(a, b) ? b : a; break;
    case ExprKind::EQ: return a == b;
    case ExprKind::NE: return a != b;
    case ExprKind::LT: return less(a, b);
    case ExprKind::LE: return !less(b, a);
    case ExprKind::GT: return less(b, a);
    case ExprKind::GE: return !less(a, b);
    case ExprKind::And: return (a != 0) && (b != 0);
    case ExprKind::Or: return (a != 0) || (b != 0);
    default: TESSERA_FAIL("loop IR: ", expr_kind_name(op), " is not an integer binary op");
  }
  return wrap_int(t, r);
}

double float_arith(ExprKind op, DType t, double a, double b) {
  double r = 0;
  switch (op) {
    case ExprKind::Add: r = a + b; break;
    case ExprKind::Sub: r = a - b; break;
    case ExprKind::Mul: r = a * b; break;
    case ExprKind::Div: r = a / b; break;
    case ExprKind::Mod: r = a - b * std::floor(a / b); break;
    case ExprKind::Min: r = a < b ? a : b; break;
    case ExprKind::Max: r = a > b ? a : b; break;
    default: TESSERA_FAIL("loop IR: ", expr_kind_name(op), " is not a float arithmetic op");
  }
  return round_float(t, r);
}

bool float_compare(ExprKind op, double a, double b) {
  switch (op) {
    case ExprKind::EQ: return a == b;
    case ExprKind::NE: return a != b;
    case ExprKind::LT: return a < b;
    case ExprKind::LE: return a <= b;
    case ExprKind::GT: return a > b;
    case ExprKind::GE: return a >= b;
    default: TESSERA_FAIL("loop IR: ", expr_kind_name(op), " is not a comparison");
  }
}

int64_t cast_to_int(DType to, double v) {
  if (to == DType::Bool) return v != 0;
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (to == DType::U64) {
    if (v <= 0) return 0;
    if (v >= 18446744073709551616.0) return -1;  // all ones
    return s(static_cast<uint64_t>(v));
  }
  double lo = -9223372036854775808.0, hi = 9223372036854775807.0;
  switch (to) {
    case DType::I8: lo = -128; hi = 127; break;
    case DType::I16: lo = -32768; hi = 32767; break;
    case DType::I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DType::U8: lo = 0; hi = 255; break;
    case DType::U16: lo = 0; hi = 65535; break;
    case DType::U32: lo = 0; hi = 4294967295.0; break;
    case DType::I64: break;
    default: TESSERA_FAIL("loop IR: cannot cast to ", dtype_name(to));
  }
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return to == DType::I64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
  return static_cast<int64_t>(v);
}

int64_t cast_int_to_int(DType to, DType from, int64_t v) {
  (void)from;  // values are already sign- or zero-extended to 64 bits
  return wrap_int(to, v);
}

double cast_to_float(DType to, DType from, int64_t v) {
  double d = is_u64(from) ? static_cast<double>(u(v)) : static_cast<double>(v);
  if (to == DType::F32) {  // round once, straight from the integer
    d = is_u64(from) ? static_cast<float>(u(v)) : static_cast<float>(v);
  }
  return round_float(to, d);
}

int math_arity(const std::string& name) {
  static const char* kUnary[] = {"exp",  "log",   "sqrt",  "rsqrt", "tanh",  "erf",   "sigmoid", "abs",
                                 "floor", "ceil", "round", "trunc", "sin",   "cos",   "tan",     "asin",
                                 "acos", "atan",  "sinh",  "cosh",  "asinh", "acosh", "atanh",   "log1p",
                                 "expm1"};
  for (const char* n : kUnary)
    if (name == n) return 1;
  if (name == "pow" || name == "fmod") return 2;
  if (name == "fma") return 3;
  return -1;
}

double call_math(const std::string& name, DType t, const std::vector<double>& a) {
  TESSERA_CHECK(math_arity(name) >= 0, "loop IR: unknown math intrinsic '", name, "'");
  TESSERA_CHECK(static_cast<int>(a.size()) == math_arity(name), "loop IR: ", name, " takes ",
                math_arity(name), " arguments, got ", a.size());
  double r = 0;
  if (name == "exp") r = std::exp(a[0]);
  else if (name == "log") r = std::log(a[0]);
  else if (name == "sqrt") r = std::sqrt(a[0]);
  else if (name == "rsqrt") r = 1.0 / std::sqrt(a[0]);
  else if (name == "tanh") r = std::tanh(a[0]);
  else if (name == "erf") r = std::erf(a[0]);
  else if (name == "sigmoid") r = 1.0 / (1.0 + std::exp(-a[0]));
  else if (name == "abs") r = std::fabs(a[0]);
  else if (name == "floor") r = std::floor(a[0]);
  else if (name == "ceil") r = std::ceil(a[0]);
  else if (name == "round") r = std::nearbyint(a[0]);
  else if (name == "sin") r = std::sin(a[0]);
  else if (name == "cos") r = std::cos(a[0]);
  else if (name == "trunc") r = std::trunc(a[0]);
  else if (name == "tan") r = std::tan(a[0]);
  else if (name == "asin") r = std::asin(a[0]);
  else if (name == "acos") r = std::acos(a[0]);
  else if (name == "atan") r = std::atan(a[0]);
  else if (name == "sinh") r = std::sinh(a[0]);
  else if (name == "cosh") r = std::cosh(a[0]);
  else if (name == "asinh") r = std::asinh(a[0]);
  else if (name == "acosh") r = std::acosh(a[0]);
  else if (name == "atanh") r = std::atanh(a[0]);
  else if (name == "log1p") r = std::log1p(a[0]);
  else if (name == "expm1") r = std::expm1(a[0]);
  else if (name == "fmod") r = std::fmod(a[0], a[1]);  // exact: C's truncated remainder
  else if (name == "pow") r = std::pow(a[0], a[1]);
  else if (name == "fma") r = std::fma(a[0], a[1], a[2]);
  return round_float(t, r);
}

}  // namespace tessera::loop
