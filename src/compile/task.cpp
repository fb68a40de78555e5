// Composing the tensor expressions of a block's nodes into one program, and
// the program's key.
#include "compile/task.h"

#include <cstdio>
#include <set>
#include <unordered_map>

#include "compile/node_kernel.h"
#include "opexpr/expr_registry.h"
#include "support/error.h"
#include "support/hash.h"

namespace tessera::compile {

std::vector<int> value_round(const std::vector<TensorType>& types, const std::vector<int>& open, int round) {
  constexpr int64_t kSmall = 64;  // elements: shapes, bounds, scales
  std::vector<int> r;
  for (int i : open) {
    const TensorType& t = types[static_cast<size_t>(i)];
    bool small = t.rank_known && t.fully_known() && numel_of(t.dims) <= kSmall;
    if (round >= 2 || (small && (round == 1 || is_integer(t.dtype)))) r.push_back(i);
  }
  return r;
}

std::string describe_block(const std::vector<const Node*>& nodes) {
  if (nodes.empty()) return "empty block";
  std::string s = nodes[0]->describe();
  if (nodes.size() > 1) s += " + " + nodes[1]->describe();
  if (nodes.size() > 2) s += " (+" + std::to_string(nodes.size() - 2) + " more)";
  return s;
}

std::string Task::describe() const { return describe_block(nodes); }

std::string Task::name_base() const {
  return sanitize_name(nodes[0]->name.empty() ? nodes[0]->op_type : nodes[0]->name);
}

std::string key_text(uint64_t key) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key));
  return buf;
}

Task build_task(int64_t opset, const std::vector<const Node*>& nodes, const TaskInputs& inputs,
                const std::vector<const Value*>& outputs) {
  TESSERA_CHECK(!nodes.empty(), "build_task: no nodes");
  Task task;
  task.nodes = nodes;
  const std::string what = task.describe();
  std::unordered_map<const Value*, te::Tensor> expr_of;  // every value the program has so far
  std::unordered_map<const Value*, TensorType> type_of;  // internal values' inferred types
  std::set<const Node*> in_block(nodes.begin(), nodes.end());
  std::vector<te::Tensor> placeholders;
  std::vector<const Value*> placeholder_value;
  std::pair<std::vector<te::Tensor>, std::vector<TensorType>> last_outs;  // the last node's outputs

  for (const Node* n : nodes) {
    const OpDef& def = op_registry().get(*n, opset);
    const ExprFn& expr = expr_registry().get(*n);
    std::vector<TensorType> in_types(n->inputs.size());
    std::vector<const Tensor*> in_values(n->inputs.size(), nullptr);
    std::vector<te::Tensor> in_exprs(n->inputs.size());
    std::vector<bool> external(n->inputs.size(), false);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (!v) continue;
      if (v->producer && in_block.count(v->producer)) {
        auto it = expr_of.find(v);
        TESSERA_CHECK(it != expr_of.end(), what, ": ", n->describe(), " reads '", v->name,
                      "' before the block computes it (nodes out of order)");
        in_types[i] = type_of.at(v);
        in_exprs[i] = it->second;
        continue;
      }
      external[i] = true;
      in_types[i] = inputs.type(v);
      TESSERA_CHECK(in_types[i].rank_known && in_types[i].fully_known() && in_types[i].dtype != DType::Undefined,
                    n->describe(), ": input '", v->name, "' has type ", in_types[i].to_string(),
                    "; a compiled kernel needs static shapes");
      if (v->constant) in_values[i] = &*v->constant;
      auto it = expr_of.find(v);
      if (it == expr_of.end()) {
        te::Tensor p = te::placeholder(in_types[i].dims, in_types[i].dtype, "x" + std::to_string(placeholders.size()));
        placeholders.push_back(p);
        placeholder_value.push_back(v);
        it = expr_of.emplace(v, p).first;
      }
      in_exprs[i] = it->second;
    }
    // Output types from the input types (and the constants' values).
    InferContext ictx{*n, opset, {}, in_values, {}};
    for (size_t i = 0; i < in_types.size(); ++i) ictx.input_types.push_back(n->inputs[i] ? &in_types[i] : nullptr);
    bool inferred = true;
    try {
      def.infer(ictx);
    } catch (const Error&) {
      inferred = false;
    }
    auto all_static = [&] {
      if (!inferred || ictx.output_types.size() < n->outputs.size()) return false;
      for (const TensorType& t : ictx.output_types)
        if (!(t.rank_known && t.fully_known())) return false;
      return true;
    };
    // Shapes that depend on values read from outside: ask for them.
    std::vector<int> open;
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (external[i] && !in_values[i]) open.push_back(static_cast<int>(i));
    for (int round = 0; round < kValueRounds && !all_static(); ++round) {
      for (int i : value_round(in_types, open, round))
        if (!ictx.input_values[static_cast<size_t>(i)])
          ictx.input_values[static_cast<size_t>(i)] = inputs.value(n->inputs[static_cast<size_t>(i)]);
      ictx.output_types.clear();
      inferred = true;
      try {
        def.infer(ictx);
      } catch (const Error&) {
        if (round + 1 == kValueRounds) throw;
        inferred = false;
      }
    }
    ictx.output_types.resize(n->outputs.size());
    for (const TensorType& t : ictx.output_types)
      TESSERA_CHECK(t.rank_known && t.fully_known() && t.dtype != DType::String, n->describe(), ": output type ",
                    t.to_string(), " is not static; a compiled kernel needs static shapes");
    ExprContext ctx{*n, opset, in_exprs, in_values, ictx.output_types, {}};
    ctx.fetch = [&](int i) -> const Tensor* {
      return external[static_cast<size_t>(i)] ? inputs.value(n->inputs[static_cast<size_t>(i)]) : nullptr;
    };
    std::vector<te::Tensor> outs = expr(ctx);
    TESSERA_CHECK(outs.size() == ictx.output_types.size(), n->describe(), ": expression gives ", outs.size(),
                  " outputs, inference ", ictx.output_types.size());
    if (n == nodes.back()) last_outs = {outs, ictx.output_types};
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorType& t = ictx.output_types[k];
      TESSERA_CHECK(outs[k].defined() && outs[k].dtype() == t.dtype && outs[k].shape() == t.dims, n->describe(),
                    ": expression output ", k, " is ",
                    outs[k].defined() ? std::string(dtype_name(outs[k].dtype())) + "[" + dims_to_string(outs[k].shape()) + "]"
                                      : std::string("undefined"),
                    ", inference says ", t.to_string());
      if (const Value* o = n->outputs[k]) {
        expr_of[o] = outs[k];
        type_of[o] = t;
      }
    }
    for (size_t i = 0; i < ctx.value_used.size() && i < n->inputs.size(); ++i)
      if (ctx.value_used[i] && n->inputs[i]) {
        task.values_used.push_back(n->inputs[i]);
        task.baked = hash_combine(task.baked, hash_tensor(*ctx.values[i]));
      }
  }

  if (outputs.empty()) {  // every output of the (last) node, absent ones too
    task.outs = last_outs.first;
    task.output_types = last_outs.second;
    task.outputs.assign(nodes.back()->outputs.begin(), nodes.back()->outputs.end());
  }
  for (const Value* o : outputs) {
    auto it = expr_of.find(o);
    TESSERA_CHECK(it != expr_of.end() && type_of.count(o), what, ": block output '", o->name,
                  "' is not computed by the block");
    task.outs.push_back(it->second);
    task.outputs.push_back(o);
    task.output_types.push_back(type_of.at(o));
  }
  materialize_outputs(task.outs, [&](size_t i) {
    return task.outputs[i] ? sanitize_name(task.outputs[i]->name) + ".out" : task.name_base() + ".out" + std::to_string(i);
  });
  std::set<std::string> stage_names;
  auto stages = te::stages_of(task.outs);
  for (const te::StagePtr& s : stages)
    TESSERA_CHECK(stage_names.insert(s->name).second, what, ": two stages are named '", s->name,
                  "' (nodes with the same name)");
  for (size_t i = 0; i < placeholders.size(); ++i)
    for (const auto& s : stages)
      if (s.get() == &placeholders[i].stage()) {
        task.params.push_back(placeholders[i]);
        task.param_values.push_back(placeholder_value[i]);
        task.constant.push_back(inputs.constant ? inputs.constant(placeholder_value[i])
                                                : placeholder_value[i]->constant.has_value());
      }
  task.name = task.name_base();
  if (nodes.size() > 1) task.name += ".fused";
  task.key = task_key(opset, task);
  return task;
}

