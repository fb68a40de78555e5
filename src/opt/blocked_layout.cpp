// The blocked-layout pass: float convolutions move to the channel-blocked
// layout NCHWc (src/ops/blocked_conv.h), their weights packed once here, and
// the layout is carried through what lies between convolutions — elementwise
// ops, pools, channel concatenations, spatial zero padding — so values change layout only where
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
#include <set>

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "ops/nn_conv.h"
#include "ops/op_attrs.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// Elementwise ops carried in the blocked layout: finite on finite inputs.
const std::set<std::string> kBlockedElementwise = {"Relu",    "Clip",      "Add",       "Sub", "Mul", "Sigmoid",
                                                   "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh", "Max", "Min"};

bool static_f32(const Value* v, size_t rank) {
  return v && v->type.dtype == DType::F32 && v->type.rank_known && v->type.dims.size() == rank &&
         v->type.fully_known();
}

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

  // `nb` (blocked) replaces `n`: n's output value is from now on produced by a
  // reorder of nb's, and n is removed.
  void replace(Node* n, Node* nb) {
    Value* out = n->outputs[0];
    Value* vb = nb->outputs[0];
    Node* r = insert(n, "ReorderFromBlocked", {vb}, out->name + ".nchw",
                     {{"channels", Attribute::of_int(out->type.dims[1])}}, kBlockedDomain, "/to_nchw");
    Value* tmp = r->outputs[0];
    r->outputs[0] = out;
    out->producer = r;
    out->producer_output = 0;
    n->outputs[0] = tmp;
    tmp->producer = n;
    g.erase_node(n);
    twin[out] = vb;
  }

  Value* constant(const std::string& name, Tensor t) { return g.add_constant(g.unique_name(name), std::move(t)); }

  void conv(Node* n);
  void elementwise(Node* n);
  void pool(Node* n);
  void concat(Node* n);
  void pad(Node* n);
};

