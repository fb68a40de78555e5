// Max pools over several axes as one pool per axis. The maximum over a box
// window is the maximum, along one axis, of the maxima along the others, and
// the ONNX window of each axis (kernel, stride, dilation, pads, output size)
// depends on that axis alone; padding taps are left out (never the whole of
// a 1-D window: pads are below the kernel), and a NaN reaching any 1-D pool
// is propagated by it, so the chain gives the pool's output exactly. A 3x3x3
// pool (S3D's stride-1 ones over [C, 8, 28, 28]) then reads 3 + 3 + 3 taps
// per output instead of 27, at the cost of two more passes over a map.
#include <optional>
#include <string>
#include <vector>

#include "ir/producer_swap.h"
#include "ops/nn_ops.h"
#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "opt/passes.h"

namespace tessera {

namespace {

// A pool is separated where its taps number at least this many times the
// taps of its 1-D pools together: 27 against 9 for a 3x3x3 window; not 3x3
// (9 against 6) or 2x2x2 (8 against 6), where the extra passes over the map
// would cost about what the taps save.
constexpr int64_t kMinTapRatio = 2;

struct Separable {
  Node* pool = nullptr;
  WindowAttrs a;
  std::vector<int64_t> pads;  // resolved: begins, then ends
};

// The MaxPool's window, when the rewrite applies: a float map of static
// shape, no Indices output, no ceil_mode, and enough taps saved.
std::optional<Separable> separable(const Graph& g, Node* n) {
  if (n->op_type != "MaxPool" || !n->domain.empty() || n->outputs.empty() || !n->has_input(0)) return std::nullopt;
  for (size_t i = 1; i < n->outputs.size(); ++i)
    if (n->outputs[i]) return std::nullopt;  // Indices
  const Value* x = n->inputs[0];
  if (!x->type.rank_known || !x->type.fully_known() || !is_float(x->type.dtype) || x->type.rank() < 4)
    return std::nullopt;
  Separable s{n, read_window_attrs(OpAttrs(*n, g.opset), x->type.rank() - 2, {}, true), {}};
  if (s.a.ceil_mode) return std::nullopt;
  window_output_dims(*n, s.a, spatial_dims(x->type.dims), &s.pads);
  int64_t taps = 1, separated = 0;
  for (size_t d = 0; d < s.a.kernel.size(); ++d) {
    const int64_t k = s.a.kernel[d];
    if (k == 1 && (s.pads[d] != 0 || s.pads[d + s.a.kernel.size()] != 0)) return std::nullopt;
    taps *= k;
    if (k > 1) separated += k;
  }
  if (taps < kMinTapRatio * separated) return std::nullopt;
  return s;
}

// The pool along spatial axis `axis` alone (the axes of kernel 1 with a
// stride take theirs in the first, `first`).
AttrMap axis_attrs(const Separable& s, size_t axis, bool first) {
  const size_t nsp = s.a.kernel.size();
  std::vector<int64_t> k(nsp, 1), st(nsp, 1), dil(nsp, 1), pads(2 * nsp, 0);
  for (size_t d = 0; d < nsp; ++d) {
    if (d != axis && !(first && s.a.kernel[d] == 1)) continue;
    k[d] = s.a.kernel[d], st[d] = s.a.strides[d], dil[d] = s.a.dilations[d];
    pads[d] = s.pads[d], pads[d + nsp] = s.pads[d + nsp];
  }
  return {{"kernel_shape", Attribute::of_ints(std::move(k))},
          {"strides", Attribute::of_ints(std::move(st))},
          {"dilations", Attribute::of_ints(std::move(dil))},
          {"pads", Attribute::of_ints(std::move(pads))}};
}

void separate(Graph& g, const Separable& s) {
  Node* n = s.pool;
  Value* v = n->inputs[0];
  Node* last = nullptr;
  bool first = true;
  for (size_t d = 0; d < s.a.kernel.size(); ++d) {
    if (s.a.kernel[d] == 1) continue;
    const std::string axis = "/axis" + std::to_string(d);
    last = g.insert_node_before(n, "MaxPool", {v}, {g.unique_name(n->outputs[0]->name + axis)}, axis_attrs(s, d, first),
                                n->name.empty() ? "" : n->name + axis);
    infer_node(*last, g.opset);
    v = last->outputs[0];
    first = false;
  }
  swap_producers(n->outputs[0], last->outputs[0]);  // the last pool writes the pool's output value, its name and readers
}

}  // namespace

int separate_max_pools(Graph& g) {
  std::vector<Separable> found;
  for (const auto& n : g.nodes())
    if (auto s = separable(g, n.get())) found.push_back(std::move(*s));
  for (const Separable& s : found) separate(g, s);
  if (!found.empty()) {
    g.remove_dead_nodes();
    g.remove_unused_values();
  }
  return static_cast<int>(found.size());
}

}  // namespace tessera
