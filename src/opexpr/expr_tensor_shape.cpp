// Tensor expressions of the shape and layout ops: Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Shape, Size (src/ops/tensor_shape.cpp) and Transpose,
// DepthToSpace, SpaceToDepth, Trilu, ReverseSequence (tensor_layout.cpp).
// All are pure index formulas, inlined into their consumers by fusion.
#include <algorithm>

#include "opexpr/expr_tensor.h"
#include "ops/op_attrs.h"
#include "ops/tensor_common.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;

te::Tensor make(ExprContext& c, const Dims& dims, const std::function<Expr(const Idx&)>& f, const te::StageTag& tag,
                const std::string& suffix = "") {
  return te::compute(dims, [&](const Indices& i) { return f(as_exprs(i)); }, c.stage_name(suffix), tag);
}

// The input reorganised under the inferred output dims (same elements, row-major).
te::Tensor reshaped(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  Dims in = x.shape(), out = c.out(0).dims;
  TESSERA_CHECK(numel_of(in) == numel_of(out), c.node.describe(), ": cannot reshape ", dims_to_string(in), " to ",
                dims_to_string(out));
  return make(c, out, [&](const Idx& o) { return x(reshape_indices(in, out, o)); }, "reshape");
}

Out reshape(ExprContext& c) {
  if (c.opset >= 5) note_value(c, 1);  // the shape: already in the output type
  return {reshaped(c)};
}

Out squeeze_like(ExprContext& c) {
  if (c.opset >= 13) note_value(c, 1);  // the axes: already in the output type
  return {reshaped(c)};
}

// ---------------------------------------------------------------- Shape / Size

Out shape(ExprContext& c) {
  const Dims& d = c.in(0).shape();
  auto [start, end] = shape_range(op_attrs(c), static_cast<int64_t>(d.size()));
  std::vector<int64_t> v(d.begin() + start, d.begin() + end);
  return {make(c, {end - start}, [&](const Idx& o) {
    return v.empty() ? loop::int_imm(0) : int_table(v, o[0]);
  }, "const")};
}

Out size(ExprContext& c) {
  int64_t n = numel_of(c.in(0).shape());
  return {make(c, {}, [&](const Idx&) { return loop::int_imm(n); }, "const")};
}

// ---------------------------------------------------------------- Transpose

Out transpose(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  int64_t rank = x.rank();
  std::vector<int64_t> perm = op_attrs(c).ints("perm");
  if (!c.node.has_attr("perm"))
    for (int64_t i = 0; i < rank; ++i) perm.push_back(rank - 1 - i);
  TESSERA_CHECK(static_cast<int64_t>(perm.size()) == rank, c.node.describe(), ": perm has ", perm.size(),
                " entries but the input has rank ", rank);
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Idx in(static_cast<size_t>(rank));
    for (size_t k = 0; k < perm.size(); ++k) in[static_cast<size_t>(perm[k])] = o[k];
    return x(in);
  }, "transpose")};
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

int64_t block_size(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t bs = attrs.i("blocksize");
  TESSERA_CHECK(bs > 0, n.describe(), ": invalid blocksize ", bs);
  return bs;
}

Out depth_to_space(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  std::string mode = op_attrs(c).s("mode");
  TESSERA_CHECK(mode == "DCR" || mode == "CRD", c.node.describe(), ": unsupported mode '", mode, "'");
  bool crd = mode == "CRD";
  int64_t co = c.out(0).dims[1];
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    Expr bh = o[2] % bs, bw = o[3] % bs;
    Expr ch = crd ? o[1] * (bs * bs) + bh * bs + bw : (bh * bs + bw) * co + o[1];
    return x(o[0], ch, o[2] / bs, o[3] / bs);
  }, "shuffle")};
}

Out space_to_depth(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  int64_t bs = block_size(op_attrs(c));
  int64_t ch = x.dim(1);
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    // Output channel = (bh * bs + bw) * C + c.
    Expr b = o[1] / ch;
    return x(o[0], o[1] % ch, o[2] * bs + b / bs, o[3] * bs + b % bs);
  }, "shuffle")};
}

// ---------------------------------------------------------------- Trilu / ReverseSequence

Out trilu(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2");
  bool upper = op_attrs(c).i("upper") != 0;
  Expr k;  // read as data: one kernel serves every k
  if (c.has_input(1)) {
    TESSERA_CHECK(numel_of(c.in(1).shape()) == 1 && is_integer(c.in(1).dtype()), c.node.describe(),
                  ": k must be an integer scalar");
    k = as_index(read_first(c.in(1)));
  } else {
    k = loop::int_imm(0);
  }
  size_t r = static_cast<size_t>(x.rank());
  return {make(c, x.shape(), [&](const Idx& o) {
    Expr diff = o[r - 1] - o[r - 2];
    Expr keep = upper ? diff >= k : diff <= k;
    return loop::select(keep, x(o), te::constant(x.dtype(), 0));
  }, te::OpClass::Elementwise)};
}

Out reverse_sequence(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& lens = c.in(1);
  int64_t ta = op_attrs(c).i("time_axis"), ba = op_attrs(c).i("batch_axis");
  TESSERA_CHECK((ta == 0 && ba == 1) || (ta == 1 && ba == 0), c.node.describe(),
                ": time_axis and batch_axis must be 0 and 1 in some order");
  TESSERA_CHECK(x.rank() >= 2 && lens.rank() == 1 && lens.dim(0) == x.dim(ba), c.node.describe(),
                ": sequence_lens must have one entry per batch element");
  int64_t tmax = x.dim(ta);
  return {make(c, x.shape(), [&](const Idx& o) {
    // Lengths outside [0, tmax] (the reference throws) are clamped.
    Expr len = loop::max(loop::min(as_index(lens(o[static_cast<size_t>(ba)])), tmax), 0);
    Expr t = o[static_cast<size_t>(ta)];
    Idx in = o;
    in[static_cast<size_t>(ta)] = loop::select(t < len, len - 1 - t, t);
    return x(in);
  }, "shuffle")};
}

}  // namespace

void register_shape_exprs(ExprRegistry& r) {
  set(r, "Reshape", reshape);
  set(r, "Flatten", [](ExprContext& c) { return Out{reshaped(c)}; });
  set(r, "Squeeze", squeeze_like);
  set(r, "Unsqueeze", squeeze_like);
  set(r, "Identity", [](ExprContext& c) { return Out{c.in(0)}; });
  // Shape and Size read only the (static) dims, so any dtype, strings included.
  r.set_expr("Shape", "", shape);
  r.set_expr("Size", "", size);
  set(r, "Transpose", transpose);
  set(r, "DepthToSpace", depth_to_space);
  set(r, "SpaceToDepth", space_to_depth);
  set(r, "Trilu", trilu);
  set(r, "ReverseSequence", reverse_sequence);
}

}  // namespace tessera::ops::tensor_expr
