// Node-by-node execution with reference kernels; intermediate tensors are
// released after their last use.
#include "interp/interpreter.h"

#include <unordered_map>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera {

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  TESSERA_CHECK(inputs.size() == g.inputs().size(), "model expects ", g.inputs().size(), " input(s) but ",
                inputs.size(), " were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = g.inputs()[i];
    const Tensor& t = inputs[i];
    TESSERA_CHECK(t.defined(), "input '", v->name, "' is missing");
    TESSERA_CHECK(v->type.dtype == DType::Undefined || t.dtype() == v->type.dtype, "input '", v->name,
                  "' must have element type ", dtype_name(v->type.dtype), " but has ", dtype_name(t.dtype()));
    if (!v->type.rank_known) continue;
    bool ok = t.rank() == v->type.rank();
    for (size_t d = 0; ok && d < v->type.dims.size(); ++d)
      ok = v->type.dims[d] < 0 || v->type.dims[d] == t.dims()[d];
    TESSERA_CHECK(ok, "input '", v->name, "' must have shape ", v->type.to_string(), " but has ",
                  dims_to_string(t.dims()));
  }
}

namespace {
void check_output_type(const Node& n, const Value* v, const Tensor& t) {
  if (!t.defined()) TESSERA_FAIL(n.describe(), ": produced no tensor for output '", v->name, "'");
  const TensorType& s = v->type;
  TESSERA_CHECK(s.dtype == DType::Undefined || s.dtype == t.dtype(), n.describe(), ": output '", v->name,
                "' was inferred as ", s.to_string(), " but the kernel produced ", dtype_name(t.dtype()));
  if (!s.rank_known) return;
  bool ok = static_cast<size_t>(t.rank()) == s.dims.size();
  for (size_t d = 0; ok && d < s.dims.size(); ++d) ok = s.dims[d] < 0 || s.dims[d] == t.dims()[d];
  TESSERA_CHECK(ok, n.describe(), ": output '", v->name, "' was inferred as ", s.to_string(),
                " but the kernel produced shape ", dims_to_string(t.dims()));
}
}  // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs, const InterpreterOptions& opts) {
  check_inputs(g, inputs);
  std::unordered_map<const Value*, Tensor> env;
  std::unordered_map<const Value*, int> remaining;  // uses left before release
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs()[i]] = inputs[i];
  for (const auto& n : g.nodes())
    for (Value* v : n->inputs)
      if (v) ++remaining[v];
  for (const Value* o : g.outputs()) remaining[o] += 1 << 20;  // never release outputs
  // Bodies of If/Loop/Scan read values by name: keep everything alive then.
  bool release = true;
  for (const auto& n : g.nodes())
    for (const auto& [k, a] : n->attrs)
      if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) release = false;

  auto lookup = [&](const Value* v, const Node& n) -> const Tensor* {
    auto it = env.find(v);
    if (it != env.end()) return &it->second;
    if (v->constant) return &*v->constant;
    if (opts.outer)
      if (const Tensor* t = opts.outer(v->name)) return t;
    TESSERA_FAIL(n.describe(), ": input '", v->name, "' has no value (not a graph input, constant or earlier output)");
  };

  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    std::vector<const Tensor*> ins;
    for (Value* v : n.inputs) ins.push_back(v ? lookup(v, n) : nullptr);
    // Nested bodies resolve names through this scope, then the enclosing one.
    auto resolve = [&](const std::string& name) -> const Tensor* {
      if (const Value* v = g.find_value(name)) {
        auto it = env.find(v);
        if (it != env.end()) return &it->second;
        if (v->constant) return &*v->constant;
      }
      return opts.outer ? opts.outer(name) : nullptr;
    };
    std::vector<Tensor> outs = run_reference(n, g.opset, ins, resolve);
    TESSERA_CHECK(outs.size() >= n.outputs.size() || outs.size() >= 1, n.describe(), ": kernel returned ",
                  outs.size(), " outputs, expected ", n.outputs.size());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value* o = n.outputs[i];
      if (!o) continue;
      TESSERA_CHECK(i < outs.size(), n.describe(), ": kernel returned ", outs.size(), " outputs, expected ",
                    n.outputs.size());
      if (opts.check_types) check_output_type(n, o, outs[i]);
      env[o] = std::move(outs[i]);
    }
    if (opts.on_node) {
      std::vector<Tensor> shown;
      for (const Value* o : n.outputs) shown.push_back(o ? env[o] : Tensor());
      opts.on_node(n, shown);
    }
    for (Value* v : n.inputs) {
      if (!v) continue;
      if (--remaining[v] == 0 && release) env.erase(v);
    }
  }
  std::vector<Tensor> result;
  for (const Value* o : g.outputs()) {
    auto it = env.find(o);
    if (it != env.end()) {
      result.push_back(it->second);
    } else if (o->constant) {
      result.push_back(*o->constant);
    } else {
      TESSERA_FAIL("graph output '", o->name, "' was never computed");
    }
  }
  return result;
}

}  // namespace tessera
