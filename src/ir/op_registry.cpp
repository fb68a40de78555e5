// Op registry lookup, graph-wide inference and shared inference helpers.
#include "ir/op_registry.h"

#include <algorithm>
#include <mutex>

#include "support/error.h"

namespace tessera {

std::string_view mapping_type_name(MappingType t) {
  switch (t) {
    case MappingType::OneToOne: return "one-to-one";
    case MappingType::Reorganize: return "reorganize";
    case MappingType::Shuffle: return "shuffle";
    case MappingType::OneToMany: return "one-to-many";
    case MappingType::ManyToMany: return "many-to-many";
  }
  return "?";
}

const te::Tensor& ExprContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return inputs[static_cast<size_t>(i)];
}

bool ExprContext::has_value(int i) {
  if (i < 0 || i >= num_inputs()) return false;
  const Tensor*& v = values[static_cast<size_t>(i)];
  if (!v && fetch && node.inputs[static_cast<size_t>(i)]) v = fetch(i);
  return v != nullptr;
}

const Tensor& ExprContext::value(int i) {
  TESSERA_CHECK(i < num_inputs(), node.describe(), ": required input ", i, " is missing");
  has_value(i);
  TESSERA_CHECK(values[static_cast<size_t>(i)], node.describe(), ": compiling needs the value of input ", i,
                " ('", node.inputs[static_cast<size_t>(i)] ? node.inputs[static_cast<size_t>(i)]->name : "", "')");
  if (value_used.size() < values.size()) value_used.resize(values.size());
  value_used[static_cast<size_t>(i)] = true;
  return *values[static_cast<size_t>(i)];
}

std::string ExprContext::stage_name(const std::string& suffix) const {
  std::string base = node.name.empty() ? node.op_type : node.name;
  return suffix.empty() ? base : base + "." + suffix;
}

const TensorType& InferContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return *input_types[static_cast<size_t>(i)];
}

TensorType& InferContext::out(int i) {
  if (static_cast<int>(output_types.size()) <= i) output_types.resize(static_cast<size_t>(i) + 1);
  return output_types[static_cast<size_t>(i)];
}

const Tensor& KernelContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return *inputs[static_cast<size_t>(i)];
}

// ---------------------------------------------------------------- attribute specs

const AttrSpec::Rule& AttrSpec::at(int64_t opset) const {
  const Rule* r = &rules.front();
  for (const Rule& x : rules)
    if (x.since_opset <= opset) r = &x;
  return *r;
}

AttrSpec AttrSpec::required_from(int64_t opset) const {
  AttrSpec s = *this;
  if (opset <= 1) s.rules.clear();
  s.rules.push_back({std::max<int64_t>(opset, 1), Presence::Required, {}});
  return s;
}

AttrSpec AttrSpec::default_from(int64_t opset, Attribute value) const {
  AttrSpec s = *this;
  s.rules.push_back({opset, Presence::Defaulted, std::move(value)});
  return s;
}

AttrSpec AttrSpec::or_kind(Attribute::Kind k) const {
  AttrSpec s = *this;
  s.other_kinds.push_back(k);
  return s;
}

bool AttrSpec::accepts(Attribute::Kind found) const {
  return attr_kind_accepts(kind, found) ||
         std::find(other_kinds.begin(), other_kinds.end(), found) != other_kinds.end();
}

namespace {
AttrSpec optional_spec(std::string name, Attribute::Kind kind) {
  return {std::move(name), kind, {{1, AttrSpec::Presence::Optional, {}}}, {}};
}
AttrSpec defaulted_spec(std::string name, Attribute value) {
  Attribute::Kind kind = value.kind;
  return {std::move(name), kind, {{1, AttrSpec::Presence::Defaulted, std::move(value)}}, {}};
}
}  // namespace

