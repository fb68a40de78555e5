#include "pet/fused_consumers.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/registry.h"
#include "support/hash.h"

namespace tessera::pet {

namespace {

// An elementwise node PET may measure after a subprogram: one f32 output of
// known dims, every input present.
bool fusable(const Node& n) {
  const OpDef* d = op_registry().find(n.op_type, n.domain);
  if (!d || d->mapping != MappingType::OneToOne || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const TensorType& t = n.outputs[0]->type;
  if (t.dtype != DType::F32 || !t.fully_known()) return false;
  for (const Value* v : n.inputs)
    if (!v || !v->type.fully_known()) return false;
  return true;
}

uint64_t hash_string(const std::string& s) { return hash_bytes(s.data(), s.size()); }

uint64_t hash_type(const TensorType& t) {
  uint64_t h = static_cast<uint64_t>(t.dtype);
  for (int64_t d : t.dims) h = hash_combine(h, static_cast<uint64_t>(d));
  return h;
}

}  // namespace

void find_fused_consumers(const Graph& model, Subprogram& sp, uint64_t skip_outputs, size_t max_nodes) {
  sp.fused_consumers.clear();
  sp.consumers_hash = 0;
  const std::set<const Node*> inside(sp.nodes.begin(), sp.nodes.end());
  std::set<const Node*> chosen;
  std::vector<const Value*> frontier;
  for (size_t j = 0; j < sp.outputs.size(); ++j)
    if (j >= 64 || !(skip_outputs >> j & 1)) frontier.push_back(sp.outputs[j]);
  while (!frontier.empty() && chosen.size() < max_nodes) {
    const Value* v = frontier.back();
    frontier.pop_back();
    for (const Use& u : v->uses) {
      const Node* n = u.node;
      if (chosen.size() >= max_nodes) break;
      if (inside.count(n) || chosen.count(n) || !fusable(*n)) continue;
      chosen.insert(n);
      frontier.push_back(n->outputs[0]);
    }
  }
  if (chosen.empty()) return;
  for (const auto& n : model.nodes())
    if (chosen.count(n.get())) sp.fused_consumers.push_back(n.get());
  // Each input by where it comes from: output j of the subprogram, consumer
  // k's output, a constant (its type), or another value (its type).
  std::map<const Value*, uint64_t> source;
  for (size_t j = 0; j < sp.outputs.size(); ++j) source.emplace(sp.outputs[j], 0x100 + j);
  uint64_t h = 0x5eed;
  for (size_t k = 0; k < sp.fused_consumers.size(); ++k) {
    const Node* n = sp.fused_consumers[k];
    h = hash_combine(h, hash_combine(hash_string(n->domain), hash_string(n->op_type)));
    for (const auto& [key, a] : n->attrs) h = hash_combine(h, hash_combine(hash_string(key), hash_attribute(a)));
    for (const Value* in : n->inputs) {
      auto it = source.find(in);
      h = hash_combine(h, it != source.end() ? it->second
                                             : hash_combine(in->is_constant() ? 0xc0 : 0xac, hash_type(in->type)));
    }
    h = hash_combine(h, hash_type(n->outputs[0]->type));
    source.emplace(n->outputs[0], 0x10000 + k);
  }
  sp.consumers_hash = h ? h : 1;
}

void add_fused_consumers(Graph& g, const Graph& model, const Subprogram& sp) {
  if (sp.fused_consumers.empty()) return;
  std::map<const Value*, Value*> mapped;
  for (size_t j = 0; j < sp.outputs.size() && j < g.outputs().size(); ++j) mapped[sp.outputs[j]] = g.outputs()[j];
  for (const Node* n : sp.fused_consumers) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs) {
      auto it = mapped.find(in);
      if (it == mapped.end()) {
        Value* v = in->is_constant() ? g.add_constant(g.unique_name("pet_consumer_k"), *in->constant)
                                     : g.add_input(g.unique_name("pet_consumer_in"), in->type);
        it = mapped.emplace(in, v).first;
      }
      ins.push_back(it->second);
    }
    Node* m = g.add_node(n->op_type, std::move(ins), {g.unique_name(n->outputs[0]->name)}, n->attrs,
                         g.unique_name("pet_consumer"));
    m->domain = n->domain;
    m->outputs[0]->type = n->outputs[0]->type;
    mapped[n->outputs[0]] = m->outputs[0];
  }
  // What the model reads beyond the subprogram and its consumers.
  std::set<const Node*> inside(sp.nodes.begin(), sp.nodes.end());
  inside.insert(sp.fused_consumers.begin(), sp.fused_consumers.end());
  const auto used_beyond = [&](const Value* v) {
    if (model.is_output(v)) return true;
    return std::any_of(v->uses.begin(), v->uses.end(), [&](const Use& u) { return !inside.count(u.node); });
  };
  std::vector<Value*> outputs;
  for (size_t j = 0; j < sp.outputs.size() && j < g.outputs().size(); ++j)
    if (used_beyond(sp.outputs[j])) outputs.push_back(g.outputs()[j]);
  for (const Node* n : sp.fused_consumers)
    if (used_beyond(n->outputs[0])) outputs.push_back(mapped[n->outputs[0]]);
  if (!outputs.empty()) g.mutable_outputs() = std::move(outputs);
}

}  // namespace tessera::pet
