// Graph construction, rewriting helpers, clone and subgraph extraction.
#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/node_copy.h"
#include "support/error.h"

namespace tessera {

bool TensorType::fully_known() const {
  if (!rank_known || dtype == DType::Undefined) return false;
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

std::string TensorType::to_string() const {
  std::string s(dtype_name(dtype));
  if (!rank_known) return s + "[*]";
  return s + "[" + (dims.empty() ? std::string() : dims_to_string(dims)) + "]";
}

Attribute Attribute::of_int(int64_t v) { Attribute a; a.kind = Kind::Int; a.i = v; return a; }
Attribute Attribute::of_float(float v) { Attribute a; a.kind = Kind::Float; a.f = v; return a; }
Attribute Attribute::of_string(std::string v) { Attribute a; a.kind = Kind::String; a.s = std::move(v); return a; }
Attribute Attribute::of_ints(std::vector<int64_t> v) { Attribute a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
Attribute Attribute::of_floats(std::vector<float> v) { Attribute a; a.kind = Kind::Floats; a.floats = std::move(v); return a; }
Attribute Attribute::of_strings(std::vector<std::string> v) { Attribute a; a.kind = Kind::Strings; a.strings = std::move(v); return a; }
Attribute Attribute::of_tensor(Tensor v) { Attribute a; a.kind = Kind::Tensor; a.t = std::move(v); return a; }
Attribute Attribute::of_graph(std::shared_ptr<Graph> v) { Attribute a; a.kind = Kind::Graph; a.g = std::move(v); return a; }

// ---------------------------------------------------------------- Node

bool Node::has_subgraph() const {
  for (const auto& [k, a] : attrs)
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  return false;
}

const Attribute* Node::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

std::string Node::describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  return d + " node '" + name + "'";
}

// ---------------------------------------------------------------- Graph

std::vector<std::string> captured_names(const Node& n) {
  std::vector<std::string> names;
  std::function<void(const Graph&)> walk = [&](const Graph& body) {
    for (const Value* c : body.captures) names.push_back(c->name);
    for (const auto& inner : body.nodes())
      for (const auto& [k, a] : inner->attrs) {
        if (a.g) walk(*a.g);
        for (const auto& g : a.graphs) walk(*g);
      }
  };
  for (const auto& [k, a] : n.attrs) {
    if (a.g) walk(*a.g);
    for (const auto& g : a.graphs) walk(*g);
  }
  return names;
}

Value* Graph::add_value(std::string vname, TensorType type) {
  if (vname.empty()) vname = unique_name("v");
  TESSERA_CHECK(!by_name_.count(vname), "value name '", vname, "' defined twice");
  auto v = std::make_unique<Value>();
  v->name = std::move(vname);
  v->type = std::move(type);
  Value* p = v.get();
  by_name_[p->name] = p;
  values_.push_back(std::move(v));
  return p;
}

Value* Graph::add_input(std::string vname, TensorType type) {
  Value* v = add_value(std::move(vname), std::move(type));
  v->is_graph_input = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_constant(std::string vname, Tensor t) {
  TensorType type{t.dtype(), t.dims(), true};
  Value* v = add_value(std::move(vname), type);
  v->constant = std::move(t);
  return v;
}

Value* Graph::add_int64s(const std::string& prefix, const std::vector<int64_t>& values) {
  return add_constant(unique_name(prefix), Tensor::from<int64_t>({static_cast<int64_t>(values.size())}, values));
}

Node* Graph::make_node(std::string op_type, std::vector<Value*> ins, std::vector<std::string> output_names,
                       AttrMap attrs, std::string nname) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->name = nname.empty() ? unique_name(n->op_type) : std::move(nname);
  n->attrs = std::move(attrs);
  n->inputs = std::move(ins);
  for (size_t i = 0; i < n->inputs.size(); ++i)
    if (n->inputs[i]) n->inputs[i]->uses.push_back({n.get(), static_cast<int>(i)});
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (output_names[i].empty()) {
      n->outputs.push_back(nullptr);  // absent optional output
      continue;
    }
    Value* v = add_value(output_names[i]);
    v->type.rank_known = false;  // unknown until inference
    v->producer = n.get();
    v->producer_output = static_cast<int>(i);
    n->outputs.push_back(v);
  }
  Node* p = n.release();
  return p;
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> ins, std::vector<std::string> output_names,
                      AttrMap attrs, std::string nname) {
  Node* p = make_node(std::move(op_type), std::move(ins), std::move(output_names), std::move(attrs), std::move(nname));
  nodes_.emplace_back(p);
  return p;
}

Node* Graph::insert_node_before(Node* pos, std::string op_type, std::vector<Value*> ins,
                                std::vector<std::string> output_names, AttrMap attrs, std::string nname) {
  Node* p = make_node(std::move(op_type), std::move(ins), std::move(output_names), std::move(attrs), std::move(nname));
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == pos; });
  nodes_.insert(it, std::unique_ptr<Node>(p));
  return p;
}

