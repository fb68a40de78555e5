// Multi-linear subprograms of a model and splicing (see subprogram.h).
#include "pet/subprogram.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/node_copy.h"
#include "ops/registry.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

// pet_design.md's op list: each op's data inputs beyond the registry's
// linear_inputs (the registry lists what an op is linear in for fusion's and
// PET's use, but leaves out Add/Sub (affine in each), Concat (variadic), Pad
// and the biases, which enter a multi-linear polynomial with degree 1 too).
// -1 means every input.
const std::map<std::string, std::vector<int>>& extra_data_inputs() {
  static const std::map<std::string, std::vector<int>> table = {
      {"Conv", {2}},       {"ConvTranspose", {2}}, {"MatMul", {}},           {"Gemm", {2}},
      {"Transpose", {}},   {"Reshape", {}},        {"Flatten", {}},          {"Squeeze", {}},
      {"Unsqueeze", {}},   {"Concat", {-1}},       {"Split", {}},            {"Slice", {}},
      {"Pad", {0}},        {"Add", {0, 1}},        {"Sub", {0, 1}},          {"Mul", {}},
      {"AveragePool", {}}, {"GlobalAveragePool", {}}, {"ReduceSum", {}},     {"ReduceMean", {}},
      {"Identity", {}},    {"DepthToSpace", {}},   {"SpaceToDepth", {}},
  };
  return table;
}

bool is_compute_op(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm" || op == "AveragePool";
}

bool is_data_input(const Node& n, int i) {
  const OpDef* def = op_registry().find(n.op_type, n.domain);
  if (def && std::find(def->linear_inputs.begin(), def->linear_inputs.end(), i) != def->linear_inputs.end())
    return true;
  auto it = extra_data_inputs().find(n.op_type);
  if (it == extra_data_inputs().end()) return false;
  for (int k : it->second)
    if (k == -1 || k == i) return true;
  return false;
}

float float_attr_or(const Node& n, const char* key, float def) {
  const Attribute* a = n.attr(key);
  if (!a) return def;
  return a->kind == Attribute::Kind::Int ? static_cast<float>(a->i) : a->f;
}

// A product whose two factors are both computed values: edges into it are cut.
bool is_product_of_activations(const Node& n) {
  auto computed = [&](int i) { return n.has_input(i) && !n.inputs[static_cast<size_t>(i)]->is_constant(); };
  if (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Mul") return computed(0) && computed(1);
  if (n.op_type == "Conv" || n.op_type == "ConvTranspose") return computed(1) || computed(2);
  return false;
}

// Model order of the nodes.
std::unordered_map<const Node*, size_t> node_order(const Graph& g) {
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < g.nodes().size(); ++i) pos[g.nodes()[i].get()] = i;
  return pos;
}

// True when no path leaves `set` and re-enters it (so the set can be replaced
// by one program without making a cycle).
bool is_convex(const std::unordered_set<const Node*>& set) {
  std::vector<const Node*> work;
  std::unordered_set<const Node*> seen;
  for (const Node* n : set)
    for (const Value* o : n->outputs)
      if (o)
        for (const Use& u : o->uses)
          if (!set.count(u.node) && seen.insert(u.node).second) work.push_back(u.node);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* o : n->outputs)
      if (o)
        for (const Use& u : o->uses) {
          if (set.count(u.node)) return false;
          if (seen.insert(u.node).second) work.push_back(u.node);
        }
  }
  return true;
}

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
};

}  // namespace

std::string Subprogram::describe() const {
  static const char* kinds[] = {"region", "subset", "group"};
  std::string s = std::string(kinds[static_cast<int>(kind)]) + " of " + std::to_string(nodes.size()) + " nodes (";
  for (size_t i = 0; i < nodes.size(); ++i) s += (i ? ", " : "") + nodes[i]->describe();
  return s + ")";
}

