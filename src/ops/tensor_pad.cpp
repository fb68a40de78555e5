// Ops whose output element maps to one input element (or a fill value) per
// axis independently: Pad, CenterCropPad, Expand and Tile. Opset 1 Pad names
// its pads `paddings`; Tile before opset 6 repeats along one axis.
#include <algorithm>
#include <cmath>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// y[o] = x[sum_k map[k][o_k] * stride_k], or `fill` when any map entry is -1.
// `fill` is a one-element tensor of x's dtype (or undefined when never used).
Tensor copy_mapped(const Tensor& x, const Dims& out_dims, const std::vector<std::vector<int64_t>>& map,
                   const Tensor& fill) {
  Tensor y(x.dtype(), out_dims);
  if (y.numel() == 0) return y;
  Dims xs = strides_of(x.dims());
  size_t r = out_dims.size();
  dispatch_storage(x.dtype(), [&]<class W>() {
    const W* s = elems<W>(x);
    W* o = elems<W>(y);
    W fv{};
    if (fill.defined()) fv = elems<W>(fill)[0];
    NdCounter it(out_dims);
    for (int64_t i = 0; i < y.numel(); ++i, it.next()) {
      int64_t off = 0;
      bool inside = true;
      for (size_t k = 0; k < r && inside; ++k) {
        int64_t m = map[k][static_cast<size_t>(it.idx[k])];
        if (m < 0) inside = false;
        off += m * xs[k];
      }
      o[i] = inside ? s[off] : fv;
    }
  });
  return y;
}

// ---------------------------------------------------------------- Pad

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode pad_mode(const Node& n, int64_t opset) {
  std::string m = OpAttrs(n, opset).s("mode");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  if (m == "wrap" && opset >= 19) return PadMode::Wrap;
  TESSERA_FAIL(n.describe(), ": unsupported pad mode '", m, "' (expected constant, reflect, edge",
               opset >= 19 ? " or wrap)" : ")");
}

// Per-axis (begin, end) pads for a tensor of the given rank, from the pads
// and optional axes. Throws naming the node on bad lengths.
std::vector<std::pair<int64_t, int64_t>> per_axis_pads(const Node& n, int64_t rank, const std::vector<int64_t>& pads,
                                                       const std::vector<int64_t>* axes_in) {
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = normalize_axes(n, *axes_in, rank);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  TESSERA_CHECK(pads.size() == 2 * axes.size(), n.describe(), ": pads has ", pads.size(), " entries but ",
                2 * axes.size(), " are needed (begin and end for each of ", axes.size(), " axes)");
  std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(rank), {0, 0});
  for (size_t i = 0; i < axes.size(); ++i) p[static_cast<size_t>(axes[i])] = {pads[i], pads[i + axes.size()]};
  return p;
}

Dims padded_dims(const Node& n, const Dims& in, const std::vector<std::pair<int64_t, int64_t>>& p) {
  Dims d = in;
  for (size_t k = 0; k < d.size(); ++k) {
    if (d[k] < 0) continue;
    d[k] += p[k].first + p[k].second;
    TESSERA_CHECK(d[k] >= 0, n.describe(), ": pads ", p[k].first, ", ", p[k].second, " on axis ", k,
                  " make its size negative");
  }
  return d;
}

// Pads before opset 11: the `pads` attribute, called `paddings` in opset 1.
std::vector<int64_t> pad_attr(const Node& n, int64_t opset) {
  const char* name = opset < 2 ? "paddings" : "pads";
  TESSERA_CHECK(!n.has_attr(opset < 2 ? "pads" : "paddings"), n.describe(), ": opset ", opset, " names the pads '",
                name, "'");
  return OpAttrs(n, opset).ints(name);
}

