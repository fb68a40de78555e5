// DNNFusion's mathematical-property rewriting (Niu et al., PLDI 2021):
// the rules of opt/rewrite_rules.h applied greedily, the largest FLOP
// reduction first, until no match lowers the count.
//
// A match covers op nodes of the rule's pattern only — one-to-one ops and
// ReduceSum/ReduceProd, so it never crosses an op outside such a region; its
// variables bind the region's inputs. The covered nodes other than the root
// must have no consumer outside the match (nor be graph outputs or values a
// subgraph reads by name), since they are removed. The replacement is built
// outside the graph first: inferred node by node with the registry, constants
// folded with the reference kernels (they cost no FLOPs); it must give the
// root's exact type and keep every reduction's input type, else the match is
// skipped (broadcasting would change the result). The root's output value
// keeps its name: the replacement's last node takes it over.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "ir/producer_swap.h"
#include "opt/passes.h"
#include "opt/rewrite_rules.h"
#include "support/error.h"

namespace tessera {

namespace {

using rewrite::Rule;
using rewrite::Term;

// Constants folded inside a replacement stay below this size.
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

// Only floating-point values are rewritten: integer Div truncates, and the
// rules are identities of real arithmetic. Half types would round differently.
bool rewritable_type(DType t) { return t == DType::F32 || t == DType::F64; }

std::string node_op(const Term& t) { return t.name == "Square" ? "Mul" : t.name; }

// Variable bindings, labelled nodes and the op nodes covered (root first; a
// node two subterms share appears twice).
struct Match {
  std::map<std::string, Value*> vars;
  std::map<std::string, Node*> labels;
  std::vector<Node*> nodes;
};
using Sink = std::function<void(const Match&)>;

// Whether `v` is the output of a node the op term `t` can stand for.
bool op_matches(const Term& t, const Value* v) {
  const Node* n = v->producer;
  if (!n || !n->domain.empty() || n->op_type != node_op(t)) return false;
  if (n->outputs.size() != 1 || n->outputs[0] != v) return false;
  if (!v->type.fully_known() || !rewritable_type(v->type.dtype)) return false;
  if (t.label.empty()) {
    size_t want = t.name == "Square" ? 2 : t.args.size();
    if (!n->attrs.empty() || n->inputs.size() != want) return false;
  } else if (n->inputs.empty() || n->inputs.size() > 2) {
    return false;  // a reduction: data and the optional axes
  }
  for (size_t i = 0; i < std::max<size_t>(t.args.size(), t.name == "Square" ? 2 : 0); ++i)
    if (!n->inputs[i]) return false;
  return t.name != "Square" || n->inputs[0] == n->inputs[1];
}

// Calls `k` with every way `t` matches the value `v`, extending `m`.
void match_term(const Rule& r, const Term& t, Value* v, Match m, const Sink& k) {
  if (t.kind == Term::Kind::Var) {
    auto it = m.vars.find(t.name);
    if (it != m.vars.end()) {
      if (it->second == v) k(m);
      return;
    }
    if (!v->type.fully_known() || (t.is_constant_var() && !v->is_constant())) return;
    if (r.scalars.count(t.name) && numel_of(v->type.dims) != 1) return;
    m.vars[t.name] = v;
    k(m);
    return;
  }
  if (t.kind == Term::Kind::Literal) {
    if (v->is_constant() && v->constant->numel() == 1 && rewritable_type(v->constant->dtype()) &&
        v->constant->get_double(0) == t.number)
      k(m);
    return;
  }
  if (!op_matches(t, v)) return;
  Node* n = v->producer;
  if (!t.label.empty()) m.labels[t.label] = n;
  m.nodes.push_back(n);
  if (t.args.size() == 1) return match_term(r, t.args[0], n->inputs[0], std::move(m), k);
  auto in_order = [&](Value* x, Value* y) {
    match_term(r, t.args[0], x, m, [&](const Match& m1) { match_term(r, t.args[1], y, m1, k); });
  };
  in_order(n->inputs[0], n->inputs[1]);
  if (rewrite::is_commutative(n->op_type) && n->inputs[0] != n->inputs[1]) in_order(n->inputs[1], n->inputs[0]);
}

// FLOPs of the covered nodes, or nullopt when they cannot all be removed.
std::optional<double> removable_flops(const Graph& g, const Match& m, const std::set<std::string>& captured) {
  std::set<const Node*> covered(m.nodes.begin(), m.nodes.end());
  double f = 0;
  for (const Node* n : covered) {
    f += node_flops(*n);
    if (n == m.nodes[0]) continue;
    const Value* o = n->outputs[0];
    if (g.is_output(o) || captured.count(o->name)) return std::nullopt;
    for (const Use& u : o->uses)
      if (!covered.count(u.node)) return std::nullopt;
  }
  // The replacement reads the variables, so none may be a covered node's output.
  for (const auto& [name, v] : m.vars)
    if (v->producer && covered.count(v->producer)) return std::nullopt;
  return f;
}

// ReduceSum takes axes as an input from opset 13, the other reductions from 18.
bool axes_as_input(const std::string& op, int64_t opset) { return opset >= 18 || (op == "ReduceSum" && opset >= 13); }

// A replacement built outside the graph: nodes and values not yet in it.
class Replacement {
 public:
  Replacement(int64_t opset, DType dtype) : opset_(opset), dtype_(dtype) {}