std::string not_multilinear_reason(const Node& n, int64_t opset) {
  (void)opset;
  if (!n.domain.empty()) return "op of domain '" + n.domain + "'";
  if (!extra_data_inputs().count(n.op_type)) return "op " + n.op_type + " is not multi-linear";
  if (n.has_subgraph()) return "has a subgraph";
  for (const Value* o : n.outputs) {
    if (!o) continue;
    if (o->type.dtype != DType::F32) return "output '" + o->name + "' is not f32";
    if (!o->type.fully_known()) return "output '" + o->name + "' has unknown dims";
  }
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Value* v = n.inputs[static_cast<size_t>(i)];
    if (!v) continue;
    if (!v->type.fully_known()) return "input '" + v->name + "' has unknown dims";
    if (is_data_input(n, i)) {
      if (v->type.dtype != DType::F32) return "data input '" + v->name + "' is not f32";
    } else if (!v->is_constant()) {
      return "parameter input '" + v->name + "' is not a constant";
    }
  }
  if (n.op_type == "Gemm" && (float_attr_or(n, "alpha", 1) != 1 || float_attr_or(n, "beta", 1) != 1))
    return "Gemm with alpha or beta other than 1";
  if (n.op_type == "Pad") {
    const Attribute* mode = n.attr("mode");
    if (mode && mode->s != "constant") return "Pad of mode " + mode->s;
    if (n.has_input(2)) {
      const Value* fill = n.inputs[2];
      if (!fill->is_constant() || fill->constant->numel() != 1 || fill->constant->get_double(0) != 0)
        return "Pad with a fill other than 0";
    }
  }
  if (n.op_type == "AveragePool" || n.op_type == "Conv" || n.op_type == "ConvTranspose") {
    const Attribute* ap = n.attr("auto_pad");
    if (ap && ap->s != "NOTSET" && ap->s != "VALID") return "auto_pad " + ap->s;
  }
  return "";
}

Subprogram make_subprogram(const Graph& model, const std::vector<Node*>& nodes_in, Subprogram::Kind kind) {
  auto pos = node_order(model);
  std::vector<Node*> nodes = nodes_in;
  for (Node* n : nodes) {
    TESSERA_CHECK(pos.count(n), "PET subprogram: node ", n->describe(), " is not in the model");
    std::string why = not_multilinear_reason(*n, model.opset);
    TESSERA_CHECK(why.empty(), "PET subprogram: ", n->describe(), " is not multi-linear: ", why);
  }
  std::sort(nodes.begin(), nodes.end(), [&](Node* a, Node* b) { return pos[a] < pos[b]; });
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::unordered_set<const Node*> in_set(nodes.begin(), nodes.end());

  Subprogram sp;
  sp.kind = kind;
  sp.nodes = nodes;
  // Classify the values read from outside: activations, weights, parameters.
  std::vector<Value*> params;
  std::unordered_set<const Value*> seen;
  for (Node* n : nodes)
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* v = n->inputs[static_cast<size_t>(i)];
      if (!v || (v->producer && in_set.count(v->producer)) || !seen.insert(v).second) continue;
      if (!v->is_constant())
        sp.activations.push_back(v);
      else if (v->type.dtype == DType::F32 && is_data_input(*n, i))
        sp.weights.push_back(v);
      else
        params.push_back(v);
    }
  // A constant read both as data and as a parameter is a weight (the data use
  // decides); drop it from the parameters.
  std::unordered_set<const Value*> weight_set(sp.weights.begin(), sp.weights.end());
  params.erase(std::remove_if(params.begin(), params.end(), [&](Value* v) { return weight_set.count(v); }),
               params.end());

  auto g = std::make_shared<Graph>();
  g->name = "pet_subprogram";
  g->opset = model.opset;
  g->ir_version = model.ir_version;
  g->extra_opsets = model.extra_opsets;
  std::unordered_map<const Value*, Value*> vmap;
  for (Value* v : sp.activations) vmap[v] = g->add_input(v->name, v->type);
  for (Value* v : sp.weights) {
    vmap[v] = g->add_input(v->name, v->type);
    sp.weight_tensors.push_back(*v->constant);
  }
  for (Value* v : params) vmap[v] = g->add_constant(v->name, *v->constant);
  sp.num_activations = sp.activations.size();
  for (Node* n : nodes) copy_node(*g, *n, vmap);
  for (Node* n : nodes)
    for (Value* o : n->outputs) {
      if (!o) continue;
      bool outside = model.is_output(o);
      for (const Use& u : o->uses) outside |= !in_set.count(u.node);
      if (outside) {
        sp.outputs.push_back(o);
        g->add_output(vmap.at(o));
      }
    }
  verify_graph(*g);
  sp.graph = g;
  sp.hash = structural_hash(*g);
  return sp;
}

