// Graph printer, structural hash and verifier.
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/graph.h"
#include "support/error.h"
#include "support/hash.h"

namespace tessera {

namespace {
void print_attr(std::ostream& os, const Attribute& a) {
  using K = Attribute::Kind;
  auto list = [&](const auto& v) {
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << ']';
  };
  switch (a.kind) {
    case K::Int: os << a.i; break;
    case K::Float: os << a.f; break;
    case K::String: os << '"' << a.s << '"'; break;
    case K::Ints: list(a.ints); break;
    case K::Floats: list(a.floats); break;
    case K::Strings: list(a.strings); break;
    case K::Tensor: os << "tensor<" << dtype_name(a.t.dtype()) << "[" << dims_to_string(a.t.dims()) << "]>"; break;
    case K::Tensors: os << "tensors<" << a.tensors.size() << ">"; break;
    case K::Graph: os << "graph<" << (a.g ? a.g->nodes().size() : 0) << " nodes>"; break;
    case K::Graphs: os << "graphs<" << a.graphs.size() << ">"; break;
  }
}
}  // namespace

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << (g.name.empty() ? "main" : g.name) << " (opset " << g.opset << ")\n";
  for (const Value* v : g.inputs()) os << "  input  %" << v->name << " : " << v->type.to_string() << "\n";
  int consts = 0;
  for (const auto& v : g.values())
    if (v->is_constant()) ++consts;
  if (consts) os << "  " << consts << " constants\n";
  for (const auto& n : g.nodes()) {
    os << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      if (i) os << ", ";
      const Value* o = n->outputs[i];
      if (o)
        os << "%" << o->name << " : " << o->type.to_string();
      else
        os << "_";
    }
    os << " = " << (n->domain.empty() ? "" : n->domain + ".") << n->op_type << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) os << ", ";
      const Value* v = n->inputs[i];
      os << (v ? (v->is_constant() ? "$" : "%") + v->name : "_");
    }
    os << ")";
    if (!n->attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n->attrs) {
        os << (first ? "" : ", ") << k << "=";
        print_attr(os, a);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n->name << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) os << (i ? ", %" : " %") << g.outputs()[i]->name;
  os << "\n";
  return os.str();
}

uint64_t hash_tensor(const Tensor& t) {
  uint64_t h = hash_combine(static_cast<uint64_t>(t.dtype()), hash_bytes(t.dims().data(), t.dims().size() * 8));
  if (t.dtype() == DType::String) {
    for (const auto& s : t.strings()) h = hash_combine(h, hash_bytes(s.data(), s.size()));
    return h;
  }
  return t.defined() ? hash_combine(h, hash_bytes(t.raw(), t.nbytes())) : h;
}

uint64_t hash_attribute(const Attribute& a) {
  using K = Attribute::Kind;
  uint64_t h = static_cast<uint64_t>(a.kind);
  switch (a.kind) {
    case K::Int: return hash_combine(h, static_cast<uint64_t>(a.i));
    case K::Float: return hash_combine(h, hash_bytes(&a.f, sizeof a.f));
    case K::String: return hash_combine(h, hash_bytes(a.s.data(), a.s.size()));
    case K::Ints: return hash_combine(h, hash_bytes(a.ints.data(), a.ints.size() * 8));
    case K::Floats: return hash_combine(h, hash_bytes(a.floats.data(), a.floats.size() * 4));
    case K::Strings:
      for (const auto& s : a.strings) h = hash_combine(h, hash_bytes(s.data(), s.size()));
      return h;
    case K::Tensor: return hash_combine(h, hash_tensor(a.t));
    case K::Tensors:
      for (const auto& t : a.tensors) h = hash_combine(h, hash_tensor(t));
      return h;
    case K::Graph: return hash_combine(h, a.g ? structural_hash(*a.g) : 0);
    case K::Graphs:
      for (const auto& g : a.graphs) h = hash_combine(h, g ? structural_hash(*g) : 0);
      return h;
  }
  return h;
}

uint64_t structural_hash(const Graph& g) {
  // Values are numbered by first appearance, so renaming does not change the hash.
  std::unordered_map<const Value*, uint64_t> id;
  uint64_t next = 1;
  uint64_t h = hash_combine(0x7e55e7a, static_cast<uint64_t>(g.opset));
  auto value_hash = [&](const Value* v) -> uint64_t {
    if (!v) return 0;
    auto it = id.find(v);
    if (it != id.end()) return it->second;
    uint64_t vh = v->constant ? hash_combine(0xc0, hash_tensor(*v->constant)) : hash_combine(0x1d, next++);
    vh = hash_combine(vh, static_cast<uint64_t>(v->type.dtype));
    id[v] = vh;
    return vh;
  };
  for (const Value* v : g.inputs()) {
    h = hash_combine(h, value_hash(v));
    h = hash_combine(h, hash_bytes(v->type.dims.data(), v->type.dims.size() * 8));
  }
  for (const auto& n : g.nodes()) {
    uint64_t nh = hash_bytes(n->op_type.data(), n->op_type.size());
    nh = hash_combine(nh, hash_bytes(n->domain.data(), n->domain.size()));
    for (const Value* v : n->inputs) nh = hash_combine(nh, value_hash(v));
    for (const auto& [k, a] : n->attrs) nh = hash_combine(nh, hash_combine(hash_bytes(k.data(), k.size()), hash_attribute(a)));
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) id[n->outputs[i]] = hash_combine(nh, i + 1);
    h = hash_combine(h, nh);
  }
  for (const Value* o : g.outputs()) h = hash_combine(h, value_hash(o));
  return h;
}

void verify_graph(const Graph& g) {
  std::unordered_set<const Value*> defined;
  std::set<std::string> names;
  for (const auto& v : g.values()) {
    TESSERA_CHECK(names.insert(v->name).second, "value name '", v->name, "' is used twice");
    if (v->is_constant()) {
      TESSERA_CHECK(!v->producer, "constant '", v->name, "' also has a producer");
      defined.insert(v.get());
    }
  }
  for (const Value* v : g.inputs()) {
    TESSERA_CHECK(v->is_graph_input && !v->producer, "graph input '", v->name, "' has a producer");
    defined.insert(v);
  }
  for (const Value* v : g.captures) defined.insert(v);
  for (const auto& n : g.nodes()) {
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (!v) continue;
      TESSERA_CHECK(defined.count(v), n->describe(), ": input ", i, " '", v->name,
                    "' is not defined before use (missing initializer, or the graph has a cycle)");
      bool listed = false;
      for (const Use& u : v->uses) listed |= u.node == n.get() && u.input_index == static_cast<int>(i);
      TESSERA_CHECK(listed, n->describe(), ": use list of '", v->name, "' is out of date");
    }
    for (const Value* o : n->outputs) {
      if (!o) continue;
      TESSERA_CHECK(o->producer == n.get(), n->describe(), ": output '", o->name, "' names another producer");
      TESSERA_CHECK(!defined.count(o), n->describe(), ": output '", o->name, "' is defined twice");
      defined.insert(o);
    }
  }
  for (const Value* o : g.outputs()) TESSERA_CHECK(defined.count(o), "graph output '", o->name, "' is never defined");
}

}  // namespace tessera
