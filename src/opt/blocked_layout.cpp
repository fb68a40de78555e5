// The blocked-layout pass: float convolutions (2-D, and 3-D over videos)
// move to the channel-blocked layout NCHWc (src/ops/blocked_conv.h), their
// weights packed once here, and
// the layout is carried through what lies between convolutions — elementwise
// ops, pools, channel and spatial concatenations, channel splits, slices, spatial zero padding, spatial resizes — so values change layout only where
// they leave that region (a Reshape, a MatMul, a graph output).
//
// Each rewritten node keeps its NCHW output value, now produced by a
// ReorderFromBlocked of the blocked twin; later rewritten consumers read the
// twin, and the reorders nobody reads are removed at the end. So the graph is
// correct after every step, and a value's name (a graph output's) is kept.
//
// Padding lanes (channels past C in the last block) start as zeros (zero
// weights and bias) and only go through ops that keep finite values finite
// (no division, no exp), and the convolutions' weights for them are zero, so
// they never reach a real channel.
#include <algorithm>
#include <numeric>
#include <set>

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "ops/nn_conv.h"
#include "ops/op_attrs.h"
#include "ops/resize.h"
#include "ir/producer_swap.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// A grouped convolution whose groups straddle blocks reads, for each output
// channel, the input blocks of a window of whole groups: up to this many
// times the channels of its own group (the rest multiplied by zero weights).
// Group widths 24, 56, 120 (RegNet) in blocks of 16 need windows of 2; 3
// channels per group would need 16.
constexpr int64_t kMaxGroupsPerWindow = 4;

// Elementwise ops carried in the blocked layout: finite on finite inputs.
const std::set<std::string> kBlockedElementwise = {"Relu",    "Clip",      "Add",       "Sub", "Mul", "Sigmoid",
                                                   "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh", "Max", "Min"};

bool static_f32(const Value* v, size_t rank) {
  return v && v->type.dtype == DType::F32 && v->type.rank_known && v->type.dims.size() == rank &&
         v->type.fully_known();
}

// An image [N, C, H, W] or a video [N, C, D, H, W] with static float dims.
bool static_activation(const Value* v) { return static_f32(v, 4) || static_f32(v, 5); }

bool f32_constant(const Value* v) { return v && v->constant && v->constant->dtype() == DType::F32; }

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

struct Rewriter {
  Graph& g;
  int64_t b;
  std::map<Value*, Value*> twin;  // NCHW value -> its NCHWc version
  int convs = 0;

  // A node before `before`, named after it with `suffix` (the blocked twin of
  // a node keeps its name, so profiles and errors name the model's node).
  Node* insert(Node* before, const std::string& op, std::vector<Value*> ins, const std::string& out, AttrMap attrs,
               const std::string& domain, const std::string& suffix = "") {
    Node* n = g.insert_node_before(before, op, std::move(ins), {g.unique_name(out)}, std::move(attrs),
                                   before->name.empty() ? "" : before->name + suffix);
    n->domain = domain;
    infer_node(*n, g.opset);
    return n;
  }

  // The NCHWc version of v, reordering it (once) when it has none.
  Value* blocked(Value* v, Node* before) {
    if (auto it = twin.find(v); it != twin.end()) return it->second;
    Node* r = insert(before, "ReorderToBlocked", {v}, v->name + ".nchwc", {{"block", Attribute::of_int(b)}},
                     kBlockedDomain, "/to_nchwc");
    return twin[v] = r->outputs[0];
  }

  // `nb` (blocked) replaces `n`: each of n's output values is from now on
  // produced by a reorder of nb's output at the same position, and n is removed.
  void replace(Node* n, Node* nb) {
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      Value* out = n->outputs[i];
      Value* vb = nb->outputs[i];
      const std::string suffix = n->outputs.size() > 1 ? "/to_nchw" + std::to_string(i) : "/to_nchw";
      Node* r = insert(n, "ReorderFromBlocked", {vb}, out->name + ".nchw",
                       {{"channels", Attribute::of_int(out->type.dims[1])}}, kBlockedDomain, suffix);
      swap_producers(out, r->outputs[0]);
      twin[out] = vb;
    }
    g.erase_node(n);
  }

  Value* constant(const std::string& name, Tensor t) { return g.add_constant(g.unique_name(name), std::move(t)); }

  void conv(Node* n);
  void elementwise(Node* n);
  void pool(Node* n);
  void concat(Node* n);
  void split(Node* n);
  void slice(Node* n);
  void pad(Node* n);
  void resize(Node* n);
};