void Graph::set_input(Node* n, int index, Value* v) {
  Value* old = n->inputs.at(static_cast<size_t>(index));
  if (old) {
    auto& u = old->uses;
    u.erase(std::remove_if(u.begin(), u.end(), [&](const Use& x) { return x.node == n && x.input_index == index; }),
            u.end());
  }
  n->inputs[static_cast<size_t>(index)] = v;
  if (v) v->uses.push_back({n, index});
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses;
  for (const Use& u : uses) set_input(u.node, u.input_index, to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

void Graph::erase_node(Node* n) {
  for (Value* o : n->outputs) {
    if (!o) continue;
    TESSERA_CHECK(o->uses.empty(), "cannot erase ", n->describe(), ": output '", o->name, "' is still used");
    TESSERA_CHECK(std::find(outputs_.begin(), outputs_.end(), o) == outputs_.end(), "cannot erase ",
                  n->describe(), ": output '", o->name, "' is a graph output");
  }
  for (size_t i = 0; i < n->inputs.size(); ++i) set_input(n, static_cast<int>(i), nullptr);
  for (Value* o : n->outputs)
    if (o) o->producer = nullptr;
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& x) { return x.get() == n; });
  TESSERA_CHECK(it != nodes_.end(), "erase_node: node not in graph");
  nodes_.erase(it);
}

int Graph::remove_dead_nodes() {
  std::unordered_set<const Node*> live;
  std::vector<const Value*> work(outputs_.begin(), outputs_.end());
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (!v || !v->producer || live.count(v->producer)) continue;
    live.insert(v->producer);
    for (Value* in : v->producer->inputs) work.push_back(in);
    // Subgraph bodies read enclosing values by name: those are uses too.
    for (const std::string& name : captured_names(*v->producer))
      if (const Value* c = find_value(name)) work.push_back(c);
  }
  int removed = 0;
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node* n = nodes_[i].get();
    if (live.count(n)) continue;
    for (size_t k = 0; k < n->inputs.size(); ++k) set_input(n, static_cast<int>(k), nullptr);
    for (Value* o : n->outputs)
      if (o) o->producer = nullptr;
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(i));
    ++removed;
  }
  remove_unused_values();
  return removed;
}

void Graph::remove_unused_values() {
  std::unordered_set<const Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  for (const auto& n : nodes_) {
    keep.insert(n->inputs.begin(), n->inputs.end());
    keep.insert(n->outputs.begin(), n->outputs.end());
    for (const std::string& name : captured_names(*n))
      if (const Value* c = find_value(name)) keep.insert(c);
  }
  for (const Value* c : captures) keep.insert(c);
  std::vector<std::unique_ptr<Value>> kept;
  for (auto& v : values_) {
    if (keep.count(v.get()))
      kept.push_back(std::move(v));
    else
      by_name_.erase(v->name);
  }
  values_ = std::move(kept);
}

bool Graph::erase_value_if_unused(Value* v) {
  if (!v || !v->uses.empty() || v->producer || v->is_graph_input || is_output(v)) return false;
  if (std::find(captures.begin(), captures.end(), v) != captures.end()) return false;
  for (const auto& n : nodes_) {
    if (!n->has_subgraph()) continue;
    for (const std::string& name : captured_names(*n))
      if (name == v->name) return false;
  }
  auto it = std::find_if(values_.begin(), values_.end(), [&](const auto& x) { return x.get() == v; });
  if (it == values_.end()) return false;
  by_name_.erase(v->name);
  values_.erase(it);
  return true;
}

