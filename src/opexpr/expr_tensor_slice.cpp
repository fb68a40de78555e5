// Tensor expressions of the ops that cut, join, pad and repeat along axes:
// Concat, Split, Slice (src/ops/tensor_concat.cpp) and Pad, CenterCropPad,
// Expand, Tile (tensor_pad.cpp). All are index formulas; positions outside
// the input (padding, other concat inputs) are guarded selects, so no read
// ever leaves its tensor.
#include <algorithm>
#include <limits>

#include "opexpr/expr_tensor.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;

te::Tensor make(ExprContext& c, const Dims& dims, const std::function<Expr(const Idx&)>& f, const te::StageTag& tag,
                const std::string& suffix = "") {
  return te::compute(dims, [&](const Indices& i) { return f(as_exprs(i)); }, c.stage_name(suffix), tag);
}

// ---------------------------------------------------------------- Concat

Out concat(ExprContext& c) {
  int n = c.num_inputs();
  TESSERA_CHECK(n >= 1, c.node.describe(), ": needs at least one input");
  const te::Tensor& first = c.in(0);
  int64_t a = op_attrs(c).i("axis");  // default 1 before opset 4, then required
  size_t axis = static_cast<size_t>(normalize_axis(c.node, a, first.rank()));
  std::vector<int64_t> offset;  // start of each input along the axis
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    offset.push_back(total);
    total += c.in(i).dim(static_cast<int>(axis));
  }
  return {make(c, c.out(0).dims, [&](const Idx& o) {
    auto read = [&](int i) {
      Idx in = o;
      in[axis] = offset[static_cast<size_t>(i)] == 0 ? o[axis] : o[axis] - offset[static_cast<size_t>(i)];
      return c.in(i)(in);
    };
    // The last non-empty input, then earlier ones guarded by the axis position.
    int last = n - 1;
    while (last > 0 && c.in(last).dim(static_cast<int>(axis)) == 0) --last;
    Expr e = read(last);
    for (int i = last - 1; i >= 0; --i) {
      if (c.in(i).dim(static_cast<int>(axis)) == 0) continue;
      e = te::if_then_else(o[axis] < offset[static_cast<size_t>(i) + 1], read(i), e);
    }
    return e;
  }, "concat")};
}

// ---------------------------------------------------------------- Split

Out split(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  if ((c.opset >= 13 || c.opset < 2) && !(c.opset < 13 && c.node.has_attr("split"))) note_value(c, 1);
  Out outs;
  int64_t start = 0;
  for (int i = 0; i < c.num_outputs(); ++i) {
    const Dims& d = c.out(i).dims;
    outs.push_back(make(c, d, [&](const Idx& o) {
      Idx in = o;
      if (start != 0) in[axis] = o[axis] + start;
      return x(in);
    }, "slice", std::to_string(i)));
    start += d[axis];
  }
  TESSERA_CHECK(start == x.dim(static_cast<int>(axis)), c.node.describe(), ": split sizes sum to ", start,
                " but the axis has size ", x.dim(static_cast<int>(axis)));
  return outs;
}

// ---------------------------------------------------------------- Slice

Out slice(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = op_attrs(c).ints("starts");
    ends = op_attrs(c).ints("ends");
    axes = op_attrs(c).ints("axes");
    if (!c.node.has_attr("axes"))
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  } else {
    TESSERA_CHECK(c.has_input(1) && c.has_input(2), c.node.describe(), ": starts and ends are required");
    starts = value_ints(c, 1);
    ends = value_ints(c, 2);
    if (c.has_input(3)) {
      axes = value_ints(c, 3);
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    steps = value_ints(c, 4);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  TESSERA_CHECK(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
                c.node.describe(), ": starts, ends, axes and steps must have the same length");
  // Per axis: first input index and step (identity elsewhere).
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  std::vector<bool> sliced(static_cast<size_t>(rank), false);
  const Dims& out = c.out(0).dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t ax = static_cast<size_t>(normalize_axis(c.node, axes[i], rank));
    int64_t dim = x.dim(static_cast<int>(ax)), s = starts[i], e = ends[i], st = steps[i];
    TESSERA_CHECK(st != 0, c.node.describe(), ": slice step cannot be 0");
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t len;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      int64_t neg = st == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -st;
      len = s > e ? (s - e - 1) / neg + 1 : 0;
    }
    TESSERA_CHECK(len == out[ax], c.node.describe(), ": slice of axis ", ax, " has ", len,
                  " elements but inference says ", out[ax]);
    sliced[ax] = true;
    first[ax] = len > 0 ? s : 0;
    step[ax] = len > 1 ? st : 0;
  }
  return {make(c, out, [&](const Idx& o) {
    Idx in = o;
    for (size_t k = 0; k < in.size(); ++k) {
      if (!sliced[k]) continue;
      Expr v = step[k] == 0 ? loop::int_imm(0) : step[k] == 1 ? o[k] : o[k] * step[k];
      in[k] = first[k] == 0 ? v : v + first[k];
    }
    return x(in);
  }, "slice")};
}

// ---------------------------------------------------------------- Pad

enum class PadMode { Constant, Reflect, Edge, Wrap };

