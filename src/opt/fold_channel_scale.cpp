// Channel-scale folding: a blocked convolution whose input is a map scaled
// per channel by a value computed at run time (EfficientNet's
// squeeze-excitation: x * s, s of shape [N, Cb, 1, 1, b]) reads x and weights
// scaled by s instead, since sum_c W[m, c] * (x[c] * s[c]) = sum_c (W[m, c] *
// s[c]) * x[c]: the per-run multiply then touches the weights rather than the
// whole map. Done where the map has at least twice the weights' elements.
#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// The map and the scale of `mul` when it multiplies a blocked map [1, Cb, H,
// W, b] by a per-channel scale [1, Cb, 1, 1, b] (either order), else nulls.
std::pair<Value*, Value*> map_and_scale(const Node& mul) {
  if (mul.op_type != "Mul" || !mul.domain.empty() || mul.num_inputs() != 2) return {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    Value* x = mul.inputs[static_cast<size_t>(i)];
    Value* s = mul.inputs[static_cast<size_t>(1 - i)];
    if (!x || !s || !x->type.fully_known() || !s->type.fully_known()) continue;
    const Dims& xd = x->type.dims;
    const Dims& sd = s->type.dims;
    if (x->type.dtype != DType::F32 || s->type.dtype != DType::F32 || xd.size() != 5 || sd.size() != 5) continue;
    if (xd[0] == 1 && sd == Dims{1, xd[1], 1, 1, xd[4]} && (xd[2] > 1 || xd[3] > 1)) return {x, s};
  }
  return {nullptr, nullptr};
}

}  // namespace

int fold_channel_scales(Graph& g) {
  struct Fold {
    Node* conv;
    Value *x, *s;
  };
  std::vector<Fold> folds;
  for (const auto& n : g.nodes()) {
    if (n->op_type != "ConvBlocked" || n->domain != kBlockedDomain || n->num_inputs() < 2) continue;
    const Value* in = n->inputs[0];
    const Value* w = n->inputs[1];
    if (!in || !in->producer || in->uses.size() != 1 || g.is_output(in) || !w || !w->type.fully_known()) continue;
    if (w->type.dims.size() != 6 || n->has_attr("group_mul") || n->has_attr("plain_input")) continue;  // dense, blocked 2-D input
    auto [x, s] = map_and_scale(*in->producer);
    if (!x || w->type.dims[1] != x->type.dims[1]) continue;
    if (numel_of(x->type.dims) < 2 * numel_of(w->type.dims)) continue;
    folds.push_back({n.get(), x, s});
  }
  for (auto [conv, x, s] : folds) {
    Value* w = conv->inputs[1];
    const Dims& sd = s->type.dims;
    // s [1, Cb, 1, 1, b] as [1, Cb, 1, 1, b, 1]: one factor per input lane of W [Mb, Cb, kh, kw, b(in), b(out)].
    Value* shape = g.add_constant(g.unique_name(s->name + ".lanes_shape"),
                                  Tensor::from<int64_t>({6}, {1, sd[1], 1, 1, sd[4], 1}));
    const std::string base = conv->name.empty() ? conv->outputs[0]->name : conv->name;
    Node* r = g.insert_node_before(conv, "Reshape", {s, shape}, {g.unique_name(s->name + ".lanes")}, {},
                                   base + "/scale_lanes");
    infer_node(*r, g.opset);
    Node* sw = g.insert_node_before(conv, "Mul", {w, r->outputs[0]}, {g.unique_name(w->name + ".scaled")}, {},
                                    base + "/scaled_weights");
    infer_node(*sw, g.opset);
    g.set_input(conv, 0, x);
    g.set_input(conv, 1, sw->outputs[0]);
  }
  if (!folds.empty()) {
    g.remove_dead_nodes();
    g.remove_unused_values();
  }
  return static_cast<int>(folds.size());
}

}  // namespace tessera