std::vector<Subprogram> find_subprograms(const Graph& model, const SubprogramOptions& opts,
                                         SubprogramReport* report) {
  SubprogramReport rep;
  const auto& all = model.nodes();
  std::unordered_map<const Node*, size_t> idx;
  std::vector<Node*> ml;  // multi-linear nodes, model order
  for (const auto& n : all)
    if (is_multilinear(*n, model.opset)) {
      idx[n.get()] = ml.size();
      ml.push_back(n.get());
    }
  rep.multilinear_nodes = static_cast<int>(ml.size());

  // Regions: union along edges between multi-linear nodes, except into a
  // product of two computed values.
  UnionFind uf(ml.size());
  std::vector<std::vector<size_t>> adj(ml.size());
  for (size_t i = 0; i < ml.size(); ++i) {
    if (is_product_of_activations(*ml[i])) continue;
    for (const Value* v : ml[i]->inputs)
      if (v && v->producer && idx.count(v->producer)) {
        size_t j = idx[v->producer];
        uf.unite(i, j);
        adj[i].push_back(j);
        adj[j].push_back(i);
      }
  }
  std::map<size_t, std::vector<size_t>> comps;
  for (size_t i = 0; i < ml.size(); ++i) comps[uf.find(i)].push_back(i);
  std::vector<std::vector<size_t>> regions;
  for (auto& [root, members] : comps) regions.push_back(members);
  std::sort(regions.begin(), regions.end());  // by first member: model order
  rep.regions = static_cast<int>(regions.size());

  auto has_compute = [&](const std::vector<size_t>& set) {
    return std::any_of(set.begin(), set.end(), [&](size_t i) { return is_compute_op(ml[i]->op_type); });
  };
  auto to_nodes = [&](const std::vector<size_t>& set) {
    std::vector<Node*> v;
    for (size_t i : set) v.push_back(ml[i]);
    return v;
  };
  auto convex = [&](const std::vector<size_t>& set) {
    std::unordered_set<const Node*> s;
    for (size_t i : set) s.insert(ml[i]);
    return is_convex(s);
  };

  std::vector<Subprogram> out;
  std::set<std::vector<Node*>> offered;
  for (const auto& region : regions) {
    if (!has_compute(region)) {
      ++rep.without_compute;
      continue;
    }
    if (static_cast<int>(region.size()) <= opts.max_ops && convex(region)) {
      out.push_back(make_subprogram(model, to_nodes(region), Subprogram::Kind::Region));
      offered.insert(out.back().nodes);
      ++rep.offered_whole;
      continue;
    }
    // Connected subsets of at most max_ops nodes, each grown from its
    // smallest member by neighbours of larger index (every subset once).
    std::set<std::vector<size_t>> subsets;
    bool full = false;
    std::function<void(std::vector<size_t>&)> grow = [&](std::vector<size_t>& cur) {
      if (full) return;
      std::vector<size_t> sorted = cur;
      std::sort(sorted.begin(), sorted.end());
      if (!subsets.insert(sorted).second) return;
      if (static_cast<int>(cur.size()) >= opts.max_ops) return;
      for (size_t m : std::vector<size_t>(cur))
        for (size_t nb : adj[m]) {
          if (nb < cur.front() || std::find(cur.begin(), cur.end(), nb) != cur.end()) continue;
          cur.push_back(nb);
          grow(cur);
          cur.pop_back();
        }
    };
    for (size_t start : region) {
      std::vector<size_t> cur{start};
      grow(cur);
    }
    int taken = 0;
    std::vector<std::vector<size_t>> ordered(subsets.begin(), subsets.end());
    for (const auto& s : ordered) {
      if (!has_compute(s) || !convex(s)) continue;
      if (taken >= opts.max_subsets_per_region) {
        ++rep.subsets_dropped;
        continue;
      }
      out.push_back(make_subprogram(model, to_nodes(s), Subprogram::Kind::Subset));
      offered.insert(out.back().nodes);
      ++taken;
      ++rep.subsets;
    }
  }

  if (opts.groups) {
    // Compute nodes reading one value as their activation (input 0; for
    // MatMul the computed operand beside a constant one).
    std::map<const Value*, std::vector<Node*>> readers;
    std::vector<const Value*> order;
    for (Node* n : ml) {
      if (n->op_type != "Conv" && n->op_type != "MatMul" && n->op_type != "Gemm" && n->op_type != "AveragePool")
        continue;
      if (is_product_of_activations(*n)) continue;
      const Value* act = nullptr;
      for (const Value* v : n->inputs)
        if (v && !v->is_constant()) act = act ? act : v;
      if (!act) continue;
      if (!readers.count(act)) order.push_back(act);
      readers[act].push_back(n);
    }
    for (const Value* v : order) {
      const auto& rs = readers[v];
      if (rs.size() < 2) continue;
      for (size_t b = 0; b + 1 < rs.size(); b += static_cast<size_t>(opts.max_group)) {
        std::vector<Node*> members(rs.begin() + static_cast<long>(b),
                                   rs.begin() + static_cast<long>(std::min(rs.size(), b + opts.max_group)));
        if (members.size() < 2) continue;
        std::unordered_set<const Node*> s(members.begin(), members.end());
        if (!is_convex(s)) continue;  // one member depends on another
        Subprogram g = make_subprogram(model, members, Subprogram::Kind::Group);
        if (offered.count(g.nodes)) continue;
        offered.insert(g.nodes);
        out.push_back(std::move(g));
        ++rep.groups;
      }
    }
  }
  if (report) *report = rep;
  return out;
}