Out pad(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  int64_t rank = x.rank();
  std::string m = op_attrs(c).s("mode");
  PadMode mode = m == "constant"                    ? PadMode::Constant
                 : m == "reflect"                   ? PadMode::Reflect
                 : m == "edge"                      ? PadMode::Edge
                 : (m == "wrap" && c.opset >= 19) ? PadMode::Wrap
                                                    : throw Error(c.node.describe() + ": unsupported pad mode '" + m + "'");
  std::vector<int64_t> pads, axes;
  Expr fill = te::constant(x.dtype(), 0);
  if (c.opset < 11) {
    pads = op_attrs(c).ints(c.opset < 2 ? "paddings" : "pads");
    fill = element_const(Tensor::scalar<float>(op_attrs(c).f("value")).cast(x.dtype()), 0);
  } else {
    pads = value_ints(c, 1);
    if (c.opset >= 18 && c.has_input(3)) axes = value_ints(c, 3);
    if (c.has_input(2)) {
      const te::Tensor& v = c.in(2);
      TESSERA_CHECK(v.dtype() == x.dtype() && numel_of(v.shape()) == 1, c.node.describe(),
                    ": constant_value must be one element of the data's type");
      fill = read_first(v);
    }
  }
  if (!(c.opset >= 18 && c.has_input(3))) {
    axes.clear();
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  TESSERA_CHECK(pads.size() == 2 * axes.size(), c.node.describe(), ": pads has ", pads.size(), " entries for ",
                axes.size(), " axes");
  std::vector<int64_t> pb(static_cast<size_t>(rank), 0), pe(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t ax = static_cast<size_t>(normalize_axis(c.node, axes[i], rank));
    pb[ax] = pads[i];
    pe[ax] = pads[i + axes.size()];
  }
  const Dims& out = c.out(0).dims;
  return {make(c, out, [&](const Idx& o) {
    Idx in = o;
    Expr inside;
    for (size_t k = 0; k < static_cast<size_t>(rank); ++k) {
      if (pb[k] == 0 && pe[k] == 0) continue;
      // Negative pads crop first; the kept range [lo, lo + dd) is then padded.
      int64_t d = x.dim(static_cast<int>(k));
      int64_t lo = std::max<int64_t>(0, -pb[k]), dd = d - lo - std::max<int64_t>(0, -pe[k]);
      int64_t shift = std::max<int64_t>(pb[k], 0);
      TESSERA_CHECK(mode == PadMode::Constant || dd > 0 || out[k] == 0, c.node.describe(), ": cannot pad axis ", k,
                    " with no elements in ", m, " mode");
      Expr i = shift == 0 ? o[k] : o[k] - shift, mi;
      switch (mode) {
        case PadMode::Constant: {
          Expr ok = i >= 0 && i < dd;
          inside = inside.defined() ? (inside && ok) : ok;
          mi = i;
          break;
        }
        case PadMode::Edge: mi = loop::max(loop::min(i, dd - 1), 0); break;
        case PadMode::Wrap: mi = i % dd; break;
        case PadMode::Reflect: {
          if (dd == 1) {
            mi = loop::int_imm(0);
            break;
          }
          int64_t period = 2 * (dd - 1);  // a triangle wave
          Expr w = i % period;
          mi = loop::select(w >= dd, period - w, w);
          break;
        }
      }
      in[k] = lo == 0 ? mi : mi + lo;
    }
    return inside.defined() ? te::if_then_else(inside, x(in), fill) : x(in);
  }, "pad")};
}

// ---------------------------------------------------------------- CenterCropPad

Out center_crop_pad(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  note_value(c, 1);  // the target shape: already in the output type
  const Dims& out = c.out(0).dims;
  return {make(c, out, [&](const Idx& o) {
    Idx in = o;
    Expr inside;
    for (size_t k = 0; k < out.size(); ++k) {
      int64_t d = x.dim(static_cast<int>(k)), t = out[k];
      if (d == t) continue;
      // Crop: window starting at floor((d - t) / 2). Pad: input starts at floor((t - d) / 2).
      int64_t shift = t <= d ? -(d - t) / 2 : (t - d) / 2;
      in[k] = o[k] - shift;
      if (t > d) {
        Expr ok = in[k] >= 0 && in[k] < d;
        inside = inside.defined() ? (inside && ok) : ok;
      }
    }
    return inside.defined() ? te::if_then_else(inside, x(in), te::constant(x.dtype(), 0)) : x(in);
  }, "pad")};
}

// ---------------------------------------------------------------- Expand / Tile

Out expand(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  note_value(c, 1);  // the shape: already in the output type
  return {make(c, c.out(0).dims, [&](const Idx& o) { return broadcast_read(x, o); }, "broadcast")};
}

Out tile(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  note_value(c, 1);  // repeats (opset < 6: tiles and axis): already in the output type
  if (c.opset < 6) note_value(c, 2);
  const Dims& out = c.out(0).dims;
  return {make(c, out, [&](const Idx& o) {
    Idx in = o;
    for (size_t k = 0; k < out.size(); ++k) {
      int64_t d = x.dim(static_cast<int>(k));
      if (d == 1) in[k] = loop::int_imm(0);
      else if (out[k] != d) in[k] = o[k] % d;
    }
    return x(in);
  }, "broadcast")};
}

}  // namespace

void register_slice_exprs(ExprRegistry& r) {
  set(r, "Concat", concat);
  set(r, "Split", split);
  set(r, "Slice", slice);
  set(r, "Pad", pad);
  set(r, "CenterCropPad", center_crop_pad);
  set(r, "Expand", expand);
  set(r, "Tile", tile);
}

}  // namespace tessera::ops::tensor_expr
