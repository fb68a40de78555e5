// Shape-only ops: Reshape, Flatten, Squeeze, Unsqueeze (reorganize the same
// elements under new dims), and Shape, Size, Identity.
#include <algorithm>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// ---------------------------------------------------------------- Reshape

// Output dims of Reshape from the input dims (-1 = unknown) and the requested
// shape; 0 copies the input dim unless allowzero, one -1 is inferred.
Dims reshape_dims(const Node& n, const Dims& in, const std::vector<int64_t>& shape, bool allowzero) {
  Dims out(shape.size());
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == 0 && !allowzero) {
      TESSERA_CHECK(i < in.size(), n.describe(), ": shape entry ", i, " is 0 (copy the input dim) but the input has rank ",
                    in.size());
      out[i] = in[i];
    } else if (s == -1) {
      TESSERA_CHECK(infer_at < 0, n.describe(), ": the shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      out[i] = -1;
    } else {
      TESSERA_CHECK(s >= 0, n.describe(), ": invalid shape entry ", s);
      if (s == 0) has_zero = true;
      out[i] = s;
    }
  }
  TESSERA_CHECK(!(has_zero && infer_at >= 0), n.describe(), ": with allowzero=1 the shape cannot hold both 0 and -1");
  int64_t total = known_product(in, 0, in.size());
  if (infer_at >= 0) {
    int64_t rest = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int64_t>(i) != infer_at) rest = (rest < 0 || out[i] < 0) ? -1 : rest * out[i];
    if (total >= 0 && rest >= 0) {
      TESSERA_CHECK(rest > 0, n.describe(), ": cannot infer the -1 dim of shape when the other dims multiply to 0");
      TESSERA_CHECK(total % rest == 0, n.describe(), ": cannot reshape ", dims_to_string(in), " (", total,
                    " elements) with -1 and the other dims multiplying to ", rest);
      out[static_cast<size_t>(infer_at)] = total / rest;
    }
  } else {
    int64_t prod = known_product(out, 0, out.size());
    if (total >= 0 && prod >= 0)
      TESSERA_CHECK(total == prod, n.describe(), ": cannot reshape ", dims_to_string(in), " to ",
                    dims_to_string(out), " (element counts differ)");
  }
  return out;
}

// Before opset 5 the shape is the `shape` attribute and the node has one input
// (plus the no-op hint `consumed_inputs`).
bool legacy_reshape(const Node& n, int64_t opset) {
  if (opset >= 5) {
    TESSERA_CHECK(!n.has_attr("shape") && !n.has_attr("consumed_inputs"), n.describe(),
                  ": attributes 'shape' and 'consumed_inputs' exist only before opset 5");
    return false;
  }
  TESSERA_CHECK(n.inputs.size() == 1, n.describe(),
                ": before opset 5 Reshape takes one input and the 'shape' attribute");
  return true;
}

void infer_reshape(InferContext& c) {
  const TensorType& x = c.in(0);
  if (legacy_reshape(c.node, c.opset)) {
    c.out(0) = {x.dtype, reshape_dims(c.node, x.dims, op_attrs(c).ints("shape"), false), true};
    return;
  }
  const TensorType& s = c.in(1);
  TESSERA_CHECK(s.dtype == DType::I64 || s.dtype == DType::Undefined, c.node.describe(),
                ": the shape input must be int64, got ", dtype_name(s.dtype));
  std::vector<int64_t> shape;
  if (constant_ints(c, 1, shape)) {
    c.out(0) = {x.dtype, reshape_dims(c.node, x.dims, shape, op_attrs(c).i("allowzero") != 0), true};
  } else if (s.rank() == 1 && s.dims[0] >= 0) {
    c.out(0) = {x.dtype, Dims(static_cast<size_t>(s.dims[0]), -1), true};
  } else {
    c.out(0) = unknown_rank(x.dtype);
  }
}

