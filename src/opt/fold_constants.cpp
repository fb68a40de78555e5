// Constant folding with the reference kernels, interleaved with inference so
// that shape-computing chains (Shape -> Gather -> Concat -> Reshape) collapse.
#include <algorithm>
#include <set>

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "ops/tensor_common.h"
#include "opt/passes.h"
#include "support/error.h"

namespace tessera {

namespace {
// Folded results larger than this stay computed at run time (keeps models small).
constexpr int64_t kMaxFoldElements = int64_t{1} << 26;

bool foldable(const Node& n) {
  const OpDef* def = op_registry().find(n.op_type, n.domain);
  if (!def || !def->deterministic) return false;
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return false;
  for (const Value* o : n.outputs)
    if (o && o->type.fully_known() && numel_of(o->type.dims) > kMaxFoldElements) return false;
  return true;
}

// Shape and Size of a statically shaped value need no data.
bool fold_from_type(Graph& g, Node* n) {
  if ((n->op_type != "Shape" && n->op_type != "Size") || !n->has_input(0) || n->outputs.empty() || !n->outputs[0])
    return false;
  const TensorType& t = n->inputs[0]->type;
  if (!t.fully_known()) return false;
  if (n->op_type == "Size") {
    n->outputs[0]->constant = Tensor::scalar<int64_t>(numel_of(t.dims));
  } else {
    int64_t r = t.rank();
    auto [start, end] = shape_range(OpAttrs(*n, g.opset), r);
    std::vector<int64_t> dims(t.dims.begin() + start, t.dims.begin() + std::max(start, end));
    n->outputs[0]->constant = Tensor::from<int64_t>({static_cast<int64_t>(dims.size())}, dims);
  }
  return true;
}
}  // namespace

int fold_constants(Graph& g) {
  int folded = 0;
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  std::vector<Node*> dead;
  for (Node* n : order) {
    infer_node(*n, g.opset);
    if (!foldable(*n)) continue;
    if (fold_from_type(g, n)) {
      dead.push_back(n);
      ++folded;
      continue;
    }
    bool all_const = true;
    std::vector<const Tensor*> ins;
    for (Value* v : n->inputs) {
      if (v && !v->is_constant()) all_const = false;
      ins.push_back(v && v->constant ? &*v->constant : nullptr);
    }
    if (!all_const) continue;
    std::vector<Tensor> outs = run_reference(*n, g.opset, ins);
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i] && i < outs.size()) n->outputs[i]->constant = std::move(outs[i]);
    dead.push_back(n);
    ++folded;
  }
  // Detach folded nodes: their outputs are now constants without a producer.
  for (Node* n : dead) {
    for (Value* o : n->outputs)
      if (o) {
        o->producer = nullptr;
        if (o->constant) o->type = {o->constant->dtype(), o->constant->dims(), true};
      }
    n->outputs.clear();
    g.erase_node(n);
  }
  g.remove_dead_nodes();
  return folded;
}

}  // namespace tessera
