// Tensor expressions of the ops that read or write at data-dependent
// positions: Gather, GatherElements, GatherND, Compress (src/ops/tensor_gather.cpp),
// ScatterND, ScatterElements, Scatter (tensor_scatter.cpp), TensorScatter
// (tensor_scatter_cache.cpp); NonZero and Unique (tensor_select.cpp) stay
// opaque.
//
// Out-of-range indices: the references throw, a compiled kernel cannot. Gathers
// wrap negative indices like the references and then clamp into the axis, so
// no read leaves the tensor; scatters skip writes whose index is out of range.
#include "opexpr/expr_tensor.h"
#include "ops/op_attrs.h"
#include "ops/tensor_common.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;
using loop::Buffer;
using loop::Stmt;
using loop::Var;

te::Tensor make(ExprContext& c, const Dims& dims, const std::function<Expr(const Idx&)>& f, const te::StageTag& tag) {
  return te::compute(dims, [&](const Indices& i) { return f(as_exprs(i)); }, c.stage_name(""), tag);
}

void check_indices(ExprContext& c, int i) {
  DType t = c.in(i).dtype();
  TESSERA_CHECK(t == DType::I32 || t == DType::I64, c.node.describe(), ": indices must be int32 or int64, got ",
                dtype_name(t));
}

// Gathering from an empty axis: every index is out of range (the reference
// throws), and there is nothing to clamp to.
void check_gather_axis(ExprContext& c, int64_t dim, const char* what) {
  TESSERA_CHECK(dim > 0 || numel_of(c.out(0).dims) == 0, c.node.describe(), ": ", what,
                " indexes an axis of size 0 (every index is out of range)");
}

// ---------------------------------------------------------------- Gather

Out gather(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  check_indices(c, 1);
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  size_t q = static_cast<size_t>(ind.rank());
  int64_t dim = x.dim(static_cast<int>(axis));
  check_gather_axis(c, dim, "Gather");
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Idx in(o.begin(), o.begin() + static_cast<long>(axis));
    in.push_back(wrap_clamp_index(ind(Idx(o.begin() + static_cast<long>(axis), o.begin() + static_cast<long>(axis + q))),
                                  dim));
    in.insert(in.end(), o.begin() + static_cast<long>(axis + q), o.end());
    return x(in);
  }, "gather")};
}

Out gather_elements(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  check_indices(c, 1);
  TESSERA_CHECK(ind.rank() == x.rank() && x.rank() >= 1, c.node.describe(),
                ": data and indices must have the same rank >= 1");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  for (int k = 0; k < x.rank(); ++k)
    TESSERA_CHECK(static_cast<size_t>(k) == axis || ind.dim(k) <= x.dim(k), c.node.describe(), ": indices shape ",
                  dims_to_string(ind.shape()), " exceeds data shape ", dims_to_string(x.shape()), " outside the axis");
  int64_t dim = x.dim(static_cast<int>(axis));
  check_gather_axis(c, dim, "GatherElements");
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Idx in = o;
    in[axis] = wrap_clamp_index(ind(o), dim);
    return x(in);
  }, "gather")};
}

Out gather_nd(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  check_indices(c, 1);
  size_t b = static_cast<size_t>(op_attrs(c).i("batch_dims"));
  size_t q = static_cast<size_t>(ind.rank());
  int64_t last = ind.dim(ind.rank() - 1);
  TESSERA_CHECK(last >= 1 && static_cast<int64_t>(b) + last <= x.rank(), c.node.describe(),
                ": the last indices dim ", last, " does not fit the data rank");
  for (int64_t j = 0; j < last; ++j) check_gather_axis(c, x.dim(static_cast<int>(b + static_cast<size_t>(j))), "GatherND");
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Idx in(o.begin(), o.begin() + static_cast<long>(b));  // batch dims
    Idx row(o.begin(), o.begin() + static_cast<long>(q - 1));
    for (int64_t j = 0; j < last; ++j) {
      Idx at = row;
      at.push_back(loop::int_imm(j));
      in.push_back(wrap_clamp_index(ind(at), x.dim(static_cast<int>(b + static_cast<size_t>(j)))));
    }
    in.insert(in.end(), o.begin() + static_cast<long>(q - 1), o.end());
    return x(in);
  }, "gather")};
}

// ---------------------------------------------------------------- Compress