void infer_pad(InferContext& c) {
  const TensorType& x = c.in(0);
  pad_mode(c.node, c.opset);
  std::vector<int64_t> pads, axes;
  bool known = true, has_axes = false;
  if (c.opset < 11) {
    pads = pad_attr(c.node, c.opset);
  } else {
    TESSERA_CHECK(c.in(1).dtype == DType::I64 || c.in(1).dtype == DType::Undefined, c.node.describe(),
                  ": pads must be int64");
    if (c.has_input(2)) check_same_dtype(c.node, {&x, &c.in(2)});
    known = constant_ints(c, 1, pads);
    if (c.opset >= 18 && c.has_input(3)) {
      has_axes = true;
      known = known && constant_ints(c, 3, axes);
    }
  }
  if (!known) {
    c.out(0) = {x.dtype, Dims(x.dims.size(), -1), true};
    return;
  }
  c.out(0) = {x.dtype, padded_dims(c.node, x.dims, per_axis_pads(c.node, x.rank(), pads, has_axes ? &axes : nullptr)),
              true};
}

std::vector<Tensor> run_pad(const KernelContext& c) {
  const Tensor& x = c.in(0);
  PadMode mode = pad_mode(c.node, c.opset);
  std::vector<int64_t> pads, axes;
  bool has_axes = false;
  Tensor fill;
  if (c.opset < 11) {
    pads = pad_attr(c.node, c.opset);
    fill = x.dtype() == DType::String ? Tensor(DType::String, {1})
                                      : Tensor::scalar<float>(op_attrs(c).f("value")).cast(x.dtype());
  } else {
    pads = input_ints(c, 1);
    if (c.opset >= 18 && c.has_input(3)) {
      has_axes = true;
      axes = input_ints(c, 3);
    }
    if (c.has_input(2)) {
      fill = c.in(2);
      TESSERA_CHECK(fill.dtype() == x.dtype() && fill.numel() == 1, c.node.describe(),
                    ": constant_value must be one element of the data's type");
    }
  }
  auto p = per_axis_pads(c.node, x.rank(), pads, has_axes ? &axes : nullptr);
  Dims out = padded_dims(c.node, x.dims(), p);
  numel_of(out);  // throws on absurd sizes before building the maps
  std::vector<std::vector<int64_t>> map(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    // Negative pads crop first; the kept range [lo, lo + dd) is then padded.
    int64_t d = x.dims()[k], pb = p[k].first, pe = p[k].second;
    int64_t lo = std::max<int64_t>(0, -pb), dd = d - lo - std::max<int64_t>(0, -pe);
    int64_t shift = std::max<int64_t>(pb, 0);
    TESSERA_CHECK(mode == PadMode::Constant || dd > 0 || out[k] == 0, c.node.describe(), ": cannot pad axis ", k,
                  " with no elements in ", op_attrs(c).s("mode"), " mode");
    for (int64_t o = 0; o < out[k]; ++o) {
      int64_t i = o - shift, m;
      if (i >= 0 && i < dd) {
        m = i;
      } else if (mode == PadMode::Constant) {
        map[k].push_back(-1);
        continue;
      } else if (mode == PadMode::Edge) {
        m = std::clamp<int64_t>(i, 0, dd - 1);
      } else if (mode == PadMode::Wrap) {
        m = ((i % dd) + dd) % dd;
      } else if (dd == 1) {
        m = 0;
      } else {  // reflect: a triangle wave of period 2 * (dd - 1)
        int64_t period = 2 * (dd - 1);
        m = ((i % period) + period) % period;
        if (m >= dd) m = period - m;
      }
      map[k].push_back(lo + m);
    }
  }
  return {copy_mapped(x, out, map, fill)};
}

// ---------------------------------------------------------------- CenterCropPad

void infer_center_crop_pad(InferContext& c) {
  const TensorType& x = c.in(0);
  check_index_dtype(c.node, c.in(1).dtype, "shape");
  std::vector<int64_t> axes = op_attrs(c).ints("axes");
  if (!c.node.has_attr("axes"))
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  axes = normalize_axes(c.node, axes, x.rank());
  std::vector<int64_t> shape;
  TensorType t = x;
  bool known = constant_ints(c, 1, shape);
  if (known)
    TESSERA_CHECK(shape.size() == axes.size(), c.node.describe(), ": shape has ", shape.size(),
                  " entries for ", axes.size(), " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (known) TESSERA_CHECK(shape[i] >= 0, c.node.describe(), ": negative target size ", shape[i]);
    t.dims[static_cast<size_t>(axes[i])] = known ? shape[i] : -1;
  }
  c.out(0) = t;
}