  double flops = 0;
  std::vector<std::unique_ptr<Node>> nodes;  // in dependency order
  std::vector<std::unique_ptr<Value>> temps;

  bool is_temp(const Value* v) const {
    return std::any_of(temps.begin(), temps.end(), [&](const auto& t) { return t.get() == v; });
  }
  Value* constant(Tensor t) {
    temps.push_back(std::make_unique<Value>());
    Value* v = temps.back().get();
    v->type = {t.dtype(), t.dims(), true};
    v->constant = std::move(t);
    return v;
  }

  // The value of `t` under the match's bindings, or null when it cannot be built here.
  Value* build(const Term& t, const Match& m) {
    if (t.kind == Term::Kind::Var) return m.vars.at(t.name);
    if (t.kind == Term::Kind::Literal) return constant(Tensor::scalar<double>(t.number).cast(dtype_));
    std::vector<Value*> ins;
    for (const Term& a : t.args) {
      Value* v = build(a, m);
      if (!v) return nullptr;
      ins.push_back(v);
    }
    if (t.name == "Square") ins.push_back(ins[0]);
    AttrMap attrs;
    if (!t.label.empty()) {
      const Node& src = *m.labels.at(t.label);
      // Same input type, so the carried axes mean the same dimensions.
      if (ins[0]->type != src.inputs[0]->type || !carry_reduction(src, t.name, ins, attrs)) return nullptr;
    }
    return add_node(node_op(t), std::move(ins), std::move(attrs));
  }

  // Node `op` over `ins`: inferred, and folded when every input is constant.
  Value* add_node(const std::string& op, std::vector<Value*> ins, AttrMap attrs) {
    auto n = std::make_unique<Node>();
    n->op_type = op;
    n->name = op;
    n->inputs = std::move(ins);
    n->attrs = std::move(attrs);
    temps.push_back(std::make_unique<Value>());
    Value* out = temps.back().get();
    out->type.rank_known = false;
    n->outputs = {out};
    bool all_constant = true;
    std::vector<const Tensor*> values;
    for (const Value* v : n->inputs) {
      all_constant = all_constant && v->is_constant();
      values.push_back(v->is_constant() ? &*v->constant : nullptr);
    }
    try {
      infer_node(*n, opset_);
      if (!out->type.fully_known()) return nullptr;
      if (all_constant) {
        if (numel_of(out->type.dims) > kMaxFoldElements) return nullptr;
        out->constant = std::move(run_reference(*n, opset_, values).at(0));
        return out;
      }
    } catch (const Error&) {
      return nullptr;  // e.g. shapes that do not broadcast
    }
    flops += node_flops(*n);
    nodes.push_back(std::move(n));
    return out;
  }

 private:
  // Copies the reduction of `src` onto a new `op` node in the opset's form.
  bool carry_reduction(const Node& src, const std::string& op, std::vector<Value*>& ins, AttrMap& attrs) {
    for (const char* k : {"keepdims", "noop_with_empty_axes"})
      if (const Attribute* a = src.attr(k)) attrs[k] = *a;
    if (attrs.count("noop_with_empty_axes") && !axes_as_input(op, opset_)) return false;
    const Value* axes_in = src.has_input(1) ? src.inputs[1] : nullptr;
    if (axes_as_input(op, opset_)) {
      if (axes_in) {
        ins.push_back(src.inputs[1]);
      } else if (auto axes = OpAttrs(src, opset_).ints("axes"); !axes.empty()) {
        ins.push_back(constant(Tensor::from<int64_t>({static_cast<int64_t>(axes.size())}, axes)));
      }
      return true;
    }
    std::vector<int64_t> axes = OpAttrs(src, opset_).ints("axes");
    if (axes_in) {
      if (!axes_in->is_constant()) return false;
      axes = axes_in->constant->to_int_vector();
    }
    if (!axes.empty()) attrs["axes"] = Attribute::of_ints(axes);
    return true;
  }