// Static when the condition is a known value (else the output shape is not
// known and the node cannot be compiled anyway).
Out compress(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const Tensor& cond = c.value(1);
  bool has_axis = c.node.has_attr("axis");
  size_t axis = has_axis ? static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank())) : 0;
  int64_t dim = has_axis ? x.dim(static_cast<int>(axis)) : numel_of(x.shape());
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (cond.get_int(i) == 0) continue;
    TESSERA_CHECK(i < dim, c.node.describe(), ": condition selects index ", i, " beyond the axis size ", dim);
    keep.push_back(i);
  }
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    if (keep.empty()) return te::constant(x.dtype(), 0);  // no elements
    if (!has_axis) return x(unravel(int_table(keep, o[0]), x.shape()));
    Idx in = o;
    in[axis] = int_table(keep, o[axis]);
    return x(in);
  }, "gather")};
}

// ---------------------------------------------------------------- scatters (extern stages)

// The reference's update of element a with b: f16/bf16 in f32, rounded back
// after each update; max/min keep a unless the comparison says otherwise (NaN).
Expr combine(Reduction red, const Expr& a, const Expr& b) {
  DType d = a.type().dtype;
  if (red == Reduction::None) return b;
  if (d == DType::Bool) return red == Reduction::Add || red == Reduction::Max ? (a || b) : (a && b);
  bool half = d == DType::F16 || d == DType::BF16;
  Expr x = half ? cast_to(a, DType::F32) : a, y = half ? cast_to(b, DType::F32) : b, r;
  switch (red) {
    case Reduction::Add: r = x + y; break;
    case Reduction::Mul: r = x * y; break;
    case Reduction::Max: r = loop::select(x < y, y, x); break;
    default: r = loop::select(y < x, y, x); break;
  }
  return half ? cast_to(r, d) : r;
}

Expr linear(const std::vector<Var>& vs, const Dims& dims, size_t count) {
  Expr lin = loop::int_imm(0);
  for (size_t k = 0; k < count; ++k) lin = k == 0 ? Expr(vs[k]) : lin * dims[k] + vs[k];
  return lin;
}

Stmt serial(const Var& v, int64_t extent, Stmt body) {
  return loop::for_loop(v, loop::int_imm(0), loop::int_imm(extent), loop::ForKind::Serial, std::move(body));
}

// Loops over `dims` (outermost first) around body.
Stmt nest(const std::vector<Var>& vs, const Dims& dims, size_t count, Stmt body) {
  for (size_t k = count; k-- > 0;) body = serial(vs[k], dims[k], std::move(body));
  return body;
}

std::vector<Var> loop_vars(size_t n, const std::string& prefix) {
  std::vector<Var> vs;
  for (size_t k = 0; k < n; ++k) vs.emplace_back(prefix + std::to_string(k));
  return vs;
}

// y = copy of data, then every update applied in the reference's order.
Out scatter_elements(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  const te::Tensor& upd = c.in(2);
  check_indices(c, 1);
  Reduction red = c.node.op_type == "Scatter" ? Reduction::None : reduction_of(op_attrs(c));
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() == x.rank() && upd.shape() == ind.shape() && upd.dtype() == x.dtype(),
                c.node.describe(), ": data, indices and updates must have the same rank, indices and updates the same shape");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  for (int k = 0; k < x.rank(); ++k)
    TESSERA_CHECK(static_cast<size_t>(k) == axis || ind.dim(k) <= x.dim(k), c.node.describe(), ": indices shape ",
                  dims_to_string(ind.shape()), " exceeds data shape ", dims_to_string(x.shape()), " outside the axis");
  Dims xd = x.shape(), id = ind.shape(), xs = strides_of(xd);
  int64_t dim = xd[axis];
  return te::extern_stage({xd}, {x.dtype()}, {x, ind, upd}, [=](const std::vector<Buffer>& in,
                                                                  const std::vector<Buffer>& out) {
    Var i("i");
    Stmt copy = serial(i, numel_of(xd), loop::store(out[0], loop::load(in[0], i), i));
    std::vector<Var> vs = loop_vars(id.size(), "k");
    Expr e = linear(vs, id, id.size());
    Var v("v");
    Expr off = loop::int_imm(0);
    for (size_t k = 0; k < xd.size(); ++k) off = off + (k == axis ? Expr(v) : Expr(vs[k])) * xs[k];
    Stmt write = loop::store(out[0], combine(red, loop::load(out[0], off), loop::load(in[2], e)), off);
    Expr raw = as_index(loop::load(in[1], e));
    Stmt body = loop::let_stmt(v, raw + loop::select(raw < 0, loop::int_imm(dim), loop::int_imm(0)),
                               loop::if_then_else(v >= 0 && v < dim, write));  // out of range: skipped
    return loop::block({copy, nest(vs, id, id.size(), body)});
  }, c.stage_name(""), "scatter");
}

