// Ops that join or cut along axes: Concat, Split, Slice.
#include <algorithm>
#include <limits>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"
#include "support/int_div.h"

namespace tessera {

namespace {

// ---------------------------------------------------------------- Concat

// `axis` is required since opset 4; before, it defaulted to 1.
int64_t concat_axis(const Node& n, int64_t opset) { return OpAttrs(n, opset).i("axis"); }

void infer_concat(InferContext& c) {
  TESSERA_CHECK(c.num_inputs() >= 1, c.node.describe(), ": needs at least one input");
  check_same_dtype(c.node, c.input_types);
  const TensorType& first = c.in(0);
  TESSERA_CHECK(first.rank() >= 1, c.node.describe(), ": inputs must have rank >= 1");
  int64_t axis = normalize_axis(c.node, concat_axis(c.node, c.opset), first.rank());
  Dims d = first.dims;
  for (int i = 1; i < c.num_inputs(); ++i) {
    const TensorType& t = c.in(i);
    TESSERA_CHECK(t.rank() == first.rank(), c.node.describe(), ": input ", i, " has rank ", t.rank(),
                  " but input 0 has rank ", first.rank());
    for (size_t k = 0; k < d.size(); ++k) {
      if (static_cast<int64_t>(k) == axis)
        d[k] = (d[k] < 0 || t.dims[k] < 0) ? -1 : d[k] + t.dims[k];
      else
        d[k] = merge_dim(c.node, d[k], t.dims[k], "inputs differ outside the concat axis");
    }
  }
  c.out(0) = {first.dtype, d, true};
}

std::vector<Tensor> run_concat(const KernelContext& c) {
  TESSERA_CHECK(c.num_inputs() >= 1, c.node.describe(), ": needs at least one input");
  const Tensor& first = c.in(0);
  TESSERA_CHECK(first.rank() >= 1, c.node.describe(), ": inputs must have rank >= 1");
  int64_t axis = normalize_axis(c.node, concat_axis(c.node, c.opset), first.rank());
  Dims d = first.dims();
  d[static_cast<size_t>(axis)] = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Tensor& t = c.in(i);
    TESSERA_CHECK(t.dtype() == first.dtype(), c.node.describe(), ": inputs have different element types");
    TESSERA_CHECK(t.rank() == first.rank(), c.node.describe(), ": input ", i, " has rank ", t.rank(),
                  " but input 0 has rank ", first.rank());
    for (int64_t k = 0; k < t.rank(); ++k)
      TESSERA_CHECK(k == axis || t.dim(k) == first.dim(k), c.node.describe(), ": input ", i, " has shape ",
                    dims_to_string(t.dims()), " which differs from ", dims_to_string(first.dims()),
                    " outside axis ", axis);
    d[static_cast<size_t>(axis)] += t.dim(axis);
  }
  Tensor y(first.dtype(), d);
  int64_t outer = known_product(d, 0, static_cast<size_t>(axis));
  int64_t out_block = known_product(d, static_cast<size_t>(axis), d.size());
  dispatch_storage(first.dtype(), [&]<class W>() {
    W* o = elems<W>(y);
    int64_t offset = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const Tensor& t = c.in(i);
      const W* s = elems<W>(t);
      int64_t block = known_product(t.dims(), static_cast<size_t>(axis), t.dims().size());
      for (int64_t b = 0; b < outer; ++b)
        for (int64_t j = 0; j < block; ++j) o[b * out_block + offset + j] = s[b * block + j];
      offset += block;
    }
  });
  return {y};
}

// ---------------------------------------------------------------- Split

// The sizes come from input 1 from opset 13 on, and in opset 1 (where either
// input 1 or the `split` attribute could give them).
bool split_from_input(int64_t opset) { return opset >= 13 || opset < 2; }

