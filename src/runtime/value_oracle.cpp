// Values computed on request by the reference kernels.
#include "runtime/value_oracle.h"

#include <algorithm>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera::runtime {

ValueOracle::ValueOracle(const Graph& g, const std::vector<Tensor>& inputs) : g_(g) {
  for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i) inputs_[g.inputs()[i]] = &inputs[i];
  for (size_t i = 0; i < g.nodes().size(); ++i) index_[g.nodes()[i].get()] = i;
}

const Tensor& ValueOracle::value(const Value* v) {
  TESSERA_CHECK(v, "ValueOracle: no value");
  if (v->constant) return *v->constant;
  auto in = inputs_.find(v);
  if (in != inputs_.end()) return *in->second;
  auto it = known_.find(v);
  if (it != known_.end()) return *it->second;
  TESSERA_CHECK(v->producer, "value '", v->name, "' has no value (not a graph input, constant or node output)");
  compute(*v->producer);
  return *known_.at(v);
}

const std::vector<Tensor>& ValueOracle::outputs(const Node& n) {
  if (!outputs_.count(&n)) compute(n);
  return outputs_.at(&n);
}

void ValueOracle::compute(const Node& target) {
  // The nodes not run yet that `target` depends on (through inputs and the
  // captures of subgraph bodies), run in graph order.
  std::vector<const Node*> todo, stack{&target};
  std::unordered_map<const Node*, bool> seen;
  auto visit_value = [&](const Value* v) {
    if (v && !v->constant && !inputs_.count(v) && !known_.count(v) && v->producer && !seen[v->producer])
      stack.push_back(v->producer);
  };
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    todo.push_back(n);
    for (const Value* v : n->inputs) visit_value(v);
    for (const std::string& name : captured_names(*n)) visit_value(g_.find_value(name));
  }
  std::sort(todo.begin(), todo.end(), [&](const Node* a, const Node* b) { return index_.at(a) < index_.at(b); });
  for (const Node* n : todo) {
    std::vector<const Tensor*> ins;
    for (const Value* v : n->inputs) ins.push_back(v ? &value(v) : nullptr);
    auto resolve = [&](const std::string& name) -> const Tensor* {
      const Value* v = g_.find_value(name);
      if (!v) return nullptr;
      if (v->constant) return &*v->constant;
      if (auto in = inputs_.find(v); in != inputs_.end()) return in->second;
      auto it = known_.find(v);
      return it == known_.end() ? nullptr : it->second;
    };
    std::vector<Tensor> outs = run_reference(*n, g_.opset, ins, resolve);
    outs.resize(n->outputs.size());
    std::vector<Tensor>& kept = outputs_[n] = std::move(outs);
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      if (!n->outputs[k]) continue;
      TESSERA_CHECK(kept[k].defined(), n->describe(), ": kernel returned no tensor for output '", n->outputs[k]->name,
                    "'");
      known_[n->outputs[k]] = &kept[k];
    }
  }
}

}  // namespace tessera::runtime