// Conv -> ConvBlocked / DepthwiseConvBlocked with packed weights [Mb, R, k...,
// b, b] (k...: kh, kw, or kd, kh, kw for a 3-D convolution; a grouped
// convolution: each output block's input blocks, zeros outside its groups),
// [Mb, C, k..., b] for an NCHW image input, [Cb, k..., b]
// depthwise; bias [Mb, b]. A grouped convolution runs in windows of whole
// groups (BlockGroups); one whose windows would span more than
// kMaxGroupsPerWindow groups (and not fill output blocks with whole groups)
// stays as it is.
void Rewriter::conv(Node* n) {
  Value* x = n->inputs[0];
  const Value* wv = n->num_inputs() > 1 ? n->inputs[1] : nullptr;
  if (!static_activation(x) || !f32_constant(wv) || static_cast<size_t>(wv->constant->rank()) != x->type.dims.size()) return;
  if (n->has_input(2) && !f32_constant(n->inputs[2])) return;
  if (!static_f32(n->outputs[0], x->type.dims.size())) return;
  const Tensor& w = *wv->constant;
  ConvShape cs = conv_shape(OpAttrs(*n, g.opset), x->type.dims, w.dims());
  const int64_t C = cs.C, M = cs.M, G = cs.group, Cg = C / G, Mg = M / G;
  const bool video = x->type.dims.size() == 5;
  Dims kernel(w.dims().begin() + 2, w.dims().end());
  const int64_t taps = numel_of(kernel), Mb = channel_blocks(M, b), Cb = channel_blocks(C, b);
  bool depthwise = G > 1 && G == C && G == M;
  BlockGroups groups;
  int64_t R = 0;
  bool plain = false;
  if (depthwise) {
  } else if (G == 1) {
    plain = !twin.count(x) && C < b / 2;
    R = plain ? C : Cb;
  } else {
    // Windows of q whole groups, the fewest whose output and input channels
    // both fill whole blocks: `div` output blocks reading `mul` input blocks.
    const int64_t q = std::lcm(b / std::gcd(b, Mg), b / std::gcd(b, Cg));
    const bool several_per_block = b % Mg == 0 && Cg % Mg == 0;  // q = b / Mg: one output block a window
    if (q > kMaxGroupsPerWindow && !several_per_block) return;
    groups.div = q * Mg / b, groups.mul = q * Cg / b, R = groups.mul;
    if (R >= Cb) {
      groups = {}, R = Cb;  // one window reads every input block: a dense convolution, zeros outside groups
    } else if ((Mb - 1) / groups.div * groups.mul + R > Cb) {
      groups.last = Cb - R;  // the channels end inside the last window
    }
  }
  const float* pw = w.data<float>();
  Tensor packed;
  auto dims = [&](Dims lead, Dims tail) {
    lead.insert(lead.end(), kernel.begin(), kernel.end());
    lead.insert(lead.end(), tail.begin(), tail.end());
    return lead;
  };
  if (depthwise) {
    packed = Tensor(DType::F32, dims({Mb}, {b}));
    float* p = packed.data<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < taps; ++t) p[((m / b) * taps + t) * b + m % b] = pw[m * taps + t];
  } else {
    const int64_t rin = plain ? R : R * b;  // input channels an output block reads
    packed = Tensor(DType::F32, plain ? dims({Mb, R}, {b}) : dims({Mb, R}, {b, b}));
    float* p = packed.data<float>();
    for (int64_t m = 0; m < M; ++m) {
      const int64_t kb = m / b, first = groups.first_block(kb) * b;
      for (int64_t r = 0; r < rin; ++r) {
        const int64_t c = first + r;
        if (c >= C || c / Cg != m / Mg) continue;
        for (int64_t t = 0; t < taps; ++t) {
          // [kb, r, t, kc] (an image's channels r) or [kb, r / b, t, r % b, kc]
          int64_t at = plain ? ((kb * R + r) * taps + t) * b : (((kb * R + r / b) * taps + t) * b + r % b) * b;
          p[at + m % b] = pw[(m * Cg + c % Cg) * taps + t];
        }
      }
    }
  }
  std::vector<Value*> ins{plain ? x : blocked(x, n), constant(wv->name + ".nchwc", std::move(packed))};
  if (n->has_input(2)) {
    Tensor bias(DType::F32, {Mb, b});
    const Tensor& src = *n->inputs[2]->constant;
    for (int64_t m = 0; m < M; ++m) bias.data<float>()[m] = src.data<float>()[m];
    ins.push_back(constant(n->inputs[2]->name + ".nchwc", std::move(bias)));
  }
  AttrMap attrs{{"strides", ints(cs.attrs.strides)}, {"dilations", ints(cs.attrs.dilations)},
                {"pads", ints(cs.pads)}};
  groups.write(attrs);
  if (!depthwise && groups.mul == 0 && !plain && C % b != 0) attrs["in_channels"] = Attribute::of_int(C);
  if (plain && video) attrs["plain_input"] = Attribute::of_int(1);  // rank 5 is otherwise a blocked image
  Node* nb = insert(n, depthwise ? "DepthwiseConvBlocked" : "ConvBlocked", std::move(ins),
                    n->outputs[0]->name + ".nchwc", std::move(attrs), kBlockedDomain);
  Value* old_bias = n->has_input(2) ? n->inputs[2] : nullptr;
  replace(n, nb);
  // The NCHW weights go now, not at the pass's end: only one layer's weights
  // are ever held twice.
  g.erase_value_if_unused(const_cast<Value*>(wv));
  g.erase_value_if_unused(old_bias);
  ++convs;
}

