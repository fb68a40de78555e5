// Average pools moved after the 1x1 convolutions they feed. A 1x1 Conv with
// stride 1 and no padding is the same linear map of the channels at every
// pixel, and an average pool is, at every output pixel, the same weighted sum
// of pixels for every channel; so the two commute:
//   W * avg(X) + b = avg(W * X) + b
// (the bias is added after the pool: it is no pixel of W * X, and a pool
// counting padding zeros would average it with them). Where the Conv has
// fewer output channels than input channels (Inception's pool branches: 192
// to 2048 channels down to 32 to 192) the pool then reads and writes that
// many times less.
//
// A zero Pad of the spatial axes in front of the pool (how exporters spell
// count_include_pad=1 with padding) becomes the pool's own padding with
// count_include_pad=1: the same divisor, and no padded copy of the map.
#include "ops/nn_conv.h"
#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// The only reader of `v` is `n` (and v is no graph output).
bool sole_use(const Graph& g, const Value* v, const Node* n) {
  return v && v->uses.size() == 1 && v->uses[0].node == n && !g.is_output(v);
}

// The Conv is 1x1, stride 1, unpadded, ungrouped, over a static f32 map,
// with constant weights (and bias), and has fewer outputs than inputs.
bool pointwise_narrowing(const Graph& g, const Node& conv) {
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.num_inputs() < 2) return false;
  const Value* x = conv.inputs[0];
  const Value* w = conv.inputs[1];
  if (!x || !w || !w->constant || !x->type.fully_known() || x->type.dtype != DType::F32 || x->type.rank() < 3) return false;
  if (conv.has_input(2) && !conv.inputs[2]->constant) return false;
  const Dims& wd = w->constant->dims();
  if (static_cast<int64_t>(wd.size()) != x->type.rank()) return false;
  for (size_t i = 2; i < wd.size(); ++i)
    if (wd[i] != 1) return false;
  const ConvShape cs = conv_shape(OpAttrs(conv, g.opset), x->type.dims, wd);
  if (cs.group != 1 || cs.M >= cs.C) return false;
  for (int64_t s : cs.attrs.strides)
    if (s != 1) return false;
  for (int64_t p : cs.pads)
    if (p != 0) return false;
  return true;
}

// The spatial pads (begins, then ends) of a constant zero Pad over [N, C,
// spatial...] that a pool of `pool_attrs` can take as its own padding; empty
// when it cannot (other axes padded, negative pads, pads not below the
// kernel, a non-zero value, another mode, dilations or ceil_mode).
std::vector<int64_t> foldable_pads(const Graph& g, const Node& pad, const OpAttrs& pool_attrs, int64_t rank) {
  if (pad.op_type != "Pad" || !pad.domain.empty() || g.opset < 11 || pad.num_inputs() < 2) return {};
  if (pad.num_inputs() > 3 && pad.has_input(3)) return {};  // axes
  const OpAttrs pa(pad, g.opset);
  if (pa.s("mode") != "constant") return {};
  if (pad.has_input(2)) {
    const Value* cv = pad.inputs[2];
    if (!cv->constant || cv->constant->dtype() != DType::F32 || cv->constant->numel() != 1 ||
        cv->constant->data<float>()[0] != 0.0f)
      return {};
  }
  const Value* pv = pad.inputs[1];
  if (!pv || !pv->constant || pv->constant->dtype() != DType::I64 || pv->constant->numel() != 2 * rank) return {};
  const int64_t* p = pv->constant->data<int64_t>();
  if (p[0] || p[1] || p[rank] || p[rank + 1]) return {};
  const int64_t nsp = rank - 2;
  const WindowAttrs wa = read_window_attrs(pool_attrs, nsp, {}, true);
  if (wa.auto_pad != "NOTSET" || wa.ceil_mode) return {};
  for (int64_t pp : wa.pads)
    if (pp) return {};
  std::vector<int64_t> pads;
  for (int64_t e = 0; e < 2; ++e)
    for (int64_t d = 0; d < nsp; ++d) {
      const int64_t v = p[e * rank + 2 + d];
      const size_t u = static_cast<size_t>(d);
      if (v < 0 || v >= wa.kernel[u] || wa.dilations[u] != 1) return {};
      pads.push_back(v);
    }
  return pads;
}

// The rewrite of one Conv reading an average pool (of a folded Pad's input when `pad`).
struct Move {
  Node *conv, *pool, *pad;
  std::vector<int64_t> pads;
};

void move_pool(Graph& g, const Move& m) {
  Node* conv = m.conv;
  Value* x = m.pad ? m.pad->inputs[0] : m.pool->inputs[0];
  const std::string base = conv->name.empty() ? conv->outputs[0]->name : conv->name;
  const std::string y = conv->outputs[0]->name;
  Node* c = g.insert_node_before(conv, "Conv", {x, conv->inputs[1]}, {g.unique_name(y + ".unpooled")}, conv->attrs,
                                 base + "/unpooled");
  infer_node(*c, g.opset);
  AttrMap pool_attrs = m.pool->attrs;
  if (m.pad) {
    pool_attrs["pads"] = Attribute::of_ints(m.pads);
    pool_attrs["count_include_pad"] = Attribute::of_int(1);
  }
  Node* p = g.insert_node_before(conv, "AveragePool", {c->outputs[0]}, {g.unique_name(y + ".pooled")}, pool_attrs,
                                 base + "/pool");
  infer_node(*p, g.opset);
  Node* last = p;
  if (conv->has_input(2)) {
    // b [M] as [1, M, 1, ...]: one value per channel of the pooled map.
    const Tensor& b = *conv->inputs[2]->constant;
    Dims bd(static_cast<size_t>(x->type.rank()), 1);
    bd[1] = b.numel();
    Tensor bt(DType::F32, bd);
    for (int64_t i = 0; i < b.numel(); ++i) bt.data<float>()[i] = b.data<float>()[i];
    Value* bv = g.add_constant(g.unique_name(conv->inputs[2]->name + ".channels"), std::move(bt));
    last = g.insert_node_before(conv, "Add", {p->outputs[0], bv}, {g.unique_name(y + ".biased")}, {}, base + "/bias");
    infer_node(*last, g.opset);
  }
  // The last new node takes over the Conv's output value (its name may be a graph output).
  Graph::take_over(last->outputs[0], conv->outputs[0]);
}

}  // namespace

int move_pools_after_convs(Graph& g) {
  std::vector<Move> moves;
  for (const auto& n : g.nodes()) {
    if (!pointwise_narrowing(g, *n)) continue;
    Node* pool = n->inputs[0]->producer;
    if (!pool || pool->op_type != "AveragePool" || !pool->domain.empty() || !sole_use(g, pool->outputs[0], n.get()))
      continue;
    if (pool->outputs.size() != 1 || !pool->inputs[0] || !pool->inputs[0]->type.fully_known()) continue;
    Move m{n.get(), pool, nullptr, {}};
    Node* pad = pool->inputs[0]->producer;
    if (pad && sole_use(g, pool->inputs[0], pool) && pad->inputs[0] && pad->inputs[0]->type.fully_known()) {
      m.pads = foldable_pads(g, *pad, OpAttrs(*pool, g.opset), pool->inputs[0]->type.rank());
      if (!m.pads.empty()) m.pad = pad;
    }
    moves.push_back(std::move(m));
  }
  for (const Move& m : moves) move_pool(g, m);
  if (!moves.empty()) {
    g.remove_dead_nodes();
    g.remove_unused_values();
  }
  return static_cast<int>(moves.size());
}

}  // namespace tessera