std::vector<Tensor> run_center_crop_pad(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes = op_attrs(c).ints("axes");
  if (!c.node.has_attr("axes"))
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  axes = normalize_axes(c.node, axes, x.rank());
  std::vector<int64_t> shape = input_ints(c, 1);
  TESSERA_CHECK(shape.size() == axes.size(), c.node.describe(), ": shape has ", shape.size(), " entries for ",
                axes.size(), " axes");
  Dims out = x.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    TESSERA_CHECK(shape[i] >= 0, c.node.describe(), ": negative target size ", shape[i]);
    out[static_cast<size_t>(axes[i])] = shape[i];
  }
  numel_of(out);  // throws on absurd sizes before building the maps
  std::vector<std::vector<int64_t>> map(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t d = x.dims()[k], target = out[k];
    // Crop: window starting at floor((d - t) / 2). Pad: input starts at floor((t - d) / 2).
    int64_t shift = target <= d ? -(d - target) / 2 : (target - d) / 2;
    for (int64_t o = 0; o < target; ++o) {
      int64_t i = o - shift;
      map[k].push_back(i >= 0 && i < d ? i : -1);
    }
  }
  return {copy_mapped(x, out, map, Tensor())};
}

// ---------------------------------------------------------------- Expand / Tile

void infer_expand(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& s = c.in(1);
  TESSERA_CHECK(s.dtype == DType::I64 || s.dtype == DType::Undefined, c.node.describe(), ": shape must be int64");
  std::vector<int64_t> shape;
  if (constant_ints(c, 1, shape)) {
    for (int64_t v : shape) TESSERA_CHECK(v >= 0, c.node.describe(), ": invalid shape entry ", v);
    c.out(0) = {x.dtype, broadcast_dims(c.node, x.dims, shape), true};
  } else if (s.rank() == 1 && s.dims[0] >= 0) {
    size_t r = std::max(x.dims.size(), static_cast<size_t>(s.dims[0]));
    Dims d(r, -1);
    // A known input dim > 1 survives (the shape entry must be 1 or equal).
    for (size_t i = 0; i < x.dims.size(); ++i)
      if (x.dims[i] > 1) d[r - x.dims.size() + i] = x.dims[i];
    c.out(0) = {x.dtype, d, true};
  } else {
    c.out(0) = unknown_rank(x.dtype);
  }
}

std::vector<Tensor> run_expand(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> shape = input_ints(c, 1);
  for (int64_t v : shape) TESSERA_CHECK(v >= 0, c.node.describe(), ": invalid shape entry ", v);
  Dims out = broadcast_dims(c.node, x.dims(), shape);
  Dims xs = strides_of(x.dims()), st(out.size(), 0);
  size_t off = out.size() - x.dims().size();
  for (size_t i = 0; i < x.dims().size(); ++i) st[off + i] = x.dims()[i] == 1 ? 0 : xs[i];
  Tensor y(x.dtype(), out);
  copy_strided(x, y, 0, st);
  return {y};
}

// Tile before opset 6: inputs (input, tiles, axis) with scalar tiles and axis;
// the input is repeated `tiles` times along `axis`. Returns false when either
// is not known (inference only).
bool legacy_tile_repeats(const Node& n, const Tensor* tiles, const Tensor* axis, int64_t rank,
                         std::vector<int64_t>& rep) {
  TESSERA_CHECK(n.inputs.size() == 3, n.describe(), ": before opset 6 Tile takes inputs (input, tiles, axis)");
  if (!tiles || !axis) return false;
  TESSERA_CHECK(tiles->numel() == 1 && axis->numel() == 1 && tiles->dtype() != DType::String &&
                    axis->dtype() != DType::String,
                n.describe(), ": tiles and axis must be numeric scalars");
  // Opset 1 typed them like the data (float); they must hold whole numbers.
  auto whole = [&n](const Tensor& t, const char* what) {
    double v = t.get_double(0);
    TESSERA_CHECK(std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9e15, n.describe(), ": ", what,
                  " must be a whole number, got ", v);
    return static_cast<int64_t>(v);
  };
  int64_t a = normalize_axis(n, whole(*axis, "axis"), rank);
  rep.assign(static_cast<size_t>(rank), 1);
  rep[static_cast<size_t>(a)] = whole(*tiles, "tiles");
  return true;
}

