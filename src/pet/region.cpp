// Region back-propagation, op by op (see region.h). Every plan keeps one
// invariant: each element of the box is computed by the new node from the
// same input elements, padding positions and attributes as in the original
// node, so the box's values are the original's.
#include "pet/region.h"

#include <algorithm>

#include "ops/nn_conv.h"
#include "ops/nn_ops.h"
#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"
#include "support/error.h"
#include "support/int_div.h"

namespace tessera::pet {

namespace {

const Dims& dims_of(const Node& n, const Value* v) {
  TESSERA_CHECK(v && v->type.fully_known(), "pet corrector: ", n.describe(), ": types must be inferred and static");
  return v->type.dims;
}

const Dims& in_dims(const Node& n, int i) { return dims_of(n, n.inputs[static_cast<size_t>(i)]); }
const Dims& out_dims(const Node& n, int i) { return dims_of(n, n.outputs[static_cast<size_t>(i)]); }

Tensor ints_tensor(const std::vector<int64_t>& v) {
  return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// The node's constant integer input i (Slice's starts, Pad's pads, ...).
std::vector<int64_t> const_ints(const Node& n, int i) {
  const Value* v = n.inputs[static_cast<size_t>(i)];
  TESSERA_CHECK(v && v->is_constant(), "pet corrector: ", n.describe(), ": input ", i,
                " must be a constant to restrict the op to a box");
  return v->constant->to_int_vector();
}

// Every input whole, the whole output produced: the caller slices the box out.
RestrictPlan whole_plan(const Node& n, int output) {
  RestrictPlan p;
  p.op_type = n.op_type;
  p.attrs = n.attrs;
  for (int i = 0; i < n.num_inputs(); ++i)
    p.operands.push_back(n.has_input(i) ? Operand::region(i, whole_box(in_dims(n, i))) : Operand::absent());
  p.produced = whole_box(out_dims(n, output));
  return p;
}

// Every input operand whole except the ones set afterwards.
RestrictPlan same_op(const Node& n) {
  RestrictPlan p;
  p.op_type = n.op_type;
  p.attrs = n.attrs;
  for (int i = 0; i < n.num_inputs(); ++i)
    p.operands.push_back(n.has_input(i) ? Operand::region(i, whole_box(in_dims(n, i))) : Operand::absent());
  return p;
}

void set_range(Box& b, int64_t d, int64_t lo, int64_t hi) {
  b.lo[static_cast<size_t>(d)] = lo;
  b.hi[static_cast<size_t>(d)] = hi;
}

// Spatial dims of a forward window op: the input range each output range
// needs, clipped to the input, and the pads the clipped part leaves. False
// when some window lies wholly in the padding (no input element to slice).
bool window_regions(const Box& want, const Dims& x, const std::vector<int64_t>& kernel,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<int64_t>& pads, Box& xbox, std::vector<int64_t>& new_pads) {
  const size_t nsp = kernel.size();
  new_pads.assign(2 * nsp, 0);
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t lo = want.lo[2 + i], hi = want.hi[2 + i];
    const int64_t start = lo * strides[i] - pads[i];
    const int64_t end = (hi - 1) * strides[i] - pads[i] + (kernel[i] - 1) * dilations[i] + 1;
    const int64_t in_lo = std::max<int64_t>(0, start), in_hi = std::min(x[2 + i], end);
    if (in_lo >= in_hi) return false;
    set_range(xbox, static_cast<int64_t>(2 + i), in_lo, in_hi);
    new_pads[i] = in_lo - start;
    new_pads[nsp + i] = end - in_hi;
  }
  return true;
}

RestrictPlan plan_conv(const Node& n, const Box& want, int64_t opset) {
  const Dims& x = in_dims(n, 0);
  const Dims& w = in_dims(n, 1);
  const ConvShape cs = conv_shape(OpAttrs(n, opset), x, w);
  RestrictPlan p = same_op(n);
  Box xbox = whole_box(x);
  std::vector<int64_t> new_pads;
  if (!window_regions(want, x, cs.attrs.kernel, cs.attrs.strides, cs.attrs.dilations, cs.pads, xbox, new_pads))
    return whole_plan(n, 0);
  set_range(xbox, 0, want.lo[0], want.hi[0]);
  // Output channels: with groups, whole groups (their input channels and
  // weight rows); the caller slices the box's channels out.
  const int64_t Mg = cs.M / cs.group, Cg = cs.C / cs.group;
  const int64_t g0 = want.lo[1] / Mg, g1 = ceil_div(want.hi[1], Mg);
  const int64_t m0 = cs.group == 1 ? want.lo[1] : g0 * Mg, m1 = cs.group == 1 ? want.hi[1] : g1 * Mg;
  if (cs.group > 1) set_range(xbox, 1, g0 * Cg, g1 * Cg);
  Box wbox = whole_box(w);
  set_range(wbox, 0, m0, m1);
  p.operands[0].box = xbox;
  p.operands[1].box = wbox;
  if (n.has_input(2)) p.operands[2].box = Box{{m0}, {m1}};
  p.attrs.erase("auto_pad");
  p.attrs["pads"] = Attribute::of_ints(new_pads);
  if (cs.group > 1) p.attrs["group"] = Attribute::of_int(g1 - g0);
  p.produced = want;
  set_range(p.produced, 1, m0, m1);
  p.batch_operand = 0;
  p.batch_axis = 0;
  p.out_axis = 0;
  return p;
}

RestrictPlan plan_pool(const Node& n, int output, const Box& want, int64_t opset) {
  const Dims& x = in_dims(n, 0);
  if (output != 0) return whole_plan(n, output);
  const OpAttrs oa(n, opset);
  const WindowAttrs a = read_window_attrs(oa, static_cast<int64_t>(x.size()) - 2, {}, true);
  if (a.ceil_mode) return whole_plan(n, output);  // the last window may pass the pads: not restricted
  std::vector<int64_t> pads;
  window_output_dims(n, a, Dims(x.begin() + 2, x.end()), &pads);
  std::vector<int64_t> dil = a.dilations.empty() ? std::vector<int64_t>(a.kernel.size(), 1) : a.dilations;
  Box xbox = whole_box(x);
  std::vector<int64_t> new_pads;
  if (!window_regions(want, x, a.kernel, a.strides, dil, pads, xbox, new_pads)) return whole_plan(n, output);
  set_range(xbox, 0, want.lo[0], want.hi[0]);
  set_range(xbox, 1, want.lo[1], want.hi[1]);
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.attrs.erase("auto_pad");
  p.attrs["pads"] = Attribute::of_ints(new_pads);
  p.produced = want;
  return p;
}

// A broadcast operand's region: its dims of size 1 stay [0, 1), the others
// take the output's range (right-aligned).
Box broadcast_region(const Dims& in, const Box& want) {
  Box b = whole_box(in);
  const int64_t off = want.rank() - static_cast<int64_t>(in.size());
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (in[static_cast<size_t>(d)] != 1) set_range(b, d, want.lo[static_cast<size_t>(d + off)], want.hi[static_cast<size_t>(d + off)]);
  return b;
}

RestrictPlan plan_matmul(const Node& n, const Box& want) {
  const Dims& a = in_dims(n, 0);
  const Dims& b = in_dims(n, 1);
  if (a.size() < 2 || b.size() < 2) return whole_plan(n, 0);
  const int64_t ro = want.rank(), ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  // Batch dims broadcast; A keeps the output's rows and all of K, B all of K
  // and the output's columns.
  Box abox = broadcast_region(a, want), bbox = broadcast_region(b, want);
  set_range(abox, ra - 1, 0, a[static_cast<size_t>(ra - 1)]);
  set_range(abox, ra - 2, want.lo[static_cast<size_t>(ro - 2)], want.hi[static_cast<size_t>(ro - 2)]);
  set_range(bbox, rb - 2, 0, b[static_cast<size_t>(rb - 2)]);
  set_range(bbox, rb - 1, want.lo[static_cast<size_t>(ro - 1)], want.hi[static_cast<size_t>(ro - 1)]);
  RestrictPlan p = same_op(n);
  p.operands[0].box = abox;
  p.operands[1].box = bbox;
  p.produced = want;
  p.batch_operand = 0;
  p.batch_axis = ra - 2;
  p.out_axis = ro - 2;
  return p;
}

RestrictPlan plan_gemm(const Node& n, const Box& want, int64_t opset) {
  const OpAttrs oa(n, opset);
  const bool ta = oa.i("transA") != 0, tb = oa.i("transB") != 0;
  const Dims& a = in_dims(n, 0);
  const Dims& b = in_dims(n, 1);
  RestrictPlan p = same_op(n);
  Box abox = whole_box(a), bbox = whole_box(b);
  set_range(abox, ta ? 1 : 0, want.lo[0], want.hi[0]);
  set_range(bbox, tb ? 0 : 1, want.lo[1], want.hi[1]);
  p.operands[0].box = abox;
  p.operands[1].box = bbox;
  if (n.has_input(2)) p.operands[2].box = broadcast_region(in_dims(n, 2), want);
  p.produced = want;
  p.batch_operand = 0;
  p.batch_axis = ta ? 1 : 0;
  p.out_axis = 0;
  return p;
}

RestrictPlan plan_transpose(const Node& n, const Box& want, int64_t opset) {
  const Dims& x = in_dims(n, 0);
  std::vector<int64_t> perm;
  if (OpAttrs(n, opset).has("perm")) perm = OpAttrs(n, opset).ints("perm");
  if (perm.empty())
    for (int64_t d = static_cast<int64_t>(x.size()) - 1; d >= 0; --d) perm.push_back(d);
  Box xbox = whole_box(x);
  for (size_t i = 0; i < perm.size(); ++i) set_range(xbox, perm[i], want.lo[i], want.hi[i]);
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.produced = want;
  return p;
}

RestrictPlan plan_slice(const Node& n, const Box& want) {
  const Dims& x = in_dims(n, 0);
  const int64_t r = static_cast<int64_t>(x.size());
  const std::vector<int64_t> starts = const_ints(n, 1), ends = const_ints(n, 2);
  std::vector<int64_t> axes, steps;
  if (n.has_input(3)) axes = const_ints(n, 3);
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (n.has_input(4)) steps = const_ints(n, 4);
  else steps.assign(starts.size(), 1);
  // Per input dim: out index j reads in index start + j * step.
  std::vector<int64_t> first(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
    const int64_t dim = x[static_cast<size_t>(ax)], st = steps[i];
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    first[static_cast<size_t>(ax)] = s;
    step[static_cast<size_t>(ax)] = st;
  }
  Box xbox = whole_box(x);
  bool unit = true;
  std::vector<int64_t> lstarts, lends, laxes, lsteps;
  for (int64_t d = 0; d < r; ++d) {
    const size_t k = static_cast<size_t>(d);
    const int64_t a = first[k] + want.lo[k] * step[k], b = first[k] + (want.hi[k] - 1) * step[k];
    const int64_t lo = std::min(a, b), hi = std::max(a, b) + 1;
    set_range(xbox, d, lo, hi);
    if (step[k] != 1) {
      unit = false;
      const int64_t len = hi - lo;
      laxes.push_back(d);
      lsteps.push_back(step[k]);
      lstarts.push_back(step[k] > 0 ? 0 : len - 1);
      lends.push_back(step[k] > 0 ? len : -len - 1);
    }
  }
  RestrictPlan p;
  p.produced = want;
  p.operands.push_back(Operand::region(0, xbox));
  if (unit) return p;  // the box is the region itself
  p.op_type = "Slice";
  for (const auto& v : {lstarts, lends, laxes, lsteps}) p.operands.push_back(Operand::constant(ints_tensor(v)));
  return p;
}

RestrictPlan plan_pad(const Node& n, const Box& want, int64_t opset) {
  const Dims& x = in_dims(n, 0);
  const int64_t r = static_cast<int64_t>(x.size());
  if (OpAttrs(n, opset).s("mode") != "constant") return whole_plan(n, 0);
  const std::vector<int64_t> pads = const_ints(n, 1);
  std::vector<int64_t> axes;
  if (n.has_input(3)) axes = const_ints(n, 3);
  else for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  std::vector<int64_t> begin(static_cast<size_t>(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) begin[static_cast<size_t>(axes[i] < 0 ? axes[i] + r : axes[i])] = pads[i];
  RestrictPlan p;
  p.produced = want;
  Box xbox = whole_box(x);
  std::vector<int64_t> new_pads(static_cast<size_t>(2 * r), 0);
  bool inside = true, empty = false;
  for (int64_t d = 0; d < r; ++d) {
    const size_t k = static_cast<size_t>(d);
    const int64_t lo = want.lo[k] - begin[k], hi = want.hi[k] - begin[k];
    const int64_t in_lo = std::clamp<int64_t>(lo, 0, x[k]), in_hi = std::clamp<int64_t>(hi, 0, x[k]);
    if (in_lo >= in_hi) empty = true;
    set_range(xbox, d, in_lo, in_hi);
    new_pads[k] = in_lo - lo;
    new_pads[k + static_cast<size_t>(r)] = hi - in_hi;
    inside = inside && in_lo == lo && in_hi == hi;
  }
  if (empty) {  // the box lies wholly in the padding: the pad value
    p.op_type = "Fill";
    if (n.has_input(2)) {
      const Value* cv = n.inputs[2];
      TESSERA_CHECK(cv->is_constant(), "pet corrector: ", n.describe(), ": constant_value must be a constant");
      p.fill_value = static_cast<float>(cv->constant->get_double(0));
    }
    return p;
  }
  p.operands.push_back(Operand::region(0, xbox));
  if (inside) return p;
  p.op_type = "Pad";
  p.attrs = n.attrs;
  p.operands.push_back(Operand::constant(ints_tensor(new_pads)));
  p.operands.push_back(n.has_input(2) ? Operand::region(2, whole_box(in_dims(n, 2))) : Operand::absent());
  return p;
}

int64_t norm_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

RestrictPlan plan_concat(const Node& n, const Box& want, int64_t opset) {
  const int64_t r = want.rank();
  const int64_t axis = norm_axis(OpAttrs(n, opset).i("axis"), r);
  RestrictPlan p;
  p.produced = want;
  int64_t off = 0;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Dims& d = in_dims(n, i);
    const int64_t len = d[static_cast<size_t>(axis)];
    const int64_t lo = std::max(want.lo[static_cast<size_t>(axis)], off);
    const int64_t hi = std::min(want.hi[static_cast<size_t>(axis)], off + len);
    if (lo < hi) {
      Box b = want;
      set_range(b, axis, lo - off, hi - off);
      p.operands.push_back(Operand::region(i, b));
    }
    off += len;
  }
  if (p.operands.size() > 1) {
    p.op_type = "Concat";
    p.attrs["axis"] = Attribute::of_int(axis);
  }
  return p;
}

RestrictPlan plan_split(const Node& n, int output, const Box& want, int64_t opset) {
  const int64_t axis = norm_axis(OpAttrs(n, opset).i("axis"), want.rank());
  int64_t off = 0;
  for (int k = 0; k < output; ++k) off += out_dims(n, k)[static_cast<size_t>(axis)];
  Box b = want;
  set_range(b, axis, want.lo[static_cast<size_t>(axis)] + off, want.hi[static_cast<size_t>(axis)] + off);
  RestrictPlan p;
  p.produced = want;
  p.operands.push_back(Operand::region(0, b));
  return p;
}

RestrictPlan plan_reshape(const Node& n, const Box& want) {
  std::optional<Box> b = box_through_reshape(in_dims(n, 0), out_dims(n, 0), want);
  if (!b) return whole_plan(n, 0);
  RestrictPlan p;
  p.op_type = "Reshape";
  p.produced = want;
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < want.rank(); ++d) shape.push_back(want.extent(d));
  p.operands = {Operand::region(0, *b), Operand::constant(ints_tensor(shape))};
  return p;
}

RestrictPlan plan_reduce(const Node& n, const Box& want, int64_t opset) {
  const Dims& x = in_dims(n, 0);
  const int64_t r = static_cast<int64_t>(x.size());
  const ReduceAttrs ra = reduce_attrs(OpAttrs(n, opset));
  std::vector<int64_t> axes = ra.axes;
  if (n.has_input(1)) axes = const_ints(n, 1);
  axes = resolve_reduce_axes(n, ra, axes, r);
  Box xbox = whole_box(x);
  int64_t j = 0;  // output dim
  for (int64_t d = 0; d < r; ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) set_range(xbox, d, want.lo[static_cast<size_t>(j)], want.hi[static_cast<size_t>(j)]);
    if (!reduced || ra.keepdims) ++j;
  }
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.produced = want;
  return p;
}

