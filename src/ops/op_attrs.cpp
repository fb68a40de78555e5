// The schema-aware attribute reader and the graph-wide attribute check.
#include "ops/op_attrs.h"

#include "support/error.h"

namespace tessera {

namespace {
const OpDef& def_of(const Node& n, int64_t opset) {
  if (opset != kAnyOpset) return op_registry().get(n, opset);
  const OpDef* d = op_registry().find(n.op_type, n.domain);
  TESSERA_CHECK(d, n.describe(), ": op '", n.op_type, "' is not supported by Tessera");
  return *d;
}
}  // namespace

OpAttrs::OpAttrs(const Node& n, int64_t opset) : n_(n), def_(&def_of(n, opset)), opset_(opset) {}

const AttrSpec& OpAttrs::spec(std::string_view key) const {
  const AttrSpec* s = def_->attr_spec(key);
  TESSERA_CHECK(s, "internal error: ", n_.describe(), " reads attribute '", key, "', which the schema of ", def_->name,
                " does not declare");
  return *s;
}

const Attribute* OpAttrs::raw(std::string_view key) const {
  spec(key);
  auto it = n_.attrs.find(std::string(key));
  return it == n_.attrs.end() ? nullptr : &it->second;
}

bool OpAttrs::has(std::string_view key) const { return raw(key) != nullptr; }

const Attribute& OpAttrs::value(std::string_view key, Attribute::Kind want) const {
  const AttrSpec& sp = spec(key);
  TESSERA_CHECK(attr_kind_accepts(sp.kind, want) || attr_kind_accepts(want, sp.kind),
                "internal error: attribute '", key, "' of ", def_->name, " is declared ", attr_kind_name(sp.kind),
                " but read as ", attr_kind_name(want));
  auto it = n_.attrs.find(sp.name);
  if (it != n_.attrs.end()) {
    TESSERA_CHECK(attr_kind_accepts(want, it->second.kind), n_.describe(), ": attribute '", key, "' must be ",
                  attr_kind_name(want), ", found ", attr_kind_name(it->second.kind));
    return it->second;
  }
  TESSERA_CHECK(opset_ != kAnyOpset || sp.rules.size() == 1, "internal error: ", n_.describe(), " reads attribute '",
                key, "', whose default depends on the opset, without an opset");
  const AttrSpec::Rule& r = sp.at(opset_);
  TESSERA_CHECK(r.presence == AttrSpec::Presence::Defaulted, n_.describe(), ": required attribute '", key,
                "' is missing");
  return r.value;
}

int64_t OpAttrs::i(std::string_view key) const { return value(key, Attribute::Kind::Int).i; }

float OpAttrs::f(std::string_view key) const {
  const Attribute& a = value(key, Attribute::Kind::Float);
  return a.kind == Attribute::Kind::Int ? static_cast<float>(a.i) : a.f;
}

const std::string& OpAttrs::s(std::string_view key) const { return value(key, Attribute::Kind::String).s; }

std::vector<int64_t> OpAttrs::ints(std::string_view key) const {
  const Attribute& a = value(key, Attribute::Kind::Ints);
  if (a.kind == Attribute::Kind::Int) return {a.i};
  return a.ints;
}

std::vector<float> OpAttrs::floats(std::string_view key) const {
  const Attribute& a = value(key, Attribute::Kind::Floats);
  if (a.kind == Attribute::Kind::Float) return {a.f};
  return a.floats;
}

const std::vector<std::string>& OpAttrs::strings(std::string_view key) const {
  return value(key, Attribute::Kind::Strings).strings;
}

const Tensor& OpAttrs::tensor(std::string_view key) const { return value(key, Attribute::Kind::Tensor).t; }

const std::shared_ptr<Graph>& OpAttrs::graph(std::string_view key) const {
  return value(key, Attribute::Kind::Graph).g;
}

void verify_schemas(const Graph& g) {
  for (const auto& n : g.nodes()) {
    const OpDef& def = op_registry().get(*n, g.opset);
    check_attributes(def, n->attrs, g.opset, n->describe());
    std::vector<bool> ins, outs;
    for (const Value* v : n->inputs) ins.push_back(v != nullptr);
    for (const Value* v : n->outputs) outs.push_back(v != nullptr);
    check_arity(def, g.opset, ins, outs, n->describe());
    for (const auto& [k, a] : n->attrs) {
      if (a.g) verify_schemas(*a.g);
      for (const auto& sub : a.graphs)
        if (sub) verify_schemas(*sub);
    }
  }
}

}  // namespace tessera