  int64_t opset_;
  DType dtype_;
};

struct Candidate {
  const Rule* rule = nullptr;
  Match match;
  std::shared_ptr<Replacement> replacement;
  Value* result = nullptr;
  double saved = 0;
};

// Builds the replacement of a match; null when it does not give the root's type.
std::shared_ptr<Replacement> replacement_for(const Graph& g, const Rule& r, const Match& m, const std::set<std::string>& captured,
                               Value** result) {
  Value* y = m.nodes[0]->outputs[0];
  auto p = std::make_shared<Replacement>(g.opset, y->type.dtype);
  Value* v = p->build(r.replacement, m);
  if (!v || v->type != y->type || (p->is_temp(v) && v->is_constant())) return nullptr;
  // A bare variable replaces the root's value; a name that must stay takes an Identity.
  if (!p->is_temp(v) && (g.is_output(y) || captured.count(y->name))) v = p->add_node("Identity", {v}, {});
  if (!v) return nullptr;
  *result = v;
  return p;
}

std::set<std::string> captured_values(const Graph& g) {
  std::set<std::string> s;
  for (const auto& n : g.nodes())
    for (auto& name : captured_names(*n)) s.insert(std::move(name));
  return s;
}

// The match whose rewrite lowers the FLOPs most (the first found on ties).
std::optional<Candidate> best_candidate(const Graph& g) {
  const std::set<std::string> captured = captured_values(g);
  std::optional<Candidate> best;
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->outputs.size() != 1 || !n->outputs[0]) continue;
    for (const Rule& r : rewrite::rules()) {
      if (node_op(r.pattern) != n->op_type) continue;
      match_term(r, r.pattern, n->outputs[0], Match{}, [&](const Match& m) {
        std::optional<double> removed = removable_flops(g, m, captured);
        const double bar = best ? best->saved : 0;
        if (!removed || *removed <= bar) return;
        Value* result = nullptr;
        auto replacement = replacement_for(g, r, m, captured, &result);
        if (!replacement || *removed - replacement->flops <= bar) return;
        const double saved = *removed - replacement->flops;
        best = Candidate{&r, m, std::move(replacement), result, saved};
      });
    }
  }
  return best;
}

void apply(Graph& g, const Candidate& c) {
  Node* root = c.match.nodes[0];
  Value* y = root->outputs[0];
  std::unordered_map<const Value*, Value*> real;
  auto in_graph = [&](Value* v) -> Value* {
    if (!c.replacement->is_temp(v)) return v;
    auto it = real.find(v);
    if (it != real.end()) return it->second;
    return real[v] = g.add_constant(g.unique_name(y->name + ".c"), *v->constant);
  };
  for (const auto& n : c.replacement->nodes) {
    std::vector<Value*> ins;
    for (Value* v : n->inputs) ins.push_back(in_graph(v));
    Node* added = g.insert_node_before(root, n->op_type, ins, {g.unique_name(y->name + ".rw")}, n->attrs);
    added->outputs[0]->type = n->outputs[0]->type;
    real[n->outputs[0]] = added->outputs[0];
  }
  if (c.replacement->is_temp(c.result)) {
    // The replacement's last node takes over the root's output value.
    swap_producers(y, real.at(c.result));
  } else {
    g.replace_all_uses(y, c.result);
  }
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < g.nodes().size(); ++i) pos[g.nodes()[i].get()] = i;
  std::vector<Node*> dead(c.match.nodes.begin(), c.match.nodes.end());
  std::sort(dead.begin(), dead.end(), [&](Node* a, Node* b) { return pos.at(a) > pos.at(b); });
  dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
  for (Node* n : dead) g.erase_node(n);
}

}  // namespace

// Each application strictly lowers the graph's FLOP count, so this ends.
int rewrite_math_properties(Graph& g, std::vector<std::string>* applied) {
  if (g.opset < 7) return 0;  // Add/Sub/Mul/Div broadcast numpy-style from opset 7
  int count = 0;
  while (std::optional<Candidate> c = best_candidate(g)) {
    apply(g, *c);
    ++count;
    if (applied) applied->push_back(c->rule->name);
  }
  if (count) g.remove_dead_nodes();
  return count;
}

}  // namespace tessera
