// Unary elementwise math: Abs Neg Sign Ceil Floor Round Reciprocal Sqrt Exp
// Log Erf, trigonometric and hyperbolic functions, Sigmoid, IsNaN, IsInf, Not
// and BitwiseNot. All one-to-one; float math runs in double and is rounded
// once to the element type.
#include "ops/elementwise_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

using namespace ew;

// min_opset 6: the op exists since opset 1, where it also took `consumed_inputs`
// (true of every unary op whose current semantics date from opset 6).
template <unsigned Mask, class F>
void add_unary(OpRegistry& r, const char* name, int64_t min_opset, F f, std::vector<int> linear = {}) {
  OpDef d{.name = name, .min_opset = min_opset, .mapping = MappingType::OneToOne,
          .linear_inputs = std::move(linear), .infer = infer_unary<Mask>,
          .reference = [f](const KernelContext& c) { return map_unary<Mask>(c, f); }};
  r.add(min_opset == 6 ? with_consumed_inputs(std::move(d)) : std::move(d));
}

// Float-only unary math function of a double.
template <class F>
void add_math(OpRegistry& r, const char* name, int64_t min_opset, F f) {
  add_unary<kFloat>(r, name, min_opset, [f](double v) { return f(v); });
}

template <unsigned Mask>
void infer_unary_bool(InferContext& c) {
  require_type(c.node, c.in(0).dtype, Mask);
  c.out(0) = c.in(0);
  c.out(0).dtype = DType::Bool;
}

}  // namespace

void register_ew_unary_ops(OpRegistry& r) {
  add_unary<kNumeric>(r, "Abs", 6, [](auto v) {
    using W = decltype(v);
    if constexpr (std::is_floating_point_v<W>) return std::fabs(v);
    else if constexpr (std::is_unsigned_v<W>) return v;
    else return v < 0 ? wrap_sub(W(0), v) : v;  // abs(min) wraps like numpy
  });
  add_unary<kFloat | kSigned>(r, "Neg", 6, [](auto v) {
    using W = decltype(v);
    if constexpr (std::is_floating_point_v<W>) return -v;
    else return wrap_sub(W(0), v);
  }, {0});
  add_unary<kNumeric>(r, "Sign", 9, [](auto v) {
    using W = decltype(v);
    if constexpr (std::is_floating_point_v<W>) return v > 0 ? 1.0 : v < 0 ? -1.0 : v;  // keeps NaN and 0
    else if constexpr (std::is_unsigned_v<W>) return static_cast<W>(v > 0 ? 1 : 0);
    else return static_cast<W>(v > 0 ? 1 : (v < 0 ? -1 : 0));
  });
  add_math(r, "Ceil", 6, [](double v) { return std::ceil(v); });
  add_math(r, "Floor", 6, [](double v) { return std::floor(v); });
  // Round half to even (the default floating-point rounding mode).
  add_math(r, "Round", 11, [](double v) { return std::nearbyint(v); });
  add_math(r, "Reciprocal", 6, [](double v) { return 1.0 / v; });
  add_math(r, "Sqrt", 6, [](double v) { return std::sqrt(v); });
  add_math(r, "Exp", 6, [](double v) { return std::exp(v); });
  add_math(r, "Log", 6, [](double v) { return std::log(v); });
  add_unary<kNumeric>(r, "Erf", 9, [](auto v) { return std::erf(static_cast<double>(v)); });
  add_math(r, "Sin", 7, [](double v) { return std::sin(v); });
  add_math(r, "Cos", 7, [](double v) { return std::cos(v); });
  add_math(r, "Tan", 7, [](double v) { return std::tan(v); });
  add_math(r, "Asin", 7, [](double v) { return std::asin(v); });
  add_math(r, "Acos", 7, [](double v) { return std::acos(v); });
  add_math(r, "Atan", 7, [](double v) { return std::atan(v); });
  add_math(r, "Sinh", 9, [](double v) { return std::sinh(v); });
  add_math(r, "Cosh", 9, [](double v) { return std::cosh(v); });
  add_math(r, "Tanh", 6, [](double v) { return std::tanh(v); });
  add_math(r, "Asinh", 9, [](double v) { return std::asinh(v); });
  add_math(r, "Acosh", 9, [](double v) { return std::acosh(v); });
  add_math(r, "Atanh", 9, [](double v) { return std::atanh(v); });
  add_math(r, "Sigmoid", 6, [](double v) {
    // Split by sign so exp never overflows.
    if (v >= 0) return 1.0 / (1.0 + std::exp(-v));
    double e = std::exp(v);
    return e / (1.0 + e);
  });
  add_unary<kBool>(r, "Not", 1, [](bool v) { return !v; });
  add_unary<kInt>(r, "BitwiseNot", 18, [](auto v) { return static_cast<decltype(v)>(~v); });

  r.add({.name = "IsNaN", .min_opset = 9, .mapping = MappingType::OneToOne, .infer = infer_unary_bool<kFloat>,
         .reference = [](const KernelContext& c) {
           return map_unary<kFloat>(c, [](double v) { return std::isnan(v); }, DType::Bool);
         }});
  r.add({.name = "IsInf", .min_opset = 10, .mapping = MappingType::OneToOne, .infer = infer_unary_bool<kFloat>,
         .reference = [](const KernelContext& c) {
           bool neg = op_attrs(c).i("detect_negative") != 0;
           bool pos = op_attrs(c).i("detect_positive") != 0;
           return map_unary<kFloat>(c, [&](double v) {
             return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
           }, DType::Bool);
         },
         .attributes = {int_attr("detect_negative", 1), int_attr("detect_positive", 1)}});
}

}  // namespace tessera
