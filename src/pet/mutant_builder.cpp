// Building mutants (see mutant_builder.h).
#include "pet/mutant_builder.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera::pet {

ProgramBuilder::ProgramBuilder(const Graph& original) : original_(original), g_(std::make_shared<Graph>()) {
  g_->name = "pet_mutant";
  g_->opset = original.opset;
  g_->ir_version = original.ir_version;
  g_->extra_opsets = original.extra_opsets;
  for (const Value* v : original.inputs()) g_->add_input(v->name, v->type);
}

std::vector<Value*> ProgramBuilder::op(const std::string& op_type, std::vector<Value*> ins, AttrMap attrs,
                                       int num_outputs) {
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g_->unique_name("m_" + op_type));
  Node* n = g_->add_node(op_type, std::move(ins), outs, std::move(attrs), g_->unique_name("m_" + op_type));
  infer_node(*n, g_->opset);
  return n->outputs;
}

Value* ProgramBuilder::ints(const std::vector<int64_t>& v) {
  return g_->add_int64s("m_ints", v);
}

Value* ProgramBuilder::floats(const Tensor& t) { return g_->add_constant(g_->unique_name("m_const"), t); }

Value* ProgramBuilder::reshape(Value* x, const Dims& dims) {
  if (x->type.dims == dims) return x;
  return op1("Reshape", {x, ints(dims)});
}

Value* ProgramBuilder::transpose(Value* x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  return op1("Transpose", {x}, {{"perm", Attribute::of_ints(perm)}});
}

Value* ProgramBuilder::rt(Value* x, const Dims& mid, const std::vector<int64_t>& perm, const Dims& out) {
  Value* y = transpose(reshape(x, mid), perm);
  return out.empty() ? y : reshape(y, out);
}

Value* ProgramBuilder::pad(Value* x, const std::vector<int64_t>& pads) {
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return x;
  return op1("Pad", {x, ints(pads)});
}

Value* ProgramBuilder::slice(Value* x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                             const std::vector<int64_t>& axes) {
  return op1("Slice", {x, ints(starts), ints(ends), ints(axes)});
}

Value* ProgramBuilder::concat(const std::vector<Value*>& xs, int64_t axis) {
  if (xs.size() == 1) return xs[0];
  return op1("Concat", xs, {{"axis", Attribute::of_int(axis)}});
}

std::vector<Value*> ProgramBuilder::split(Value* x, int64_t axis, const std::vector<int64_t>& sizes) {
  return op("Split", {x, ints(sizes)}, {{"axis", Attribute::of_int(axis)}}, static_cast<int>(sizes.size()));
}

Value* ProgramBuilder::conv(Value* x, Value* w, Value* b, const std::vector<int64_t>& strides,
                            const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations, int64_t group) {
  AttrMap a;
  a["strides"] = Attribute::of_ints(strides);
  a["pads"] = Attribute::of_ints(pads);
  a["dilations"] = Attribute::of_ints(dilations);
  a["group"] = Attribute::of_int(group);
  std::vector<Value*> ins{x, w};
  if (b) ins.push_back(b);
  return op1("Conv", ins, a);
}

std::shared_ptr<Graph> ProgramBuilder::finish(const std::vector<Value*>& outputs) {
  TESSERA_CHECK(outputs.size() == original_.outputs().size(), "PET mutant: ", outputs.size(),
                " outputs where the subprogram has ", original_.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    TESSERA_CHECK(outputs[i], "PET mutant: output ", i, " missing");
    TESSERA_CHECK(outputs[i]->type == original_.outputs()[i]->type, "PET mutant: output ", i, " is ",
                  outputs[i]->type.to_string(), ", the subprogram's ", original_.outputs()[i]->type.to_string());
    g_->add_output(outputs[i]);
  }
  g_->remove_dead_nodes();
  g_->remove_unused_values();
  verify_graph(*g_);
  return g_;
}

std::shared_ptr<Graph> rewrite_nodes(const Graph& original, const std::vector<const Node*>& targets,
                                     const RewriteFn& emit) {
  ProgramBuilder b(original);
  Graph& g = b.graph();
  std::unordered_map<const Value*, Value*> vmap;
  for (size_t i = 0; i < original.inputs().size(); ++i) vmap[original.inputs()[i]] = b.input(i);
  std::unordered_set<const Node*> tset(targets.begin(), targets.end());
  auto map_value = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = vmap.find(v);
    if (it != vmap.end()) return it->second;
    TESSERA_CHECK(v->is_constant(), "PET rewrite: value '", v->name, "' read before it is written");
    Value* c = g.add_constant(g.unique_name(v->name), *v->constant);
    vmap[v] = c;
    return c;
  };
  bool emitted = false;
  auto do_emit = [&] {
    std::vector<std::vector<Value*>> ins;
    for (const Node* t : targets) {
      std::vector<Value*> in;
      for (const Value* v : t->inputs) in.push_back(map_value(v));
      ins.push_back(in);
    }
    auto outs = emit(b, ins);
    TESSERA_CHECK(outs.size() == targets.size(), "PET rewrite: outputs for ", outs.size(), " of ", targets.size(),
                  " nodes");
    for (size_t t = 0; t < targets.size(); ++t)
      for (size_t k = 0; k < targets[t]->outputs.size() && k < outs[t].size(); ++k)
        if (targets[t]->outputs[k] && outs[t][k]) vmap[targets[t]->outputs[k]] = outs[t][k];
    emitted = true;
  };
  auto targets_ready = [&] {
    for (const Node* t : targets)
      for (const Value* v : t->inputs)
        if (v && !v->is_constant() && !vmap.count(v)) return false;
    return true;
  };
  for (const auto& np : original.nodes()) {
    const Node* n = np.get();
    if (!emitted && targets_ready()) do_emit();
    if (tset.count(n)) continue;
    std::vector<Value*> ins;
    for (const Value* v : n->inputs) ins.push_back(map_value(v));
    std::vector<std::string> outs;
    for (const Value* o : n->outputs) outs.push_back(o ? g.unique_name(o->name) : "");
    Node* c = g.add_node(n->op_type, ins, outs, n->attrs, g.unique_name(n->name));
    c->domain = n->domain;
    infer_node(*c, g.opset);
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) vmap[n->outputs[i]] = c->outputs[i];
  }
  if (!emitted) do_emit();
  std::vector<Value*> outs;
  for (const Value* o : original.outputs()) {
    auto it = vmap.find(o);
    TESSERA_CHECK(it != vmap.end(), "PET rewrite: output '", o->name, "' not written");
    outs.push_back(it->second);
  }
  return b.finish(outs);
}

std::vector<int64_t> ints_attr_or(const Node& n, const char* key, std::vector<int64_t> def) {
  const Attribute* a = n.attr(key);
  if (!a) return def;
  if (a->kind == Attribute::Kind::Int) return {a->i};
  return a->ints;
}

int64_t int_attr_or(const Node& n, const char* key, int64_t def) {
  const Attribute* a = n.attr(key);
  return a ? a->i : def;
}

}  // namespace tessera::pet