// Conv -> ConvBlocked / DepthwiseConvBlocked with packed weights [Mb, R, kh,
// kw, b, b] (a grouped convolution: each output block's input blocks, zeros
// outside its groups), [Mb, C, kh, kw, b] for an NCHW image input, [Cb, kh,
// kw, b] depthwise; bias [Mb, b]. Convolutions whose groups do not align with
// blocks stay as they are.
void Rewriter::conv(Node* n) {
  Value* x = n->inputs[0];
  const Value* wv = n->num_inputs() > 1 ? n->inputs[1] : nullptr;
  if (!static_f32(x, 4) || !f32_constant(wv) || wv->constant->rank() != 4) return;
  if (n->has_input(2) && !f32_constant(n->inputs[2])) return;
  if (!static_f32(n->outputs[0], 4)) return;
  const Tensor& w = *wv->constant;
  ConvShape cs = conv_shape(OpAttrs(*n, g.opset), x->type.dims, w.dims());
  const int64_t C = cs.C, M = cs.M, G = cs.group, Cg = C / G, Mg = M / G;
  const int64_t kh = w.dim(2), kw = w.dim(3), Mb = channel_blocks(M, b), Cb = channel_blocks(C, b);
  bool depthwise = G > 1 && G == C && G == M;
  int64_t div = 1, mul = 0, R = 0;
  bool plain = false;
  if (depthwise) {
  } else if (G == 1) {
    plain = !twin.count(x) && C < b / 2;
    R = plain ? C : Cb;
  } else if (C % b == 0 && M % b == 0 && Mg <= b && b % Mg == 0 && Cg % Mg == 0) {
    mul = Cg / Mg, R = mul;  // an output block holds b / Mg whole groups
  } else if (C % b == 0 && M % b == 0 && Mg % b == 0 && Cg % b == 0) {
    div = Mg / b, mul = Cg / b, R = mul;  // a group spans Mg / b output blocks
  } else {
    return;
  }
  const float* pw = w.data<float>();
  Tensor packed;
  if (depthwise) {
    packed = Tensor(DType::F32, {Mb, kh, kw, b});
    float* p = packed.data<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < kh * kw; ++t) p[((m / b) * kh * kw + t) * b + m % b] = pw[m * kh * kw + t];
  } else {
    const int64_t rin = plain ? R : R * b;  // input channels an output block reads
    packed = Tensor(DType::F32, plain ? Dims{Mb, R, kh, kw, b} : Dims{Mb, R, kh, kw, b, b});
    float* p = packed.data<float>();
    for (int64_t m = 0; m < M; ++m) {
      const int64_t kb = m / b, first = (mul == 0 ? 0 : kb / div * mul) * b;
      for (int64_t r = 0; r < rin; ++r) {
        const int64_t c = first + r;
        if (c >= C || c / Cg != m / Mg) continue;
        for (int64_t t = 0; t < kh * kw; ++t) {
          // [kb, r, t, kc] (an image's channels r) or [kb, r / b, t, r % b, kc]
          int64_t at = plain ? ((kb * R + r) * kh * kw + t) * b : (((kb * R + r / b) * kh * kw + t) * b + r % b) * b;
          p[at + m % b] = pw[(m * Cg + c % Cg) * kh * kw + t];
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
  BlockGroups{div, mul}.write(attrs);
  if (G == 1 && !plain && C % b != 0) attrs["in_channels"] = Attribute::of_int(C);
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
// [1, C, 1, 1]: re-laid out as [1, Cb, 1, 1, b]).
void Rewriter::elementwise(Node* n) {
  if (n->outputs.size() != 1 || !static_f32(n->outputs[0], 4)) return;
  const int64_t C = n->outputs[0]->type.dims[1];
  std::vector<Value*> ins;
  bool any = false;
  for (Value* v : n->inputs) {
    if (!v) {
      ins.push_back(nullptr);
    } else if (twin.count(v) && static_f32(v, 4) && v->type.dims[1] == C) {
      ins.push_back(twin[v]);
      any = true;
    } else if (v->constant && v->constant->numel() == 1) {
      ins.push_back(v);
    } else if (f32_constant(v) && v->constant->numel() == C &&
               (v->constant->dims() == Dims{C, 1, 1} || v->constant->dims() == Dims{1, C, 1, 1})) {
      Tensor t(DType::F32, {1, channel_blocks(C, b), 1, 1, b});
      for (int64_t c = 0; c < C; ++c) t.data<float>()[c] = v->constant->data<float>()[c];
      ins.push_back(constant(v->name + ".nchwc", std::move(t)));
    } else {
      return;
    }
  }
  if (!any) return;
  replace(n, insert(n, n->op_type, ins, n->outputs[0]->name + ".nchwc", n->attrs, ""));
}

// MaxPool / AveragePool over [N, Cb, H, W, b] are 3-D pools with a window of
// 1 along the lanes; GlobalAveragePool / GlobalMaxPool become such pools with
// the whole plane as the window.
void Rewriter::pool(Node* n) {
  Value* x = n->inputs.empty() ? nullptr : n->inputs[0];
  if (!twin.count(x) || !static_f32(x, 4) || !static_f32(n->outputs[0], 4)) return;
  for (size_t i = 1; i < n->outputs.size(); ++i)
    if (n->outputs[i]) return;  // MaxPool's Indices
  AttrMap attrs = n->attrs;
  std::string op = n->op_type;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    op = op == "GlobalAveragePool" ? "AveragePool" : "MaxPool";
    attrs = {{"kernel_shape", ints({x->type.dims[2], x->type.dims[3], 1})}};
  } else {
    const OpAttrs na(*n, g.opset);
    std::vector<int64_t> k = na.ints("kernel_shape");
    if (k.size() != 2 || (na.declares("storage_order") && na.i("storage_order") != 0)) return;
    attrs["kernel_shape"] = ints({k[0], k[1], 1});
    std::vector<int64_t> s = na.has("strides") ? na.ints("strides") : std::vector<int64_t>{1, 1};  // 1 per axis
    attrs["strides"] = ints({s[0], s[1], 1});
    if (na.has("dilations")) {
      std::vector<int64_t> d = na.ints("dilations");
      attrs["dilations"] = ints({d[0], d[1], 1});
    }
    if (na.has("pads")) {
      std::vector<int64_t> p = na.ints("pads");
      if (p.size() != 4) return;
      attrs["pads"] = ints({p[0], p[1], 0, p[2], p[3], 0});
    }
  }
  replace(n, insert(n, op, {twin[x]}, n->outputs[0]->name + ".nchwc", attrs, ""));
}

// Concat along channels of blocked values: every input but the last must
// fill whole blocks, so the channels stay where the NCHW concat puts them.
void Rewriter::concat(Node* n) {
  if (!static_f32(n->outputs[0], 4)) return;
  int64_t axis = OpAttrs(*n, g.opset).i("axis");
  if (axis != 1 && axis != -3) return;
  std::vector<Value*> ins;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    Value* v = n->inputs[i];
    if (!twin.count(v) || !static_f32(v, 4)) return;
    if (i + 1 < n->inputs.size() && v->type.dims[1] % b != 0) return;
    ins.push_back(twin[v]);
  }
  AttrMap attrs{{"axis", Attribute::of_int(1)}};
  replace(n, insert(n, "Concat", ins, n->outputs[0]->name + ".nchwc", attrs, ""));
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
    else if (op == "Pad") rw.pad(n);
  }
  if (rw.convs > 0) {
    g.extra_opsets[kBlockedDomain] = 1;
    g.remove_dead_nodes();
    g.remove_unused_values();
  }
  return rw.convs;
}

}  // namespace tessera