void Graph::topo_sort() {
  std::unordered_map<const Node*, int> state;  // 0 new, 1 visiting, 2 done
  std::vector<std::unique_ptr<Node>> sorted;
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<std::unique_ptr<Node>> pool = std::move(nodes_);
  std::function<void(Node*)> visit = [&](Node* n) {
    int& s = state[n];
    if (s == 2) return;
    TESSERA_CHECK(s != 1, "graph has a cycle through ", n->describe());
    s = 1;
    for (Value* in : n->inputs)
      if (in && in->producer && index.count(in->producer)) visit(in->producer);
    s = 2;
    sorted.push_back(std::move(pool[index[n]]));
  };
  try {
    for (size_t i = 0; i < pool.size(); ++i)
      if (pool[i]) visit(pool[i].get());
  } catch (...) {
    for (auto& p : pool)
      if (p) sorted.push_back(std::move(p));
    nodes_ = std::move(sorted);
    throw;
  }
  nodes_ = std::move(sorted);
}

Value* Graph::find_value(const std::string& vname) const {
  auto it = by_name_.find(vname);
  return it == by_name_.end() ? nullptr : it->second;
}

bool Graph::is_output(const Value* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

std::string Graph::unique_name(const std::string& prefix) {
  for (;;) {
    std::string n = prefix + "_" + std::to_string(name_counter_++);
    if (!by_name_.count(n)) return n;
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->opset = opset;
  g->ir_version = ir_version;
  g->extra_opsets = extra_opsets;
  g->dim_names = dim_names;
  g->name_counter_ = name_counter_;
  std::unordered_map<const Value*, Value*> vmap;
  for (const auto& v : values_) {
    Value* c = g->add_value(v->name, v->type);
    c->constant = v->constant;
    c->is_graph_input = v->is_graph_input;
    vmap[v.get()] = c;
  }
  for (Value* in : inputs_) g->inputs_.push_back(vmap.at(in));
  for (Value* c : captures) g->captures.push_back(vmap.at(c));
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>();
    c->name = n->name;
    c->op_type = n->op_type;
    c->domain = n->domain;
    c->attrs = n->attrs;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Value* v = n->inputs[i] ? vmap.at(n->inputs[i]) : nullptr;
      c->inputs.push_back(v);
      if (v) v->uses.push_back({c.get(), static_cast<int>(i)});
    }
    for (Value* o : n->outputs) {
      Value* v = o ? vmap.at(o) : nullptr;
      if (v) {
        v->producer = c.get();
        v->producer_output = o->producer_output;
      }
      c->outputs.push_back(v);
    }
    g->nodes_.push_back(std::move(c));
  }
  for (Value* o : outputs_) g->outputs_.push_back(vmap.at(o));
  return g;
}

std::unique_ptr<Graph> Graph::extract(const std::vector<Node*>& sel) const {
  std::unordered_set<const Node*> in_set(sel.begin(), sel.end());
  auto g = std::make_unique<Graph>();
  g->name = name + "_sub";
  g->opset = opset;
  g->ir_version = ir_version;
  g->extra_opsets = extra_opsets;
  std::unordered_map<const Value*, Value*> vmap;
  auto map_in = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = vmap.find(v);
    if (it != vmap.end()) return it->second;
    Value* c;
    if (v->is_constant()) {
      c = g->add_constant(v->name, *v->constant);
    } else {
      c = g->add_input(v->name, v->type);
    }
    vmap[v] = c;
    return c;
  };
  for (const auto& np : nodes_) {
    const Node* n = np.get();
    if (!in_set.count(n)) continue;
    for (Value* v : n->inputs) map_in(v);
    copy_node(*g, *n, vmap);
  }
  std::unordered_set<const Value*> graph_outs(outputs_.begin(), outputs_.end());
  for (const auto& np : nodes_) {
    if (!in_set.count(np.get())) continue;
    for (Value* o : np->outputs) {
      if (!o) continue;
      bool external = graph_outs.count(o) > 0;
      for (const Use& u : o->uses)
        if (!in_set.count(u.node)) external = true;
      if (external) g->add_output(vmap.at(o));
    }
  }
  return g;
}

}  // namespace tessera