// Leading N and C of the box, spatial dims whole (global pools).
RestrictPlan plan_global_pool(const Node& n, const Box& want) {
  Box xbox = whole_box(in_dims(n, 0));
  set_range(xbox, 0, want.lo[0], want.hi[0]);
  set_range(xbox, 1, want.lo[1], want.hi[1]);
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.produced = want;
  return p;
}

// DepthToSpace / SpaceToDepth: the box's batch range, block-aligned spatial
// ranges, every channel; the caller slices the box's channels and rows out.
RestrictPlan plan_depth_space(const Node& n, const Box& want, int64_t opset, bool to_space) {
  const int64_t b = OpAttrs(n, opset).i("blocksize");
  const Dims& x = in_dims(n, 0);
  const Dims& y = out_dims(n, 0);
  Box xbox = whole_box(x), produced = whole_box(y);
  set_range(xbox, 0, want.lo[0], want.hi[0]);
  set_range(produced, 0, want.lo[0], want.hi[0]);
  for (int64_t d = 2; d < static_cast<int64_t>(x.size()); ++d) {
    const size_t k = static_cast<size_t>(d);
    if (to_space) {
      const int64_t lo = want.lo[k] / b, hi = ceil_div(want.hi[k], b);
      set_range(xbox, d, lo, hi);
      set_range(produced, d, lo * b, hi * b);
    } else {
      set_range(xbox, d, want.lo[k] * b, want.hi[k] * b);
      set_range(produced, d, want.lo[k], want.hi[k]);
    }
  }
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.produced = produced;
  return p;
}

