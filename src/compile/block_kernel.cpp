// Composing the tensor expressions of a block's nodes into one program.
#include "compile/block_kernel.h"

#include <set>
#include <unordered_map>

#include "ir/op_registry.h"
#include "loop/visitor.h"
#include "support/error.h"

namespace tessera::compile {

namespace {

// Bytes of the temporaries a kernel allocates outside every loop (whole
// intermediates, not per-tile scratch).
int64_t root_allocation_bytes(const loop::Stmt& body) {
  struct Finder : loop::IRVisitor {
    int depth = 0;
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const loop::ForNode* op) override {
      ++depth;
      IRVisitor::visit(op);
      --depth;
    }
    void visit(const loop::AllocateNode* op) override {
      if (depth == 0)
        if (const int64_t* n = loop::as_const_int(op->extent))
          bytes += *n * static_cast<int64_t>(dtype_size(op->buffer.dtype()));
      IRVisitor::visit(op);
    }
  } f;
  f.visit(body);
  return f.bytes;
}

}  // namespace

std::string describe_block(const std::vector<const Node*>& nodes) {
  if (nodes.empty()) return "empty block";
  std::string s = nodes[0]->describe();
  if (nodes.size() > 1) s += " + " + nodes[1]->describe();
  if (nodes.size() > 2) s += " (+" + std::to_string(nodes.size() - 2) + " more)";
  return s;
}

BlockKernel compile_block(int64_t opset, const std::vector<const Node*>& nodes,
                          const std::function<const Tensor*(const Value*)>& input,
                          const std::vector<const Value*>& outputs, const std::optional<schedule::Schedule>& sched,
                          const BlockKernelOptions& options) {
  TESSERA_CHECK(!nodes.empty(), "compile_block: no nodes");
  const std::string what = describe_block(nodes);
  std::unordered_map<const Value*, te::Tensor> expr_of;  // every value the program has so far
  std::unordered_map<const Value*, TensorType> type_of;  // internal values' inferred types
  std::set<const Node*> in_block(nodes.begin(), nodes.end());
  std::set<std::string> stage_names;
  BlockKernel bk;
  std::vector<te::Tensor> placeholders;
  std::vector<bool> constant;
  std::vector<const Value*> placeholder_value;

  for (const Node* n : nodes) {
    const OpDef& def = OpRegistry::global().get(*n, opset);
    TESSERA_CHECK(def.expr, n->describe(), ": ", n->op_type, " has no compiled kernel");
    std::vector<TensorType> in_types(n->inputs.size());
    std::vector<const Tensor*> in_values(n->inputs.size(), nullptr);
    std::vector<te::Tensor> in_exprs(n->inputs.size());
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (!v) continue;
      bool internal = v->producer && in_block.count(v->producer);
      if (internal) {
        auto it = expr_of.find(v);
        TESSERA_CHECK(it != expr_of.end(), what, ": ", n->describe(), " reads '", v->name,
                      "' before the block computes it (nodes out of order)");
        in_types[i] = type_of.at(v);
        in_exprs[i] = it->second;
        continue;
      }
      const Tensor* t = input(v);
      TESSERA_CHECK(t, what, ": no tensor for block input '", v->name, "'");
      in_types[i] = TensorType{t->dtype(), t->dims(), true};
      in_values[i] = t;
      auto it = expr_of.find(v);
      if (it == expr_of.end()) {
        te::Tensor p = te::placeholder(t->dims(), t->dtype(), "x" + std::to_string(placeholders.size()));
        placeholders.push_back(p);
        constant.push_back(v->constant.has_value());
        placeholder_value.push_back(v);
        it = expr_of.emplace(v, p).first;
      }
      in_exprs[i] = it->second;
    }
    // Output types from the inputs' types (and the values known here).
    InferContext ictx{*n, opset, {}, in_values, {}};
    for (size_t i = 0; i < in_types.size(); ++i) ictx.input_types.push_back(n->inputs[i] ? &in_types[i] : nullptr);
    def.infer(ictx);
    ictx.output_types.resize(n->outputs.size());
    for (const TensorType& t : ictx.output_types)
      TESSERA_CHECK(t.rank_known && t.fully_known() && t.dtype != DType::String, n->describe(), ": output type ",
                    t.to_string(), " is not static; a fused kernel needs static shapes");
    ExprContext ctx{*n, opset, in_exprs, in_values, ictx.output_types, {}};
    std::vector<te::Tensor> outs = def.expr(ctx);
    TESSERA_CHECK(outs.size() == ictx.output_types.size(), n->describe(), ": expression gives ", outs.size(),
                  " outputs, inference ", ictx.output_types.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorType& t = ictx.output_types[k];
      TESSERA_CHECK(outs[k].defined() && outs[k].dtype() == t.dtype && outs[k].shape() == t.dims, n->describe(),
                    ": expression output ", k, " disagrees with inference ", t.to_string());
      if (const Value* o = n->outputs[k]) {
        expr_of[o] = outs[k];
        type_of[o] = t;
      }
    }
    for (size_t i = 0; i < ctx.value_used.size() && i < n->inputs.size(); ++i)
      if (ctx.value_used[i] && n->inputs[i]) bk.values_used.push_back(n->inputs[i]);
  }

  std::vector<te::Tensor> outs;
  for (const Value* o : outputs) {
    auto it = expr_of.find(o);
    TESSERA_CHECK(it != expr_of.end() && type_of.count(o), what, ": block output '", o->name,
                  "' is not computed by the block");
    outs.push_back(it->second);
    bk.outputs.push_back(o);
    bk.output_types.push_back(type_of.at(o));
  }
  materialize_outputs(outs, [&](size_t i) { return sanitize_name(outputs[i]->name) + ".out"; });
  for (const te::StagePtr& s : te::stages_of(outs))
    TESSERA_CHECK(stage_names.insert(s->name).second, what, ": two stages are named '", s->name,
                  "' (nodes with the same name)");

  std::vector<te::Tensor> params;
  std::vector<bool> param_constant;
  auto stages = te::stages_of(outs);
  for (size_t i = 0; i < placeholders.size(); ++i)
    for (const auto& s : stages)
      if (s.get() == &placeholders[i].stage()) {
        params.push_back(placeholders[i]);
        param_constant.push_back(constant[i]);
        bk.params.push_back(placeholder_value[i]);
      }
  bk.expr_text = te::to_string(outs);
  std::string name = sanitize_name(nodes[0]->name.empty() ? nodes[0]->op_type : nodes[0]->name);
  if (nodes.size() > 1) name += ".fused";
  try {
    LoweredProgram lp = lower_program(name, params, param_constant, outs, sched, options.target);
    bk.kernel = std::move(lp.kernel);
    bk.schedule = std::move(lp.schedule);
    for (int p : lp.prepack_params) bk.prepack_inputs.push_back(bk.params[static_cast<size_t>(p)]);
    bk.prepack = std::move(lp.prepack);
    bk.scratch = std::move(lp.scratch);
    bk.in_place = std::move(lp.in_place);
  } catch (const Error& e) {
    TESSERA_FAIL(what, ": lowering failed: ", e.what());
  }
  bk.internal_bytes = root_allocation_bytes(bk.kernel.body);
  for (const loop::Buffer& b : bk.scratch) bk.internal_bytes += numel_of(b.dims()) * static_cast<int64_t>(dtype_size(b.dtype()));
  return bk;
}

}  // namespace tessera::compile