// An elementwise op whose tensor inputs all have blocked versions with the
// output's channels, or are scalars or per-channel constants ([C, 1, 1],
// [1, C, 1, 1]: re-laid out as [1, Cb, 1, 1, b]; over videos [C, 1, 1, 1],
// [1, C, 1, 1, 1] as [1, Cb, 1, 1, 1, b]).
void Rewriter::elementwise(Node* n) {
  if (n->outputs.size() != 1 || !static_activation(n->outputs[0])) return;
  const size_t rank = n->outputs[0]->type.dims.size();
  const int64_t C = n->outputs[0]->type.dims[1];
  Dims per_channel(rank - 1, 1), per_channel_n(rank, 1), blocked_channel(rank + 1, 1);
  per_channel[0] = C, per_channel_n[1] = C, blocked_channel[1] = channel_blocks(C, b), blocked_channel[rank] = b;
  std::vector<Value*> ins;
  bool any = false;
  for (Value* v : n->inputs) {
    if (!v) {
      ins.push_back(nullptr);
    } else if (twin.count(v) && static_f32(v, rank) && v->type.dims[1] == C) {
      ins.push_back(twin[v]);
      any = true;
    } else if (v->constant && v->constant->numel() == 1) {
      ins.push_back(v);
    } else if (f32_constant(v) && v->constant->numel() == C &&
               (v->constant->dims() == per_channel || v->constant->dims() == per_channel_n)) {
      Tensor t(DType::F32, blocked_channel);
      for (int64_t c = 0; c < C; ++c) t.data<float>()[c] = v->constant->data<float>()[c];
      ins.push_back(constant(v->name + ".nchwc", std::move(t)));
    } else {
      return;
    }
  }
  if (!any) return;
  replace(n, insert(n, n->op_type, ins, n->outputs[0]->name + ".nchwc", n->attrs, ""));
}