// Sizes of the pieces along the axis (dim may be -1 at inference, giving
// -1 sizes unless the split is explicit). `split_known` false: the split
// input is not a constant (inference only).
std::vector<int64_t> split_sizes(const Node& n, int64_t opset, int64_t dim, int num_outputs,
                                 const std::vector<int64_t>* split) {
  if (split) {
    TESSERA_CHECK(static_cast<int>(split->size()) == num_outputs, n.describe(), ": split has ", split->size(),
                  " entries but the node has ", num_outputs, " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      TESSERA_CHECK(s >= 0, n.describe(), ": split sizes must be non-negative, got ", s);
      sum += s;
    }
    TESSERA_CHECK(dim < 0 || sum == dim, n.describe(), ": split sizes sum to ", sum, " but the axis has size ", dim);
    return *split;
  }
  if (opset >= 18 && n.has_attr("num_outputs")) {
    int64_t k = OpAttrs(n, opset).i("num_outputs");
    TESSERA_CHECK(k == num_outputs, n.describe(), ": num_outputs is ", k, " but the node has ", num_outputs,
                  " outputs");
  }
  TESSERA_CHECK(num_outputs >= 1, n.describe(), ": needs at least one output");
  std::vector<int64_t> sizes(static_cast<size_t>(num_outputs), -1);
  if (dim < 0) return sizes;
  if (opset >= 18) {
    // Chunks of ceil(dim / n); the last one may be smaller.
    int64_t chunk = ceil_div(dim, num_outputs);
    int64_t left = dim;
    for (auto& s : sizes) {
      s = std::min(chunk, left);
      left -= s;
    }
    TESSERA_CHECK(chunk * (num_outputs - 1) <= dim, n.describe(), ": cannot split ", dim, " elements into ",
                  num_outputs, " chunks of ", chunk);
  } else {
    TESSERA_CHECK(dim % num_outputs == 0, n.describe(), ": axis of size ", dim, " cannot be split evenly into ",
                  num_outputs, " outputs");
    for (auto& s : sizes) s = dim / num_outputs;
  }
  return sizes;
}

void infer_split(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  int64_t dim = x.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> split;
  const std::vector<int64_t>* sp = nullptr;
  bool unknown = false;
  if (c.opset < 13 && c.node.has_attr("split")) {
    split = op_attrs(c).ints("split");
    sp = &split;
  } else if (split_from_input(c.opset) && c.has_input(1)) {
    if (constant_ints(c, 1, split))
      sp = &split;
    else
      unknown = true;
  }
  std::vector<int64_t> sizes = unknown ? std::vector<int64_t>(static_cast<size_t>(c.num_outputs()), -1)
                                       : split_sizes(c.node, c.opset, dim, c.num_outputs(), sp);
  for (int i = 0; i < c.num_outputs(); ++i) {
    TensorType t = x;
    t.dims[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(i)];
    c.out(i) = t;
  }
}

std::vector<Tensor> run_split(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  std::vector<int64_t> split;
  const std::vector<int64_t>* sp = nullptr;
  if (c.opset < 13 && c.node.has_attr("split")) {
    split = op_attrs(c).ints("split");
    sp = &split;
  } else if (split_from_input(c.opset) && c.has_input(1)) {
    split = input_ints(c, 1);
    sp = &split;
  }
  std::vector<int64_t> sizes = split_sizes(c.node, c.opset, x.dim(axis), c.num_outputs(), sp);
  Dims xs = strides_of(x.dims());
  std::vector<Tensor> outs;
  int64_t start = 0;
  for (int64_t s : sizes) {
    Dims d = x.dims();
    d[static_cast<size_t>(axis)] = s;
    Tensor y(x.dtype(), d);
    copy_strided(x, y, start * xs[static_cast<size_t>(axis)], xs);
    outs.push_back(y);
    start += s;
  }
  return outs;
}

// ---------------------------------------------------------------- Slice

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
  bool known = true;  // false: some argument is a non-constant input (inference)
};

