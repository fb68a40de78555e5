// Concrete types, node by node.
#include "runtime/concrete_types.h"

#include <algorithm>

#include "compile/task.h"
#include "opexpr/expr_registry.h"
#include "support/error.h"
#include "support/memory.h"

namespace tessera::runtime {

namespace {

bool type_static(const TensorType& t) { return t.dtype != DType::Undefined && t.rank_known && t.fully_known(); }

// Output types of `n` from its input types and the given input values; false
// when inference fails or leaves a present output (with `all`, any output)
// not static.
bool infer_static(const Node& n, int64_t opset, const OpDef& def, const std::vector<TensorType>& types,
                  const std::vector<const Tensor*>& values, std::vector<TensorType>* out, bool all = false) {
  InferContext ctx{n, opset, {}, values, {}};
  for (size_t i = 0; i < types.size(); ++i) ctx.input_types.push_back(n.inputs[i] ? &types[i] : nullptr);
  try {
    def.infer(ctx);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (i >= ctx.output_types.size()) return false;
    if ((all || n.outputs[i]) && !type_static(ctx.output_types[i])) return false;
  }
  if (out) {
    *out = ctx.output_types;
    out->resize(n.outputs.size());
  }
  return true;
}

}  // namespace

ConcreteTypes::ConcreteTypes(const Graph& g, const std::vector<Tensor>& inputs, ValueOracle& oracle)
    : g_(g), oracle_(oracle) {
  for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i)
    type_[g.inputs()[i]] = TensorType{inputs[i].dtype(), inputs[i].dims(), true};
  for (const auto& n : g.nodes()) infer_node(*n);
}

TensorType ConcreteTypes::type_of(const Value* v) const {
  if (v->constant) return TensorType{v->constant->dtype(), v->constant->dims(), true};
  auto it = type_.find(v);
  TESSERA_CHECK(it != type_.end(), "value '", v->name, "' has no type (not a graph input, constant or earlier output)");
  return it->second;
}

void ConcreteTypes::infer_node(const Node& n) {
  const OpDef& def = op_registry().get(n, g_.opset);
  NodeFacts& f = facts_[&n];
  std::vector<TensorType> types(n.inputs.size());
  std::vector<const Tensor*> values(n.inputs.size(), nullptr);
  std::vector<int> open;  // non-constant inputs
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) continue;
    types[i] = type_of(v);
    if (v->constant) values[i] = &*v->constant;
    else open.push_back(static_cast<int>(i));
  }
  std::vector<TensorType> out;
  bool evaluated = false;
  if (n.has_subgraph()) {
    // A body's shapes follow whatever it reads: the plan depends on all of it.
    for (int i : open) f.shape_deps.push_back(n.inputs[static_cast<size_t>(i)]);
    for (const std::string& name : captured_names(n))
      if (const Value* v = g_.find_value(name)) f.shape_deps.push_back(v);
    for (int i : open) values[static_cast<size_t>(i)] = &oracle_.value(n.inputs[static_cast<size_t>(i)]);
    if (!infer_static(n, g_.opset, def, types, values, &out)) evaluated = true;
  } else if (!infer_static(n, g_.opset, def, types, values, &out)) {
    // Shapes read from values (a Reshape's shape, Slice bounds, Resize
    // scales), asked for in widening rounds.
    auto known_with = [&](const std::vector<int>& given, std::vector<TensorType>* o) {
      std::vector<const Tensor*> vs = values;
      for (int i : given) vs[static_cast<size_t>(i)] = &oracle_.value(n.inputs[static_cast<size_t>(i)]);
      return infer_static(n, g_.opset, def, types, vs, o);
    };
    std::vector<int> small;
    bool found = false;
    for (int round = 0; round + 1 < compile::kValueRounds && !found; ++round) {
      small = compile::value_round(types, open, round);
      found = !small.empty() && known_with(small, nullptr);
    }
    if (found) {
      std::vector<int> needed;
      for (int i : small) {
        std::vector<int> others;
        for (int j : small)
          if (j != i) others.push_back(j);
        if (!known_with(others, nullptr)) needed.push_back(i);
      }
      if (!known_with(needed, &out)) needed = small, known_with(small, &out);
      for (int i : needed) {
        f.shape_deps.push_back(n.inputs[static_cast<size_t>(i)]);
        values[static_cast<size_t>(i)] = &oracle_.value(n.inputs[static_cast<size_t>(i)]);
      }
    } else {  // the shapes depend on the data itself (NonZero ...)
      for (int i : open) f.shape_deps.push_back(n.inputs[static_cast<size_t>(i)]);
      evaluated = true;
    }
  }
  if (evaluated) {
    const std::vector<Tensor>& outs = oracle_.outputs(n);
    out.assign(n.outputs.size(), TensorType{});
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k]) out[k] = TensorType{outs[k].dtype(), outs[k].dims(), true};
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (!n.outputs[k]) continue;
    type_[n.outputs[k]] = out[k];
    // Before any kernel is compiled or any memory planned: an output no
    // machine of this kind could hold is an error naming the node.
    check_tensor_fits(out[k].dtype, out[k].dims, n.describe() + ": output '" + n.outputs[k]->name + "'");
  }

  auto is_string = [](const TensorType& t) { return t.dtype == DType::String; };
  std::vector<TensorType> all_out;
  const ExprDef* ed = expr_registry().find(n.op_type, n.domain);
  if (!ed || !ed->expr) f.reason = !ed || ed->opaque_reason.empty() ? "no tensor expression" : ed->opaque_reason;
  else if (n.has_subgraph()) f.reason = "subgraph op";
  else if (std::any_of(types.begin(), types.end(), is_string)) f.reason = "string tensors";
  else if (evaluated || !infer_static(n, g_.opset, def, types, values, &all_out, true)) f.reason = "output shape not static";
  else if (std::any_of(all_out.begin(), all_out.end(), is_string)) f.reason = "string tensors";
  else f.compilable = true;
}

}  // namespace tessera::runtime
