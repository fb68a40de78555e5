// BatchNorm folding: an inference-mode BatchNormalization whose input is a
// Conv's output used by nothing else, with constant weights and statistics,
// becomes part of the Conv: W'[m] = W[m] * s[m], b'[m] = (b[m] - mean[m]) *
// s[m] + beta[m] with s = gamma / sqrt(var + eps), computed in double and
// rounded once to the weights' float type.
#include <algorithm>
#include <cmath>

#include "ir/producer_swap.h"
#include "opt/passes.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

bool constant_of(const Value* v, DType t, int64_t n) {
  return v && v->constant && v->constant->dtype() == t && v->constant->numel() == n;
}

// The Conv feeding `bn` when the pair can be folded, else null.
Node* foldable_conv(const Graph& g, const Node& bn) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || OpAttrs(bn, g.opset).i("training_mode") != 0)
    return nullptr;
  if (bn.outputs.size() > 1 && std::any_of(bn.outputs.begin() + 1, bn.outputs.end(), [](Value* v) { return v; }))
    return nullptr;  // running statistics requested
  const Value* x = bn.inputs.empty() ? nullptr : bn.inputs[0];
  if (!x || !x->producer || x->uses.size() != 1 || g.is_output(x)) return nullptr;
  Node* conv = x->producer;
  if (conv->op_type != "Conv" || !conv->domain.empty() || conv->num_inputs() < 2) return nullptr;
  const Value* w = conv->inputs[1];
  if (!w || !w->constant || (w->constant->dtype() != DType::F32 && w->constant->dtype() != DType::F64)) return nullptr;
  DType t = w->constant->dtype();
  int64_t m = w->constant->dim(0);
  for (int i = 1; i <= 4; ++i)
    if (!bn.has_input(i) || !constant_of(bn.inputs[static_cast<size_t>(i)], t, m)) return nullptr;
  if (conv->has_input(2) && !constant_of(conv->inputs[2], t, m)) return nullptr;
  return conv;
}

}  // namespace

int fold_batchnorm(Graph& g) {
  std::vector<Node*> bns;
  for (const auto& n : g.nodes())
    if (foldable_conv(g, *n)) bns.push_back(n.get());
  for (Node* bn : bns) {
    Node* conv = bn->inputs[0]->producer;
    const Tensor& w = *conv->inputs[1]->constant;
    const DType t = w.dtype();
    const int64_t m = w.dim(0), per = w.numel() / std::max<int64_t>(m, 1);
    const double eps = OpAttrs(*bn, g.opset).f("epsilon");
    auto at = [&](int input, int64_t i) { return bn->inputs[static_cast<size_t>(input)]->constant->get_double(i); };
    Tensor nw(t, w.dims()), nb(t, {m});
    auto put = [&](Tensor& dst, int64_t i, double v) {
      if (t == DType::F32) dst.data<float>()[i] = static_cast<float>(v);
      else dst.data<double>()[i] = v;
    };
    for (int64_t k = 0; k < m; ++k) {
      double s = at(1, k) / std::sqrt(at(4, k) + eps);
      for (int64_t j = 0; j < per; ++j) put(nw, k * per + j, w.get_double(k * per + j) * s);
      double b = conv->has_input(2) ? conv->inputs[2]->constant->get_double(k) : 0.0;
      put(nb, k, (b - at(3, k)) * s + at(2, k));
    }
    Value* wv = g.add_constant(g.unique_name(conv->inputs[1]->name + ".bn_folded"), std::move(nw));
    Value* bv = g.add_constant(g.unique_name(bn->outputs[0]->name + ".conv_bias"), std::move(nb));
    Value* old_w = conv->inputs[1];
    Value* old_b = conv->has_input(2) ? conv->inputs[2] : nullptr;
    g.set_input(conv, 1, wv);
    if (!conv->has_input(2)) conv->inputs.resize(3, nullptr);
    g.set_input(conv, 2, bv);
    // The unfolded weights go now: one layer's weights are held twice at most.
    g.erase_value_if_unused(old_w);
    g.erase_value_if_unused(old_b);
    // The Conv takes over the BatchNorm's output value (its name may be a graph output).
    Value* x = bn->inputs[0];
    Value* y = bn->outputs[0];
    for (size_t i = 0; i < bn->inputs.size(); ++i) g.set_input(bn, static_cast<int>(i), nullptr);
    swap_producers(x, y);
    g.erase_node(bn);
  }
  if (!bns.empty()) g.remove_unused_values();
  return static_cast<int>(bns.size());
}

}  // namespace tessera