// Reads starts/ends/axes/steps from attributes (opset < 10) or inputs; for
// inference `ic` is set and non-constant inputs make the result unknown.
SliceArgs slice_args(const Node& n, int64_t opset, int64_t rank, const InferContext* ic, const KernelContext* kc) {
  SliceArgs a;
  if (opset < 10) {
    a.starts = OpAttrs(n, opset).ints("starts");
    a.ends = OpAttrs(n, opset).ints("ends");
    a.axes = OpAttrs(n, opset).ints("axes");
    if (!n.has_attr("axes"))
      for (size_t i = 0; i < a.starts.size(); ++i) a.axes.push_back(static_cast<int64_t>(i));
  } else {
    auto get = [&](int i, std::vector<int64_t>& v) -> bool {  // true if present
      if (ic) {
        if (!ic->has_input(i)) return false;
        check_index_dtype(n, ic->in(i).dtype, "starts/ends/axes/steps");
        if (!constant_ints(*ic, i, v)) a.known = false;
        return true;
      }
      if (!kc->has_input(i)) return false;
      check_index_dtype(n, kc->in(i).dtype(), "starts/ends/axes/steps");
      v = kc->in(i).to_int_vector();
      return true;
    };
    TESSERA_CHECK(get(1, a.starts) && get(2, a.ends), n.describe(), ": starts and ends are required");
    bool has_axes = get(3, a.axes);
    bool has_steps = get(4, a.steps);
    if (!a.known) return a;
    if (!has_axes)
      for (size_t i = 0; i < a.starts.size(); ++i) a.axes.push_back(static_cast<int64_t>(i));
    if (!has_steps) a.steps.assign(a.starts.size(), 1);
  }
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  TESSERA_CHECK(a.ends.size() == a.starts.size() && a.axes.size() == a.starts.size() &&
                    a.steps.size() == a.starts.size(),
                n.describe(), ": starts, ends, axes and steps must have the same length (", a.starts.size(), ", ",
                a.ends.size(), ", ", a.axes.size(), ", ", a.steps.size(), ")");
  a.axes = normalize_axes(n, a.axes, rank);
  for (int64_t s : a.steps) TESSERA_CHECK(s != 0, n.describe(), ": slice step cannot be 0");
  return a;
}

// Clamped start and element count of one sliced axis of size dim.
std::pair<int64_t, int64_t> slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t len;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    len = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    int64_t neg = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    len = start > end ? (start - end - 1) / neg + 1 : 0;
  }
  return {start, len};
}

void infer_slice(InferContext& c) {
  const TensorType& x = c.in(0);
  SliceArgs a = slice_args(c.node, c.opset, x.rank(), &c, nullptr);
  TensorType t = x;
  if (!a.known) {
    // Unknown axes: any dim may change. Known axes with unknown bounds: only those.
    std::vector<int64_t> axes;
    if (c.opset >= 10 && c.has_input(3) && constant_ints(c, 3, axes)) {
      for (int64_t ax : normalize_axes(c.node, axes, x.rank())) t.dims[static_cast<size_t>(ax)] = -1;
    } else {
      std::fill(t.dims.begin(), t.dims.end(), -1);
    }
    c.out(0) = t;
    return;
  }
  for (size_t i = 0; i < a.axes.size(); ++i) {
    int64_t& d = t.dims[static_cast<size_t>(a.axes[i])];
    if (d >= 0) d = slice_axis(d, a.starts[i], a.ends[i], a.steps[i]).second;
  }
  c.out(0) = t;
}

std::vector<Tensor> run_slice(const KernelContext& c) {
  const Tensor& x = c.in(0);
  SliceArgs a = slice_args(c.node, c.opset, x.rank(), nullptr, &c);
  Dims d = x.dims(), st = strides_of(x.dims());
  int64_t base = 0;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    size_t ax = static_cast<size_t>(a.axes[i]);
    auto [start, len] = slice_axis(d[ax], a.starts[i], a.ends[i], a.steps[i]);
    d[ax] = len;
    if (len > 0) base += start * st[ax];
    // With one element or none the stride is never applied (and step may be huge).
    st[ax] = len > 1 ? st[ax] * a.steps[i] : 0;
  }
  Tensor y(x.dtype(), d);
  copy_strided(x, y, base, st);
  return {y};
}

}  // namespace

void register_tensor_concat_ops(OpRegistry& r) {
  r.add({.name = "Concat", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = infer_concat, .reference = run_concat, .flops = zero_flops,
         .attributes = {int_attr("axis", 1).required_from(4)}});
  r.add({.name = "Split", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_split, .reference = run_split, .flops = zero_flops,
         .attributes = {int_attr("axis", 0), ints_attr("split", {}), int_attr("num_outputs")}});
  r.add({.name = "Slice", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_slice, .reference = run_slice, .flops = zero_flops,
         .attributes = {ints_attr("starts"), ints_attr("ends"), ints_attr("axes", {})}});
}

}  // namespace tessera