Task node_task(const Node& n, int64_t opset, const std::vector<bool>& constant) {
  TaskInputs in;
  in.type = [](const Value* v) { return v->type; };
  in.value = [](const Value* v) -> const Tensor* { return v->constant ? &*v->constant : nullptr; };
  in.constant = [&](const Value* v) {
    for (size_t i = 0; i < n.inputs.size() && i < constant.size(); ++i)
      if (n.inputs[i] == v && constant[i]) return true;
    return false;
  };
  return build_task(opset, {&n}, in, {});
}

uint64_t task_key(int64_t opset, const Task& task) {
  // Values numbered by their role: a param by its position, a block value by
  // its producer's position in the block and output index.
  std::unordered_map<const Value*, uint64_t> id;
  for (size_t i = 0; i < task.param_values.size(); ++i) id[task.param_values[i]] = hash_combine(0x9a7a, i);
  for (size_t k = 0; k < task.nodes.size(); ++k)
    for (size_t j = 0; j < task.nodes[k]->outputs.size(); ++j)
      if (const Value* o = task.nodes[k]->outputs[j]) id[o] = hash_combine(hash_combine(0xb10c, k), j);
  uint64_t h = hash_combine(0x7a5c, static_cast<uint64_t>(opset));
  for (size_t i = 0; i < task.params.size(); ++i) {
    const te::Tensor& p = task.params[i];
    h = hash_combine(h, static_cast<uint64_t>(p.dtype()));
    h = hash_combine(h, hash_bytes(p.shape().data(), p.shape().size() * sizeof(int64_t)));
    h = hash_combine(h, task.constant[i] ? 1 : 0);
  }
  for (const Node* n : task.nodes) {
    uint64_t nh = hash_combine(hash_bytes(n->op_type.data(), n->op_type.size()),
                               hash_bytes(n->domain.data(), n->domain.size()));
    for (const Value* v : n->inputs) {
      if (!v) {
        nh = hash_combine(nh, 0);
        continue;
      }
      auto it = id.find(v);
      // A value outside the block that is not a param: a constant the
      // expression reads only as a value (its contents are the program).
      nh = hash_combine(nh, it != id.end() ? it->second : v->constant ? hash_tensor(*v->constant) : 0x0ff);
    }
    for (const auto& [name, a] : n->attrs)
      nh = hash_combine(nh, hash_combine(hash_bytes(name.data(), name.size()), hash_attribute(a)));
    nh = hash_combine(nh, n->outputs.size());
    h = hash_combine(h, nh);
  }
  h = hash_combine(h, task.baked);
  for (size_t i = 0; i < task.outputs.size(); ++i) {  // by role (an absent output of the last node by position)
    const Value* o = task.outputs[i];
    h = hash_combine(h, o && id.count(o) ? id.at(o) : hash_combine(0xab5e, i));
  }
  return h;
}

}  // namespace tessera::compile