std::vector<Node*> splice(Graph& model, const Subprogram& sub, const Graph& rep) {
  const Graph& orig = *sub.graph;
  TESSERA_CHECK(rep.inputs().size() == orig.inputs().size(), "PET splice: the replacement has ",
                rep.inputs().size(), " inputs, the subprogram ", orig.inputs().size());
  TESSERA_CHECK(rep.outputs().size() == orig.outputs().size(), "PET splice: the replacement has ",
                rep.outputs().size(), " outputs, the subprogram ", orig.outputs().size());
  for (size_t i = 0; i < rep.inputs().size(); ++i)
    TESSERA_CHECK(rep.inputs()[i]->type == orig.inputs()[i]->type, "PET splice: input ", i, " of the replacement is ",
                  rep.inputs()[i]->type.to_string(), ", the subprogram's ", orig.inputs()[i]->type.to_string());
  for (size_t i = 0; i < rep.outputs().size(); ++i)
    TESSERA_CHECK(rep.outputs()[i]->type == orig.outputs()[i]->type, "PET splice: output ", i,
                  " of the replacement is ", rep.outputs()[i]->type.to_string(), ", the subprogram's ",
                  orig.outputs()[i]->type.to_string());
  std::unordered_set<const Node*> present;
  for (const auto& n : model.nodes()) present.insert(n.get());
  for (Node* n : sub.nodes)
    TESSERA_CHECK(present.count(n), "PET splice: a node of the subprogram is no longer in the model");

  // Bind the replacement's inputs and constants, then copy its nodes.
  std::unordered_map<const Value*, Value*> vmap;
  for (size_t i = 0; i < rep.inputs().size(); ++i)
    vmap[rep.inputs()[i]] = i < sub.num_activations ? sub.activations[i] : sub.weights[i - sub.num_activations];
  for (const auto& v : rep.values())
    if (v->is_constant() && !vmap.count(v.get()))
      vmap[v.get()] = model.add_constant(model.unique_name(std::string(kPetNodePrefix) + v->name), *v->constant);
  std::vector<Node*> added;
  for (const auto& n : rep.nodes()) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs) ins.push_back(v ? vmap.at(v) : nullptr);
    std::vector<std::string> outs;
    for (Value* o : n->outputs) outs.push_back(o ? model.unique_name(std::string(kPetNodePrefix) + o->name) : "");
    Node* c = model.add_node(n->op_type, ins, outs, n->attrs, model.unique_name(std::string(kPetNodePrefix) + n->op_type));
    c->domain = n->domain;
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) {
        c->outputs[i]->type = n->outputs[i]->type;
        vmap[n->outputs[i]] = c->outputs[i];
      }
    added.push_back(c);
  }
  // Each old output value must end up produced by a new node: one that is an
  // input passed through, a constant, or a second copy of an output gets an
  // Identity of its own.
  std::unordered_set<const Node*> added_set(added.begin(), added.end());
  std::unordered_set<const Value*> claimed;
  std::vector<Value*> fresh;
  for (const Value* o : rep.outputs()) {
    Value* v = vmap.at(o);
    if (!v->producer || !added_set.count(v->producer) || !claimed.insert(v).second) {
      Node* id = model.add_node("Identity", {v}, {model.unique_name(std::string(kPetNodePrefix) + "out")}, {},
                                model.unique_name(std::string(kPetNodePrefix) + "Identity"));
      id->outputs[0]->type = v->type;
      added.push_back(id);
      v = id->outputs[0];
      claimed.insert(v);
    }
    fresh.push_back(v);
  }
  for (size_t i = 0; i < fresh.size(); ++i) model.replace_all_uses(sub.outputs[i], fresh[i]);
  for (auto it = sub.nodes.rbegin(); it != sub.nodes.rend(); ++it) model.erase_node(*it);
  // The old output values (their names, their uses) now come from the new nodes.
  for (size_t i = 0; i < fresh.size(); ++i) {
    Value* old = sub.outputs[i];
    Value* neu = fresh[i];
    Node* p = neu->producer;
    int k = neu->producer_output;
    p->outputs[static_cast<size_t>(k)] = old;
    old->producer = p;
    old->producer_output = k;
    model.replace_all_uses(neu, old);
    neu->producer = nullptr;
  }
  model.remove_unused_values();
  model.topo_sort();
  verify_graph(model);
  return added;
}

}  // namespace tessera::pet