// MaxPool / AveragePool over [N, Cb, H, W, b] (or [N, Cb, D, H, W, b]) are
// pools with one more spatial dim, a window of 1 along the lanes;
// GlobalAveragePool / GlobalMaxPool become such pools with the whole plane
// (or volume) as the window.
void Rewriter::pool(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  if (!twin.count(x) || !static_activation(x) || !static_f32(n->outputs[0], x->type.dims.size())) return;
  for (size_t i = 1; i < n->outputs.size(); ++i)
    if (n->outputs[i]) return;  // MaxPool's Indices
  const size_t sp = x->type.dims.size() - 2;  // spatial dims
  auto with_lanes = [](std::vector<int64_t> v, int64_t lanes) {
    v.push_back(lanes);
    return ints(std::move(v));
  };
  AttrMap attrs = n->attrs;
  std::string op = n->op_type;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    op = op == "GlobalAveragePool" ? "AveragePool" : "MaxPool";
    attrs = {{"kernel_shape", with_lanes({x->type.dims.begin() + 2, x->type.dims.end()}, 1)}};
  } else {
    const OpAttrs na(*n, g.opset);
    std::vector<int64_t> k = na.ints("kernel_shape");
    if (k.size() != sp || (na.declares("storage_order") && na.i("storage_order") != 0)) return;
    attrs["kernel_shape"] = with_lanes(k, 1);
    attrs["strides"] = with_lanes(na.has("strides") ? na.ints("strides") : std::vector<int64_t>(sp, 1), 1);
    if (na.has("dilations")) attrs["dilations"] = with_lanes(na.ints("dilations"), 1);
    if (na.has("pads")) {
      std::vector<int64_t> p = na.ints("pads");
      if (p.size() != 2 * sp) return;
      p.insert(p.begin() + static_cast<std::ptrdiff_t>(sp), 0);  // no padding of the lanes, begin and end
      p.push_back(0);
      attrs["pads"] = ints(p);
    }
  }
  replace(n, insert(n, op, {twin[x]}, n->outputs[0]->name + ".nchwc", attrs, ""));
}

// Concat of blocked values along channels (every input but the last must
// fill whole blocks, so the channels stay where the NCHW concat puts them) or
// along a spatial axis (any channels: the blocks line up).
void Rewriter::concat(Node* n) {
  if (!static_activation(n->outputs[0])) return;
  const int64_t rank = static_cast<int64_t>(n->outputs[0]->type.rank());
  int64_t axis = OpAttrs(*n, g.opset).i("axis");
  if (axis < -rank || axis >= rank || axis == 0 || axis == -rank) return;
  if (axis < 0) axis += rank;  // [N, C, sp...] axes keep their index in [N, Cb, sp..., b]
  std::vector<Value*> ins;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    Value* v = n->inputs[i];
    if (!twin.count(v) || !static_f32(v, static_cast<size_t>(rank))) return;
    if (axis == 1 && i + 1 < n->inputs.size() && v->type.dims[1] % b != 0) return;
    ins.push_back(twin[v]);
  }
  AttrMap attrs{{"axis", Attribute::of_int(axis)}};
  replace(n, insert(n, "Concat", ins, n->outputs[0]->name + ".nchwc", attrs, ""));
}

// Split along channels of a blocked value: every part but the last must fill
// whole blocks, so each part starts at a block and is a run of whole blocks of
// the input (the last keeps the input's padding lanes). Otherwise the Split
// stays on the NCHW value.
void Rewriter::split(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  if (!twin.count(x) || !static_activation(x)) return;
  const size_t rank = x->type.dims.size();
  const int64_t axis = OpAttrs(*n, g.opset).i("axis");
  if (axis != 1 && axis != 1 - static_cast<int64_t>(rank)) return;
  std::vector<int64_t> blocks;
  std::vector<std::string> names;
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    const Value* v = n->outputs[i];
    if (!v || !static_f32(v, rank) || v->type.dims[1] == 0) return;
    if (i + 1 < n->outputs.size() && v->type.dims[1] % b != 0) return;
    blocks.push_back(channel_blocks(v->type.dims[1], b));
    names.push_back(g.unique_name(v->name + ".nchwc"));
  }
  std::vector<Value*> ins{twin[x]};
  AttrMap attrs{{"axis", Attribute::of_int(1)}};
  const int64_t parts = static_cast<int64_t>(blocks.size());
  if (g.opset >= 13) ins.push_back(constant(n->name + ".split.nchwc", Tensor::from<int64_t>({parts}, blocks)));
  else attrs["split"] = ints(blocks);
  Node* nb = g.insert_node_before(n, "Split", std::move(ins), names, std::move(attrs), n->name);
  infer_node(*nb, g.opset);
  replace(n, nb);
}