// ConvTranspose: the box's batch range, everything else whole (each input
// pixel reaches a window of outputs; not restricted further).
RestrictPlan plan_batch_only(const Node& n, const Box& want) {
  Box xbox = whole_box(in_dims(n, 0));
  Box produced = whole_box(out_dims(n, 0));
  set_range(xbox, 0, want.lo[0], want.hi[0]);
  set_range(produced, 0, want.lo[0], want.hi[0]);
  RestrictPlan p = same_op(n);
  p.operands[0].box = xbox;
  p.produced = produced;
  return p;
}

}  // namespace

std::optional<Box> box_through_reshape(const Dims& in, const Dims& out, const Box& box) {
  for (int64_t d : in)
    if (d <= 0) return std::nullopt;
  for (int64_t d : out)
    if (d <= 0) return std::nullopt;
  Box result = whole_box(in);
  // Groups of consecutive dims with equal products map onto each other; the
  // box maps group by group.
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    const size_t gi = i, gj = j;
    int64_t pa = 1, pb = 1;
    if (i < in.size()) pa *= in[i++];
    if (j < out.size()) pb *= out[j++];
    while (pa != pb) {
      if (pa < pb && i < in.size()) pa *= in[i++];
      else if (pb < pa && j < out.size()) pb *= out[j++];
      else return std::nullopt;
    }
    bool whole = true;
    int64_t volume = 1;
    for (size_t k = gj; k < j; ++k) {
      whole = whole && box.lo[k] == 0 && box.hi[k] == out[k];
      volume *= box.hi[k] - box.lo[k];
    }
    if (whole) continue;
    if (volume > (int64_t{1} << 22)) return std::nullopt;  // too large to walk: not restricted
    // Walk the group's part of the box; its elements' input coordinates must
    // fill their bounding box exactly.
    std::vector<int64_t> mn(i - gi, INT64_MAX), mx(i - gi, -1), idx(j - gj);
    for (size_t k = gj; k < j; ++k) idx[k - gj] = box.lo[k];
    for (int64_t e = 0; e < volume; ++e) {
      int64_t lin = 0;
      for (size_t k = gj; k < j; ++k) lin = lin * out[k] + idx[k - gj];
      for (size_t k = i; k-- > gi;) {
        const int64_t c = lin % in[k];
        lin /= in[k];
        mn[k - gi] = std::min(mn[k - gi], c);
        mx[k - gi] = std::max(mx[k - gi], c);
      }
      for (size_t k = j; k-- > gj;) {  // next index, row-major
        if (++idx[k - gj] < box.hi[k]) break;
        idx[k - gj] = box.lo[k];
      }
    }
    int64_t bound = 1;
    for (size_t k = gi; k < i; ++k) {
      result.lo[k] = mn[k - gi];
      result.hi[k] = mx[k - gi] + 1;
      bound *= result.hi[k] - result.lo[k];
    }
    if (bound != volume) return std::nullopt;
  }
  return result;
}

