// The built-in op registry and graph-wide inference over it.
#include "ops/registry.h"

#include "ops/onnx_signatures.h"

#include "support/error.h"

namespace tessera {

const OpRegistry& op_registry() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_nn_ops(r);
    register_nn_extra_ops(r);
    register_tensor_ops(r);
    register_reduce_ops(r);
    register_misc_ops(r);
    register_string_ops(r);
    register_ml_ops(r);
    // ONNX's ops take ONNX's signatures (rows of ops Tessera lacks match none).
    for (const OnnxSignatureRow& row : onnx_signature_rows())
      r.add_signature(row.op, row.domain, {row.since_opset, row.inputs, row.outputs});
    return r;
  }();
  return reg;
}

// ---------------------------------------------------------------- inference

namespace {
// Merges an inferred type into a value's declared type; throws on conflict.
void merge_type(const Node& n, Value* v, const TensorType& inferred) {
  TensorType& cur = v->type;
  if (cur.dtype != DType::Undefined && inferred.dtype != DType::Undefined && cur.dtype != inferred.dtype)
    TESSERA_FAIL(n.describe(), ": output '", v->name, "' is declared ", cur.to_string(), " but the op produces ",
                 inferred.to_string());
  if (inferred.dtype != DType::Undefined) cur.dtype = inferred.dtype;
  if (!inferred.rank_known) return;
  if (!cur.rank_known) {
    cur.dims = inferred.dims;
    cur.rank_known = true;
    return;
  }
  if (cur.dims.size() != inferred.dims.size()) {
    TESSERA_FAIL(n.describe(), ": output '", v->name, "' is declared ", cur.to_string(), " but the op produces ",
                 inferred.to_string());
  }
  for (size_t i = 0; i < cur.dims.size(); ++i) {
    if (inferred.dims[i] < 0) continue;
    if (cur.dims[i] >= 0 && cur.dims[i] != inferred.dims[i])
      TESSERA_FAIL(n.describe(), ": output '", v->name, "' is declared ", cur.to_string(), " but the op produces ",
                   inferred.to_string());
    cur.dims[i] = inferred.dims[i];
  }
}
}  // namespace

void infer_node(const Node& n, int64_t opset) {
  const OpDef& def = op_registry().get(n, opset);
  InferContext ctx{n, opset, {}, {}, {}};
  bool all_ranks = true;
  for (Value* v : n.inputs) {
    ctx.input_types.push_back(v ? &v->type : nullptr);
    ctx.input_values.push_back(v && v->constant ? &*v->constant : nullptr);
    if (v && !v->type.rank_known) all_ranks = false;
  }
  if (all_ranks) {
    try {
      def.infer(ctx);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      TESSERA_FAIL(n.describe(), ": ", e.what());
    }
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (!n.outputs[i]) continue;
    TensorType t;
    if (i < ctx.output_types.size()) {
      t = ctx.output_types[i];
    } else {
      t.rank_known = false;
    }
    merge_type(n, n.outputs[i], t);
  }
}

void infer_graph(Graph& g) {
  for (const auto& n : g.nodes()) infer_node(*n, g.opset);
}

std::vector<Tensor> run_reference(const Node& n, int64_t opset, const std::vector<const Tensor*>& inputs,
                                  std::function<const Tensor*(const std::string&)> outer) {
  const OpDef& def = op_registry().get(n, opset);
  KernelContext ctx{n, opset, inputs, std::move(outer)};
  std::vector<Tensor> out;
  try {
    out = def.reference(ctx);
  } catch (const std::exception& e) {
    // Every error names the node: kernels' own checks do; a tensor too large
    // for the machine (support/memory.h) and the like do not know it.
    std::string m = e.what();
    if (dynamic_cast<const Error*>(&e) && m.find(n.describe()) != std::string::npos) throw;
    TESSERA_FAIL(n.describe(), ": ", m);
  }
  return out;
}

double node_flops(const Node& n) {
  std::vector<const TensorType*> ins;
  std::vector<TensorType> outs;
  for (Value* v : n.inputs) {
    if (v && !v->type.fully_known()) return 0;
    ins.push_back(v ? &v->type : nullptr);
  }
  for (Value* v : n.outputs) {
    if (v && !v->type.fully_known()) return 0;
    outs.push_back(v ? v->type : TensorType{});
  }
  const OpDef* def = op_registry().find(n.op_type, n.domain);
  if (def && def->flops) return def->flops(n, ins, outs);
  double f = 0;
  for (const TensorType& t : outs)
    if (t.dtype != DType::Undefined) f += static_cast<double>(numel_of(t.dims));
  return f;
}

MappingType node_mapping_type(const Node& n) {
  const OpDef* def = op_registry().find(n.op_type, n.domain);
  TESSERA_CHECK(def, n.describe(), ": op is not registered");
  if (!def->broadcasts || n.outputs.empty() || !n.outputs[0]) return def->mapping;
  const TensorType& out = n.outputs[0]->type;
  if (!out.fully_known()) return def->mapping;
  int64_t out_numel = numel_of(out.dims);
  for (const Value* v : n.inputs)
    if (v && v->type.fully_known() && v->type.rank() > 0 && numel_of(v->type.dims) < out_numel &&
        numel_of(v->type.dims) > 1)
      return MappingType::OneToMany;
  return def->mapping;
}

double node_bytes(const Node& n) {
  double b = 0;
  for (const auto* list : {&n.inputs, &n.outputs})
    for (Value* v : *list) {
      if (!v) continue;
      if (!v->type.fully_known()) return 0;
      b += static_cast<double>(numel_of(v->type.dims)) * static_cast<double>(dtype_size(v->type.dtype));
    }
  return b;
}

}  // namespace tessera