using AK = Attribute::Kind;
AttrSpec int_attr(std::string name) { return optional_spec(std::move(name), AK::Int); }
AttrSpec int_attr(std::string name, int64_t def) { return defaulted_spec(std::move(name), Attribute::of_int(def)); }
AttrSpec float_attr(std::string name) { return optional_spec(std::move(name), AK::Float); }
AttrSpec float_attr(std::string name, float def) { return defaulted_spec(std::move(name), Attribute::of_float(def)); }
AttrSpec string_attr(std::string name) { return optional_spec(std::move(name), AK::String); }
AttrSpec string_attr(std::string name, std::string def) {
  return defaulted_spec(std::move(name), Attribute::of_string(std::move(def)));
}
AttrSpec ints_attr(std::string name) { return optional_spec(std::move(name), AK::Ints); }
AttrSpec ints_attr(std::string name, std::vector<int64_t> def) {
  return defaulted_spec(std::move(name), Attribute::of_ints(std::move(def)));
}
AttrSpec floats_attr(std::string name) { return optional_spec(std::move(name), AK::Floats); }
AttrSpec floats_attr(std::string name, std::vector<float> def) {
  return defaulted_spec(std::move(name), Attribute::of_floats(std::move(def)));
}
AttrSpec strings_attr(std::string name) { return optional_spec(std::move(name), AK::Strings); }
AttrSpec strings_attr(std::string name, std::vector<std::string> def) {
  return defaulted_spec(std::move(name), Attribute::of_strings(std::move(def)));
}
AttrSpec tensor_attr(std::string name) { return optional_spec(std::move(name), AK::Tensor); }
AttrSpec graph_attr(std::string name) { return optional_spec(std::move(name), AK::Graph); }

std::string_view attr_kind_name(Attribute::Kind k) {
  switch (k) {
    case AK::Float: return "a float";
    case AK::Int: return "an int";
    case AK::String: return "a string";
    case AK::Tensor: return "a tensor";
    case AK::Graph: return "a graph";
    case AK::Floats: return "a list of floats";
    case AK::Ints: return "a list of ints";
    case AK::Strings: return "a list of strings";
    case AK::Tensors: return "a list of tensors";
    case AK::Graphs: return "a list of graphs";
  }
  return "?";
}

bool attr_kind_accepts(Attribute::Kind declared, Attribute::Kind found) {
  if (declared == found) return true;
  return (declared == AK::Float && found == AK::Int) || (declared == AK::Ints && found == AK::Int) ||
         (declared == AK::Floats && found == AK::Float);
}

void check_attributes(const OpDef& def, const AttrMap& attrs, int64_t opset, const std::string& label) {
  for (const auto& [name, a] : attrs) {
    const AttrSpec* spec = def.attr_spec(name);
    TESSERA_CHECK(spec, label, ": attribute '", name, "' is not supported",
                  def.attributes.empty() ? " (the op takes no attributes)" : "");
    TESSERA_CHECK(spec->accepts(a.kind), label, ": attribute '", name, "' of ", def.name,
                  " must be ", attr_kind_name(spec->kind), ", found ", attr_kind_name(a.kind));
  }
  for (const AttrSpec& spec : def.attributes)
    TESSERA_CHECK(spec.at(opset).presence != AttrSpec::Presence::Required || attrs.count(spec.name), label,
                  ": required attribute '", spec.name, "' of ", def.name, " is missing");
}

namespace {
void check_count(const Arity& a, int count, const char* what, const OpDef& def, const std::string& label) {
  if (count >= a.min && (a.max < 0 || count <= a.max)) return;
  std::string want = a.max == a.min ? std::to_string(a.min)
                     : a.max < 0    ? "at least " + std::to_string(a.min)
                                    : std::to_string(a.min) + " to " + std::to_string(a.max);
  TESSERA_FAIL(label, ": ", def.name, " takes ", want, " ", what, want == "1" ? "" : "s", ", got ", count);
}
}  // namespace

void check_arity(const OpDef& def, int num_inputs, int num_outputs, const std::string& label) {
  check_count(def.inputs, num_inputs, "input", def, label);
  check_count(def.outputs, num_outputs, "output", def, label);
}