// Slice of a blocked image or video with constant starts, ends, axes and
// steps: batch and spatial axes as they are; channels only with step 1 from a block
// boundary to a block boundary or the last channel, so the part is a run of
// whole blocks (keeping the input's padding lanes when it ends at the last).
void Rewriter::slice(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  if (g.opset < 10 || !twin.count(x) || !static_activation(x) || !static_activation(n->outputs[0])) return;
  const int64_t rank = static_cast<int64_t>(x->type.rank());
  if (n->num_inputs() < 3 || n->num_inputs() > 5) return;
  std::vector<std::vector<int64_t>> arg(4);  // starts, ends, axes, steps
  for (size_t i = 1; i < n->inputs.size(); ++i) {
    const Value* v = n->inputs[i];
    if (!v) continue;
    if (!v->constant || (v->constant->dtype() != DType::I64 && v->constant->dtype() != DType::I32)) return;
    arg[i - 1] = v->constant->to_int_vector();
  }
  std::vector<int64_t>&starts = arg[0], &ends = arg[1], &axes = arg[2], &steps = arg[3];
  if (ends.size() != starts.size()) return;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return;
  const int64_t C = x->type.dims[1];
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < -rank || axes[i] >= rank) return;
    if (axes[i] < 0) axes[i] += rank;  // [N, C, sp...] axes keep their index in [N, Cb, sp..., b]
    if (axes[i] != 1) continue;
    if (steps[i] != 1) return;
    const int64_t s = std::clamp(starts[i] < 0 ? starts[i] + C : starts[i], int64_t{0}, C);
    const int64_t e = std::clamp(ends[i] < 0 ? ends[i] + C : ends[i], int64_t{0}, C);
    if (e <= s || s % b != 0 || (e % b != 0 && e != C)) return;
    starts[i] = s / b;
    ends[i] = channel_blocks(e, b);
  }
  const int64_t k = static_cast<int64_t>(axes.size());
  std::vector<Value*> ins{twin[x]};
  for (size_t i = 0; i < 4; ++i)
    ins.push_back(constant(n->name + ".slice.nchwc", Tensor::from<int64_t>({k}, arg[i])));
  replace(n, insert(n, "Slice", ins, n->outputs[0]->name + ".nchwc", {}, ""));
}

// Constant-mode Pad of the spatial dims only (an average pool's explicit
// padding) with zeros: the same Pad over [N, Cb, H, W, b] with no padding of
// the lanes.
void Rewriter::pad(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  if (!twin.count(x) || !static_f32(x, 4) || !static_f32(n->outputs[0], 4)) return;
  if (OpAttrs(*n, g.opset).s("mode") != "constant" || n->has_attr("pads") || n->num_inputs() < 2) return;
  const Value* pv = n->inputs[1];
  if (!pv || !pv->constant || pv->constant->numel() != 8 || n->num_inputs() > 3) return;
  if (n->has_input(2)) {
    const Value* cv = n->inputs[2];
    if (!cv->constant || cv->constant->numel() != 1 || cv->constant->get_double(0) != 0.0) return;
  }
  if (n->has_input(3)) return;  // axes
  std::vector<int64_t> p = pv->constant->to_int_vector();
  if (p[0] != 0 || p[1] != 0 || p[4] != 0 || p[5] != 0) return;  // N and C unpadded
  Value* pads = constant(pv->name + ".nchwc", Tensor::from<int64_t>({10}, {0, 0, p[2], p[3], 0, 0, 0, p[6], p[7], 0}));
  AttrMap attrs{{"mode", Attribute::of_string("constant")}};
  replace(n, insert(n, "Pad", {twin[x], pads}, n->outputs[0]->name + ".nchwc", attrs, ""));
}

// Ops whose blocked twins read a blocked input: where a resize's output may stay blocked.
bool carried_blocked(const Node& n) {
  static const std::set<std::string> kCarried = {"Conv",  "MaxPool", "AveragePool", "GlobalAveragePool",
                                                 "GlobalMaxPool", "Concat", "Split", "Slice", "Pad", "Resize"};
  return n.domain.empty() && (kCarried.count(n.op_type) || kBlockedElementwise.count(n.op_type));
}