void infer_tile(InferContext& c) {
  const TensorType& x = c.in(0);
  if (c.opset < 6) {
    std::vector<int64_t> rep;
    TensorType t = x;
    bool known = legacy_tile_repeats(c.node, c.value(1), c.value(2), x.rank(), rep);
    for (size_t k = 0; k < t.dims.size(); ++k) {
      if (!known) {
        t.dims[k] = -1;
        continue;
      }
      TESSERA_CHECK(rep[k] >= 0, c.node.describe(), ": negative repeat ", rep[k]);
      if (t.dims[k] >= 0) t.dims[k] *= rep[k];
    }
    c.out(0) = t;
    return;
  }
  TESSERA_CHECK(c.in(1).dtype == DType::I64 || c.in(1).dtype == DType::Undefined, c.node.describe(),
                ": repeats must be int64");
  std::vector<int64_t> rep;
  TensorType t = x;
  if (!constant_ints(c, 1, rep)) {
    std::fill(t.dims.begin(), t.dims.end(), -1);
    c.out(0) = t;
    return;
  }
  TESSERA_CHECK(static_cast<int64_t>(rep.size()) == x.rank(), c.node.describe(), ": repeats has ", rep.size(),
                " entries but the input has rank ", x.rank());
  for (size_t k = 0; k < rep.size(); ++k) {
    TESSERA_CHECK(rep[k] >= 0, c.node.describe(), ": negative repeat ", rep[k]);
    if (t.dims[k] >= 0) t.dims[k] *= rep[k];
  }
  c.out(0) = t;
}

std::vector<Tensor> run_tile(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> rep;
  if (c.opset < 6)
    legacy_tile_repeats(c.node, &c.in(1), &c.in(2), x.rank(), rep);
  else
    rep = input_ints(c, 1);
  TESSERA_CHECK(static_cast<int64_t>(rep.size()) == x.rank(), c.node.describe(), ": repeats has ", rep.size(),
                " entries but the input has rank ", x.rank());
  Dims out = x.dims();
  for (size_t k = 0; k < out.size(); ++k) {
    TESSERA_CHECK(rep[k] >= 0, c.node.describe(), ": negative repeat ", rep[k]);
    TESSERA_CHECK(out[k] == 0 || rep[k] <= (int64_t{1} << 40) / out[k], c.node.describe(), ": repeat ", rep[k],
                  " is too large");
    out[k] *= rep[k];
  }
  numel_of(out);  // throws on absurd sizes before allocating
  std::vector<std::vector<int64_t>> map(out.size());
  for (size_t k = 0; k < out.size(); ++k)
    for (int64_t o = 0; o < out[k]; ++o) map[k].push_back(o % x.dims()[k]);
  return {copy_mapped(x, out, map, Tensor())};
}

}  // namespace

void register_tensor_pad_ops(OpRegistry& r) {
  // Pad copies each input element to one output position (plus fill values),
  // like Slice: one-to-one. It is linear in the data only when the fill value
  // is 0, so no linear inputs are claimed.
  r.add({.name = "Pad", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = infer_pad, .reference = run_pad, .flops = zero_flops,
         .attributes = {string_attr("mode", "constant"), ints_attr("pads"), float_attr("value", 0.0f),
                        ints_attr("paddings")}});
  r.add({.name = "CenterCropPad", .min_opset = 18, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_center_crop_pad, .reference = run_center_crop_pad, .flops = zero_flops,
         .attributes = {ints_attr("axes", {})}});
  r.add({.name = "Expand", .min_opset = 8, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_expand, .reference = run_expand, .flops = zero_flops});
  r.add({.name = "Tile", .min_opset = 1, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_tile, .reference = run_tile, .flops = zero_flops});
}

}  // namespace tessera