const AttrSpec* OpDef::attr_spec(std::string_view name) const {
  for (const AttrSpec& s : attributes)
    if (s.name == name) return &s;
  return nullptr;
}

// ---------------------------------------------------------------- registry

const OpRegistry& OpRegistry::global() {
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
    register_op_exprs(r);
    return r;
  }();
  return reg;
}

void OpRegistry::add(OpDef def) {
  std::string key = def.domain + "::" + def.name;
  TESSERA_CHECK(!ops_.count(key), "op '", def.name, "' registered twice");
  TESSERA_CHECK(def.infer && def.reference, "op '", def.name, "' needs inference and a reference kernel");
  ops_.emplace(std::move(key), std::move(def));
}

const OpDef* OpRegistry::find(const std::string& op, const std::string& domain) const {
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = ops_.find(d + "::" + op);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::get(const Node& n, int64_t opset) const {
  const OpDef* d = find(n.op_type, n.domain);
  TESSERA_CHECK(d, n.describe(), ": op '", n.op_type, "'",
                n.domain.empty() ? std::string() : " of domain '" + n.domain + "'", " (opset ", opset,
                ") is not supported by Tessera");
  // Other domains version independently; their ops carry min_opset 1.
  TESSERA_CHECK(!n.domain.empty() || opset >= d->min_opset, n.describe(), ": opset ", opset, " is older than the oldest supported (",
                d->min_opset, ") for ", n.op_type);
  return *d;
}

void OpRegistry::set_expr(const std::string& op, const std::string& domain, ExprFn fn) {
  auto it = ops_.find(domain + "::" + op);
  TESSERA_CHECK(it != ops_.end(), "expression for unregistered op '", op, "'");
  TESSERA_CHECK(!it->second.expr, "op '", op, "' has two expression definitions");
  it->second.expr = std::move(fn);
}

void OpRegistry::set_opaque(const std::string& op, const std::string& domain, std::string reason) {
  auto it = ops_.find(domain + "::" + op);
  TESSERA_CHECK(it != ops_.end(), "opaque reason for unregistered op '", op, "'");
  it->second.opaque_reason = std::move(reason);
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> v;
  for (const auto& [k, d] : ops_) v.push_back(&d);
  return v;
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
  const OpDef& def = OpRegistry::global().get(n, opset);
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
  const OpDef& def = OpRegistry::global().get(n, opset);
  KernelContext ctx{n, opset, inputs, std::move(outer)};
  std::vector<Tensor> out;
  try {
    out = def.reference(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    TESSERA_FAIL(n.describe(), ": ", e.what());
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
  const OpDef* def = OpRegistry::global().find(n.op_type, n.domain);
  if (def && def->flops) return def->flops(n, ins, outs);
  double f = 0;
  for (const TensorType& t : outs)
    if (t.dtype != DType::Undefined) f += static_cast<double>(numel_of(t.dims));
  return f;
}

MappingType node_mapping_type(const Node& n) {
  const OpDef* def = OpRegistry::global().find(n.op_type, n.domain);
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

// ---------------------------------------------------------------- helpers

Dims broadcast_dims(const Node& n, const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // unknown against known non-1: must be the known one
    } else {
      TESSERA_FAIL(n.describe(), ": shapes ", dims_to_string(a), " and ", dims_to_string(b),
                   " cannot be broadcast together");
    }
  }
  return out;
}

TensorType broadcast_types(const Node& n, const std::vector<const TensorType*>& ins) {
  TensorType t;
  bool first = true;
  for (const TensorType* in : ins) {
    if (!in) continue;
    if (first) {
      t = *in;
      first = false;
      continue;
    }
    if (!in->rank_known || !t.rank_known) {
      t.rank_known = false;
      t.dims.clear();
      continue;
    }
    t.dims = broadcast_dims(n, t.dims, in->dims);
  }
  return t;
}

int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank) {
  TESSERA_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), n.describe(), ": axis ", axis,
                " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tessera