RestrictPlan restrict_node(const Node& n, int output, const Box& want, int64_t opset) {
  const std::string& op = n.op_type;
  TESSERA_CHECK(n.domain.empty() || n.domain == "ai.onnx", "pet corrector: ", n.describe(), ": op ", n.domain, ".",
                op, " cannot be restricted to a box");
  if (op == "Conv") return plan_conv(n, want, opset);
  if (op == "ConvTranspose") return plan_batch_only(n, want);
  if (op == "MatMul") return plan_matmul(n, want);
  if (op == "Gemm") return plan_gemm(n, want, opset);
  if (op == "Transpose") return plan_transpose(n, want, opset);
  if (op == "Slice") return plan_slice(n, want);
  if (op == "Pad") return plan_pad(n, want, opset);
  if (op == "Concat") return plan_concat(n, want, opset);
  if (op == "Split") return plan_split(n, output, want, opset);
  if (op == "Add" || op == "Sub" || op == "Mul") {
    RestrictPlan p = same_op(n);
    for (int i = 0; i < 2; ++i) p.operands[static_cast<size_t>(i)].box = broadcast_region(in_dims(n, i), want);
    p.produced = want;
    return p;
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") return plan_reshape(n, want);
  if (op == "Identity") {
    RestrictPlan p;
    p.produced = want;
    p.operands.push_back(Operand::region(0, want));
    return p;
  }
  if (op == "AveragePool" || op == "MaxPool" || op == "LpPool") return plan_pool(n, output, want, opset);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") return plan_global_pool(n, want);
  if (op == "ReduceSum" || op == "ReduceMean") return plan_reduce(n, want, opset);
  if (op == "DepthToSpace") return plan_depth_space(n, want, opset, true);
  if (op == "SpaceToDepth") return plan_depth_space(n, want, opset, false);
  TESSERA_FAIL("pet corrector: ", n.describe(), ": op ", op, " cannot be restricted to a box");
}

}  // namespace tessera::pet
