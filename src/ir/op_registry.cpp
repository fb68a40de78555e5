// Op registry lookup, graph-wide inference and shared inference helpers.
#include "ir/op_registry.h"

#include <algorithm>
#include <mutex>

#include "ir/op_key.h"
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

std::pair<int, int> signature_counts(const std::string& sig) {
  size_t star = sig.find('*');
  std::string fixed = sig.substr(0, star);
  TESSERA_CHECK(fixed.find_first_not_of("1?") == std::string::npos, "malformed signature '", sig, "'");
  int min = static_cast<int>(fixed.rfind('1') + 1);  // npos + 1 = 0: none required
  if (star == std::string::npos) return {min, static_cast<int>(fixed.size())};
  std::string tail = sig.substr(star + 1);
  TESSERA_CHECK(!tail.empty() && tail.find_first_not_of("0123456789") == std::string::npos && tail.size() < 3,
                "malformed signature '", sig, "'");
  return {static_cast<int>(fixed.size()) + std::stoi(tail), -1};
}

namespace {
// One side of check_arity: `what` is "input" or "output".
void check_side(const std::string& sig, const std::vector<bool>& present, const char* what, const OpDef& def,
                int64_t opset, const std::string& label) {
  auto [min, max] = signature_counts(sig);
  int count = static_cast<int>(present.size());
  if (count < min || (max >= 0 && count > max)) {
    std::string want = max == min ? std::to_string(min)
                       : max < 0  ? "at least " + std::to_string(min)
                                  : std::to_string(min) + " to " + std::to_string(max);
    // The opset matters when the op's parameters changed across versions.
    std::string at = def.signatures.size() > 1 ? " at opset " + std::to_string(opset) : "";
    TESSERA_FAIL(label, ": ", def.name, at, " takes ", want, " ", what, want == "1" ? "" : "s", ", got ", count);
  }
  size_t star = sig.find('*');
  for (int i = 0; i < count; ++i) {
    if (present[static_cast<size_t>(i)]) continue;
    size_t k = static_cast<size_t>(i);
    bool optional = k < sig.size() && k < star && sig[k] == '?';
    TESSERA_CHECK(optional, label, ": ", what, " ", i, " of ", def.name, " is required but the node names it ''",
                  k >= star ? " (one of its variadic " + std::string(what) + "s)" : std::string());
  }
}
}  // namespace

void check_arity(const OpDef& def, int64_t opset, const std::vector<bool>& inputs_present,
                 const std::vector<bool>& outputs_present, const std::string& label) {
  const Signature* s = def.signature_at(opset);
  if (!s) return;
  check_side(s->inputs, inputs_present, "input", def, opset, label);
  check_side(s->outputs, outputs_present, "output", def, opset, label);
}

const Signature* OpDef::signature_at(int64_t opset) const {
  const Signature* found = nullptr;
  for (const Signature& s : signatures)
    if (s.since_opset <= opset) found = &s;
  // An op registered from an opset before its first row (other domains
  // version apart) takes the first row.
  return found || signatures.empty() ? found : &signatures.front();
}

const AttrSpec* OpDef::attr_spec(std::string_view name) const {
  for (const AttrSpec& s : attributes)
    if (s.name == name) return &s;
  return nullptr;
}

// ---------------------------------------------------------------- registry

void OpRegistry::add(OpDef def) {
  std::string key = op_key(def.name, def.domain);
  TESSERA_CHECK(!ops_.count(key), "op '", def.name, "' registered twice");
  TESSERA_CHECK(def.infer && def.reference, "op '", def.name, "' needs inference and a reference kernel");
  ops_.emplace(std::move(key), std::move(def));
}

bool OpRegistry::add_signature(const std::string& name, const std::string& domain, Signature row) {
  auto it = ops_.find(op_key(name, domain));
  if (it == ops_.end()) return false;
  signature_counts(row.inputs);
  signature_counts(row.outputs);
  it->second.signatures.push_back(std::move(row));
  return true;
}

const OpDef* OpRegistry::find(const std::string& op, const std::string& domain) const {
  auto it = ops_.find(op_key(op, domain));
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

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> v;
  for (const auto& [k, d] : ops_) v.push_back(&d);
  return v;
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
