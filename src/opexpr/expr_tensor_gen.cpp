// Tensor expressions of the generators (src/ops/tensor_gen.cpp): Constant,
// ConstantOfShape, Range, EyeLike, OneHot.
#include <cmath>
#include <cstring>
#include <limits>

#include "opexpr/expr_tensor.h"
#include "ops/op_attrs.h"
#include "ops/tensor_common.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;

te::Tensor make(ExprContext& c, const Dims& dims, const std::function<Expr(const Idx&)>& f, const te::StageTag& tag) {
  return te::compute(dims, [&](const Indices& i) { return f(as_exprs(i)); }, c.stage_name(""), tag);
}

Expr linear_of(const Idx& o, const Dims& dims) {
  Expr lin = loop::int_imm(0);
  for (size_t k = 0; k < o.size(); ++k) lin = k == 0 ? o[0] : lin * dims[k] + o[k];
  return lin;
}

// ---------------------------------------------------------------- Constant

// The constant's elements as an expression of the linear position: runs of
// equal elements chosen by a balanced select tree.
constexpr int64_t kMaxConstantRuns = 4096;

Out constant(ExprContext& c) {
  Tensor t = constant_value(op_attrs(c));
  TESSERA_CHECK(t.dtype() != DType::String, c.node.describe(), ": string constants cannot be compiled");
  const Dims& dims = t.dims();
  size_t width = dtype_size(t.dtype());
  const auto* bytes = static_cast<const unsigned char*>(t.raw());
  std::vector<int64_t> starts;  // first element of each run
  for (int64_t i = 0; i < t.numel(); ++i)
    if (i == 0 || std::memcmp(bytes + i * width, bytes + (i - 1) * width, width) != 0) starts.push_back(i);
  TESSERA_CHECK(static_cast<int64_t>(starts.size()) <= kMaxConstantRuns, c.node.describe(), ": a constant with ",
                starts.size(), " runs of distinct values is too large to compile as code; fold it into a graph constant");
  return {make(c, dims, [&](const Idx& o) {
    if (starts.empty()) return te::constant(t.dtype(), 0);
    Expr lin = linear_of(o, dims);
    std::function<Expr(size_t, size_t)> build = [&](size_t lo, size_t hi) -> Expr {
      if (hi - lo == 1) return element_const(t, starts[lo]);
      size_t mid = (lo + hi) / 2;
      return loop::select(lin < starts[mid], build(lo, mid), build(mid, hi));
    };
    return build(0, starts.size());
  }, "const")};
}

Out constant_of_shape(ExprContext& c) {
  note_value(c, 0);  // the shape: already in the output type
  const Tensor v = constant_of_shape_value(op_attrs(c));
  return {make(c, c.out(0).dims, [&](const Idx&) { return element_const(v, 0); }, "const")};
}

// ---------------------------------------------------------------- Range

Out range(ExprContext& c) {
  const Tensor& start = c.value(0);
  c.value(1);  // the limit: only the element count, already in the output type
  const Tensor& delta = c.value(2);
  DType d = c.out(0).dtype;
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    if (is_integer(d)) {
      // In i64 (wrapping) and narrowed: the reference's value modulo 2^bits.
      return cast_to(o[0] * delta.get_int(0) + start.get_int(0), d);
    }
    Expr i = cast_to(o[0], DType::F64);
    return f64_to(i * loop::float_imm(delta.get_double(0), {DType::F64, 1}) + loop::float_imm(start.get_double(0), {DType::F64, 1}),
                  d);
  }, "const")};
}

// ---------------------------------------------------------------- EyeLike

Out eye_like(ExprContext& c) {
  int64_t k = op_attrs(c).i("k");
  DType d = c.out(0).dtype;
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    return loop::select(loop::eq(o[1] - o[0], loop::int_imm(k)), te::constant(d, 1), te::constant(d, 0));
  }, "const")};
}

// ---------------------------------------------------------------- OneHot

Out onehot(ExprContext& c) {
  const te::Tensor& ind = c.in(0);
  const te::Tensor& vals = c.in(2);
  TESSERA_CHECK(numel_of(vals.shape()) == 2 && vals.rank() == 1, c.node.describe(),
                ": values must be a 2-element tensor [off, on]");
  TESSERA_CHECK(ind.dtype() != DType::Bool, c.node.describe(), ": indices must be numeric");
  c.value(1);  // the depth: already in the output type
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), ind.rank() + 1));
  int64_t depth = c.out(0).dims[axis];
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Idx at(o.begin(), o.begin() + static_cast<long>(axis));
    at.insert(at.end(), o.begin() + static_cast<long>(axis) + 1, o.end());
    Expr raw = ind(at), k, ok;
    if (is_float(ind.dtype())) {
      // Non-finite indices select nothing; others truncate toward zero.
      Expr x = cast_to(raw, DType::F64);
      ok = loop::call("abs", {x}) <= loop::float_imm(std::numeric_limits<double>::max(), {DType::F64, 1});
      k = cast_to(x, DType::I64);
    } else {
      k = as_index(raw);
    }
    k = k + loop::select(k < 0, loop::int_imm(depth), loop::int_imm(0));
    Expr hit = loop::eq(k, o[axis]);  // o[axis] is in [0, depth): out-of-range indices never hit
    hit = ok.defined() ? (ok && hit) : hit;
    return loop::select(hit, vals(loop::int_imm(1)), vals(loop::int_imm(0)));
  }, "onehot")};
}

}  // namespace

void register_gen_exprs(ExprRegistry& r) {
  set(r, "Constant", constant);
  set(r, "ConstantOfShape", constant_of_shape);
  set(r, "Range", range);
  set(r, "EyeLike", eye_like);
  set(r, "OneHot", onehot);
}

}  // namespace tessera::ops::tensor_expr