Out scatter_nd(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& ind = c.in(1);
  const te::Tensor& upd = c.in(2);
  check_indices(c, 1);
  Reduction red = reduction_of(op_attrs(c));
  Dims xd = x.shape(), id = ind.shape(), xs = strides_of(xd);
  TESSERA_CHECK(!xd.empty() && !id.empty() && id.back() <= static_cast<int64_t>(xd.size()), c.node.describe(),
                ": the last indices dim must be at most the data rank");
  size_t k = static_cast<size_t>(id.back());
  Dims expect(id.begin(), id.end() - 1);
  expect.insert(expect.end(), xd.begin() + static_cast<long>(k), xd.end());
  TESSERA_CHECK(upd.shape() == expect && upd.dtype() == x.dtype(), c.node.describe(), ": updates have shape ",
                dims_to_string(upd.shape()), " but indices and data require ", dims_to_string(expect));
  int64_t slice = 1;
  for (size_t j = k; j < xd.size(); ++j) slice *= xd[j];
  return te::extern_stage({xd}, {x.dtype()}, {x, ind, upd}, [=](const std::vector<Buffer>& in,
                                                                  const std::vector<Buffer>& out) {
    Var i("i");
    Stmt copy = serial(i, numel_of(xd), loop::store(out[0], loop::load(in[0], i), i));
    size_t rows_rank = id.size() - 1;
    std::vector<Var> vs = loop_vars(rows_rank, "r");
    Expr row = linear(vs, id, rows_rank);
    std::vector<Var> iv = loop_vars(k, "v");
    Expr off = loop::int_imm(0), valid;
    for (size_t j = 0; j < k; ++j) {
      off = off + iv[j] * xs[j];
      Expr ok = iv[j] >= 0 && iv[j] < xd[j];
      valid = valid.defined() ? (valid && ok) : ok;
    }
    Var e("e");
    Stmt body = serial(e, slice, loop::store(out[0], combine(red, loop::load(out[0], off + e),
                                                              loop::load(in[2], row * slice + e)), off + e));
    if (valid.defined()) body = loop::if_then_else(valid, body);  // out of range: skipped
    for (size_t j = k; j-- > 0;) {
      Expr raw = as_index(loop::load(in[1], row * static_cast<int64_t>(k) + static_cast<int64_t>(j)));
      body = loop::let_stmt(iv[j], raw + loop::select(raw < 0, loop::int_imm(xd[j]), loop::int_imm(0)), body);
    }
    return loop::block({copy, nest(vs, id, rows_rank, body)});
  }, c.stage_name(""), "scatter");
}

// ---------------------------------------------------------------- TensorScatter

// The update positions of one batch entry are distinct (the update is at most
// as long as the cache), so the scatter is a gather: each output position
// reads the update row landing on it, or the past cache.
Out tensor_scatter(ExprContext& c) {
  const te::Tensor& past = c.in(0);
  const te::Tensor& upd = c.in(1);
  std::string mode = op_attrs(c).s("mode");
  TESSERA_CHECK(mode == "linear" || mode == "circular", c.node.describe(), ": unsupported mode '", mode, "'");
  TESSERA_CHECK(past.rank() >= 2 && upd.rank() == past.rank() && upd.dtype() == past.dtype(), c.node.describe(),
                ": update must have the rank and type of past_cache");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), past.rank()));
  TESSERA_CHECK(axis != 0, c.node.describe(), ": axis must not be the batch axis 0");
  int64_t max_seq = past.dim(static_cast<int>(axis)), seq = upd.dim(static_cast<int>(axis));
  TESSERA_CHECK(seq <= max_seq, c.node.describe(), ": the update is longer than the cache");
  bool circular = mode == "circular";
  return {make(c, past.shape(), [&](const Idx& o) {
    if (seq == 0) return past(o);
    Expr w = c.has_input(2) ? as_index(c.in(2)(o[0])) : loop::int_imm(0);
    Expr s = o[axis] - w;
    Expr hit;
    if (circular) {
      s = s % max_seq;  // floor modulo: in [0, max_seq)
      hit = s < seq;
    } else {
      hit = s >= 0 && s < seq;  // rows past the cache's end (the reference throws) are dropped
    }
    Idx ui = o;
    ui[axis] = s;
    return te::if_then_else(hit, upd(ui), past(o));
  }, "scatter")};
}

}  // namespace

void register_gather_exprs(ExprRegistry& r) {
  set(r, "Gather", gather);
  set(r, "GatherElements", gather_elements);
  set(r, "GatherND", gather_nd);
  set(r, "Compress", compress);
  set(r, "ScatterElements", scatter_elements);
  set(r, "Scatter", scatter_elements);
  set(r, "ScatterND", scatter_nd);
  set(r, "TensorScatter", tensor_scatter);
  r.set_opaque("NonZero", "", "the output shape depends on the input values");
  r.set_opaque("Unique", "", "the output shape depends on the input values");
}

}  // namespace tessera::ops::tensor_expr