std::vector<Tensor> run_reshape(const KernelContext& c) {
  const Tensor& x = c.in(0);
  if (legacy_reshape(c.node, c.opset))
    return {copy_reshaped(x, reshape_dims(c.node, x.dims(), op_attrs(c).ints("shape"), false))};
  Dims d = reshape_dims(c.node, x.dims(), input_ints(c, 1), op_attrs(c).i("allowzero") != 0);
  return {copy_reshaped(x, d)};
}

// ---------------------------------------------------------------- Flatten

int64_t flatten_axis(const OpAttrs& attrs, int64_t rank) {
  const Node& n = attrs.node();
  int64_t axis = attrs.i("axis");
  TESSERA_CHECK(axis >= -rank && axis <= rank, n.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

void infer_flatten(InferContext& c) {
  const TensorType& x = c.in(0);
  size_t a = static_cast<size_t>(flatten_axis(op_attrs(c), x.rank()));
  c.out(0) = {x.dtype, {known_product(x.dims, 0, a), known_product(x.dims, a, x.dims.size())}, true};
}

std::vector<Tensor> run_flatten(const KernelContext& c) {
  const Tensor& x = c.in(0);
  size_t a = static_cast<size_t>(flatten_axis(op_attrs(c), x.rank()));
  return {copy_reshaped(x, {known_product(x.dims(), 0, a), known_product(x.dims(), a, x.dims().size())})};
}

// ---------------------------------------------------------------- Squeeze / Unsqueeze

// Axes from the attribute (opset < 13) or input 1 (opset >= 13). Returns
// false when they come from a non-constant input (inference only).
bool squeeze_axes(const InferContext* ic, const KernelContext* kc, std::vector<int64_t>& axes, bool& given) {
  const Node& n = ic ? ic->node : kc->node;
  int64_t opset = ic ? ic->opset : kc->opset;
  if (opset < 13) {
    given = n.has_attr("axes");
    axes = OpAttrs(n, opset).ints("axes");
    return true;
  }
  given = ic ? ic->has_input(1) : kc->has_input(1);
  if (!given) return true;
  if (kc) {
    axes = input_ints(*kc, 1);
    return true;
  }
  return constant_ints(*ic, 1, axes);
}

Dims squeeze_dims(const Node& n, const Dims& in, const std::vector<int64_t>& axes, bool given, bool& rank_known) {
  rank_known = true;
  Dims out;
  if (!given) {
    for (int64_t d : in) {
      if (d < 0) rank_known = false;
      if (d != 1) out.push_back(d);
    }
    return out;
  }
  std::vector<int64_t> ax = normalize_axes(n, axes, static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) != ax.end()) {
      TESSERA_CHECK(in[i] == 1 || in[i] < 0, n.describe(), ": cannot squeeze axis ", i, " of size ", in[i]);
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

void infer_squeeze(InferContext& c) {
  const TensorType& x = c.in(0);
  std::vector<int64_t> axes;
  bool given = false;
  if (!squeeze_axes(&c, nullptr, axes, given)) {
    const TensorType& a = c.in(1);
    if (a.rank() == 1 && a.dims[0] >= 0 && x.rank() >= a.dims[0])
      c.out(0) = {x.dtype, Dims(static_cast<size_t>(x.rank() - a.dims[0]), -1), true};
    else
      c.out(0) = unknown_rank(x.dtype);
    return;
  }
  bool rank_known = true;
  Dims d = squeeze_dims(c.node, x.dims, axes, given, rank_known);
  c.out(0) = rank_known ? TensorType{x.dtype, d, true} : unknown_rank(x.dtype);
}

std::vector<Tensor> run_squeeze(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes;
  bool given = false, rank_known = true;
  squeeze_axes(nullptr, &c, axes, given);
  return {copy_reshaped(x, squeeze_dims(c.node, x.dims(), axes, given, rank_known))};
}

Dims unsqueeze_dims(const Node& n, const Dims& in, const std::vector<int64_t>& axes) {
  int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::vector<int64_t> ax = normalize_axes(n, axes, r);
  Dims out(static_cast<size_t>(r), 1);
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i)
    if (std::find(ax.begin(), ax.end(), i) == ax.end()) out[static_cast<size_t>(i)] = in[k++];
  return out;
}

void infer_unsqueeze(InferContext& c) {
  const TensorType& x = c.in(0);
  std::vector<int64_t> axes;
  bool given = false;
  if (!squeeze_axes(&c, nullptr, axes, given)) {
    const TensorType& a = c.in(1);
    if (a.rank() == 1 && a.dims[0] >= 0)
      c.out(0) = {x.dtype, Dims(static_cast<size_t>(x.rank() + a.dims[0]), -1), true};
    else
      c.out(0) = unknown_rank(x.dtype);
    return;
  }
  TESSERA_CHECK(given, c.node.describe(), ": axes are required");
  c.out(0) = {x.dtype, unsqueeze_dims(c.node, x.dims, axes), true};
}

std::vector<Tensor> run_unsqueeze(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> axes;
  bool given = false;
  squeeze_axes(nullptr, &c, axes, given);
  TESSERA_CHECK(given, c.node.describe(), ": axes are required");
  return {copy_reshaped(x, unsqueeze_dims(c.node, x.dims(), axes))};
}

// ---------------------------------------------------------------- Shape / Size / Identity

}  // namespace

// [start, end) of Shape's slice of the dims (opset 15 attributes), clamped.
std::pair<int64_t, int64_t> shape_range(const OpAttrs& attrs, int64_t r) {
  int64_t start = attrs.i("start"), end = attrs.has("end") ? attrs.i("end") : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return {start, std::max(start, end)};
}

namespace {

void infer_shape(InferContext& c) {
  auto [s, e] = shape_range(op_attrs(c), c.in(0).rank());
  c.out(0) = {DType::I64, {e - s}, true};
}

std::vector<Tensor> run_shape(const KernelContext& c) {
  const Tensor& x = c.in(0);
  auto [s, e] = shape_range(op_attrs(c), x.rank());
  std::vector<int64_t> v(x.dims().begin() + s, x.dims().begin() + e);
  return {Tensor::from<int64_t>({e - s}, v)};
}

}  // namespace

void register_tensor_shape_ops(OpRegistry& r) {
  r.add({.name = "Reshape", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {0},
         .infer = infer_reshape, .reference = run_reshape, .flops = zero_flops,
         .attributes = {int_attr("allowzero", 0), ints_attr("shape"), ints_attr("consumed_inputs")}});
  r.add({.name = "Flatten", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {0},
         .infer = infer_flatten, .reference = run_flatten, .flops = zero_flops, .attributes = {int_attr("axis", 1)}});
  r.add({.name = "Squeeze", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {0},
         .infer = infer_squeeze, .reference = run_squeeze, .flops = zero_flops, .attributes = {ints_attr("axes", {})}});
  r.add({.name = "Unsqueeze", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {0},
         .infer = infer_unsqueeze, .reference = run_unsqueeze, .flops = zero_flops,
         .attributes = {ints_attr("axes", {})}});
  // Shape and Size read only the dims: no element of the input reaches the
  // output, closest to a reorganisation of metadata.
  r.add({.name = "Shape", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {},
         .infer = infer_shape, .reference = run_shape, .flops = zero_flops,
         .attributes = {int_attr("start", 0), int_attr("end")}});
  r.add({.name = "Size", .min_opset = 1, .mapping = MappingType::Reorganize, .linear_inputs = {},
         .infer = [](InferContext& c) { c.out(0) = {DType::I64, {}, true}; },
         .reference = [](const KernelContext& c) { return std::vector<Tensor>{Tensor::scalar<int64_t>(c.in(0).numel())}; },
         .flops = zero_flops});
  r.add({.name = "Identity", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_same_as_input0,
         .reference = [](const KernelContext& c) { return std::vector<Tensor>{c.in(0).clone()}; },
         .flops = zero_flops});
}

}  // namespace tessera