// Resize (opset 11+) of the spatial axes only of a blocked value, with
// constant scales or sizes: the same resize over [N, Cb, sp..., b] with the
// blocks and lanes kept (scale 1: every output reads its own element with
// weight 1, so each element is the NCHW resize's, bit for bit). Only when
// every consumer is an op the pass carries blocked: a resize into a graph
// output (a segmentation head's upsampling) or into an NCHW-only op stays
// NCHW, reordered out before it, on the smaller input.
void Rewriter::resize(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  Value* y = n->outputs[0];
  if (g.opset < 11 || !twin.count(x) || !static_activation(x) || !static_f32(y, x->type.dims.size())) return;
  if (g.is_output(y) || y->uses.empty()) return;
  for (const Use& u : y->uses)
    if (!carried_blocked(*u.node)) return;
  const size_t rank = x->type.dims.size();
  if (n->has_attr("axes") || n->num_inputs() > 4) return;
  const ResizeAttrs a = read_resize_attrs(*n, g.opset, static_cast<int64_t>(rank));
  if (a.coord == "tf_crop_and_resize" || a.antialias || a.keep_aspect != "stretch") return;
  auto given = [&](int i) -> const Value* {
    const Value* v = n->has_input(i) ? n->inputs[static_cast<size_t>(i)] : nullptr;
    return v && !(v->constant && v->constant->numel() == 0) ? v : nullptr;
  };
  const Value* roi = given(1);
  const Value* scales = given(2);
  const Value* sizes = given(3);
  if (roi || (scales != nullptr) == (sizes != nullptr)) return;
  const Dims& xd = x->type.dims;
  const Dims& yd = y->type.dims;
  if (yd[0] != xd[0] || yd[1] != xd[1]) return;  // batch and channels unchanged
  const int64_t Cb = channel_blocks(xd[1], b);
  std::vector<Value*> ins{twin[x], n->inputs[1]};  // no roi, or an empty one
  if (scales) {
    if (!f32_constant(scales) || scales->constant->numel() != static_cast<int64_t>(rank)) return;
    std::vector<float> s(rank + 1, 1.0f);
    for (size_t d = 0; d < rank; ++d) s[d] = scales->constant->data<float>()[d];
    if (s[0] != 1.0f || s[1] != 1.0f) return;
    ins.push_back(constant(scales->name + ".nchwc", Tensor::from<float>({static_cast<int64_t>(rank + 1)}, s)));
  } else {
    if (!sizes->constant || sizes->constant->numel() != static_cast<int64_t>(rank)) return;
    std::vector<int64_t> z = sizes->constant->to_int_vector();
    if (z[0] != xd[0] || z[1] != xd[1]) return;
    z[1] = Cb;
    z.push_back(b);
    ins.push_back(n->inputs[2]);  // no scales, or empty ones
    ins.push_back(constant(sizes->name + ".nchwc", Tensor::from<int64_t>({static_cast<int64_t>(rank + 1)}, z)));
  }
  replace(n, insert(n, "Resize", ins, y->name + ".nchwc", n->attrs, ""));
}

}  // namespace

int to_blocked_layout(Graph& g, int64_t block) {
  TESSERA_CHECK(block > 1, "to_blocked_layout: block must be > 1, got ", block);
  Rewriter rw{g, block};
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (!n->domain.empty()) continue;
    const std::string& op = n->op_type;
    if (op == "Conv") rw.conv(n);
    else if (kBlockedElementwise.count(op)) rw.elementwise(n);
    else if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") rw.pool(n);
    else if (op == "Concat") rw.concat(n);
    else if (op == "Split") rw.split(n);
    else if (op == "Slice") rw.slice(n);
    else if (op == "Pad") rw.pad(n);
    else if (op == "Resize") rw.resize(n);
  }
  if (rw.convs > 0) {
    g.extra_opsets[kBlockedDomain] = 1;
    g.remove_dead_nodes();
    g.remove_unused_values();
  }
  return rw.convs;
}

}  // namespace tessera
