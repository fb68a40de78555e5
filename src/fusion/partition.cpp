// Fusion plan generation (DNNFusion, Algorithm 1 in spirit): seeds, growth
// by the fusion table, acyclicity and register-pressure checks, profiling.
#include "fusion/partition.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "fusion/concat_in_place.h"
#include "opexpr/expr_registry.h"
#include "support/hash.h"

namespace tessera::fusion {

namespace {

// Values that subgraph bodies (If/Loop/Scan) read by name: uses that are
// not edges of the graph, but must be computed before the capturing node.
std::unordered_map<const Value*, std::vector<const Node*>> captures_of(const Graph& g) {
  std::unordered_map<const Value*, std::vector<const Node*>> c;
  for (const auto& n : g.nodes())
    if (n->has_subgraph())
      for (const std::string& name : captured_names(*n))
        if (const Value* v = g.find_value(name)) c[v].push_back(n.get());
  return c;
}

int index_of(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].get() == n) return static_cast<int>(i);
  return -1;
}

double value_bytes(const Value* v) {
  if (!v || !v->type.fully_known() || v->type.dtype == DType::String) return 0;
  return static_cast<double>(numel_of(v->type.dims)) * static_cast<double>(dtype_size(v->type.dtype));
}

class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionOptions& opts) : g_(g), opts_(opts) {
    const auto& nodes = g_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i].get()] = static_cast<int>(i);
    group_.resize(nodes.size());
    std::iota(group_.begin(), group_.end(), 0);
    fusible_.resize(nodes.size());
    type_.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      fusible_[i] = opts_.fuse && unfusable_reason(*nodes[i], g_.opset).empty();
      type_[i] = partition_type(*nodes[i]);
    }
    // A concat done in place is a view: never fused, so its inputs' producers
    // write their slices and its readers read one buffer.
    if (opts_.concat_in_place)
      for (const ConcatPlacement& p : in_place_concats(g_, [](const Value* v) { return v->type; })) {
        int c = index_.at(p.concat);
        fusible_[static_cast<size_t>(c)] = false;
        in_place_.insert(c);
      }
    captures_ = captures_of(g_);
  }

  Partition run() {
    const auto& nodes = g_.nodes();
    // One-to-one seeds first, then (for chains without one) any other op,
    // each group smallest output first.
    std::vector<int> seeds;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (fusible_[i]) seeds.push_back(static_cast<int>(i));
    std::stable_sort(seeds.begin(), seeds.end(), [&](int a, int b) {
      bool oa = type_[static_cast<size_t>(a)] == MappingType::OneToOne, ob = type_[static_cast<size_t>(b)] == MappingType::OneToOne;
      if (oa != ob) return oa;
      return out_bytes(a) < out_bytes(b);
    });
    std::vector<bool> taken(nodes.size(), false);
    for (int s : seeds) {
      if (taken[static_cast<size_t>(s)]) continue;
      Block b{{s}, type_[static_cast<size_t>(s)], s};
      taken[static_cast<size_t>(s)] = true;
      int id = next_group_++;
      group_[static_cast<size_t>(s)] = id;
      // Producers first: an elementwise op between two contractions joins
      // the one before as its epilogue (applied to the accumulators in
      // registers) rather than the one after as a prologue (recomputed at
      // every read of the input, or a pass of its own).
      grow(b, id, taken, false);
      grow(b, id, taken, true);
      std::sort(b.nodes.begin(), b.nodes.end());
      blocks_by_group_[id] = std::move(b);
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!taken[i]) blocks_by_group_[group_[i]] = Block{{static_cast<int>(i)}, type_[i], -1};
    for (int c : in_place_) plan_.concats_in_place.push_back(c);
    std::sort(plan_.concats_in_place.begin(), plan_.concats_in_place.end());
    order_blocks();
    return std::move(plan_);
  }

 private:
  double out_bytes(int n) const {
    double b = 0;
    for (const Value* v : g_.nodes()[static_cast<size_t>(n)]->outputs) b += value_bytes(v);
    return b;
  }

  // Grows the block to successors (or predecessors) as long as the table and
  // the checks allow, following newly added nodes too.
  void grow(Block& b, int id, std::vector<bool>& taken, bool successors) {
    std::vector<int> frontier = b.nodes;
    while (!frontier.empty()) {
      int n = frontier.front();
      frontier.erase(frontier.begin());
      const Node& node = *g_.nodes()[static_cast<size_t>(n)];
      std::vector<int> next;
      if (successors) {
        for (const Value* v : node.outputs)
          if (v)
            for (const Use& u : v->uses) next.push_back(index_.at(u.node));
      } else {
        for (const Value* v : node.inputs)
          if (v && v->producer) next.push_back(index_.at(v->producer));
      }
      for (int c : next) {
        if (taken[static_cast<size_t>(c)] || !fusible_[static_cast<size_t>(c)]) continue;
        if (!successors && prologue_of_contraction(n, c)) continue;
        if (!try_add(b, id, n, c, successors)) continue;
        taken[static_cast<size_t>(c)] = true;
        frontier.push_back(c);
      }
    }
  }

  // True when producer `c` of contraction `n` is one-to-one and itself reads
  // a contraction's output: it is that contraction's epilogue (applied in
  // registers), not this one's prologue (a pass over the input, or
  // recomputed at every read). A concat done in place is a stored buffer:
  // the walk stops there.
  bool prologue_of_contraction(int n, int c) const {
    if (type_[static_cast<size_t>(n)] != MappingType::ManyToMany || type_[static_cast<size_t>(c)] != MappingType::OneToOne)
      return false;
    std::vector<int> work{c};
    std::unordered_set<int> seen;
    while (!work.empty()) {  // through other one-to-one ops (SiLU: Mul(x, Sigmoid(x)))
      int k = work.back();
      work.pop_back();
      if (!seen.insert(k).second) continue;
      for (const Value* v : g_.nodes()[static_cast<size_t>(k)]->inputs) {
        if (!v || !v->producer) continue;
        int p = index_.at(v->producer);
        if (in_place_.count(p)) continue;
        MappingType t = type_[static_cast<size_t>(p)];
        if (t == MappingType::ManyToMany) return true;
        if (t == MappingType::OneToOne) work.push_back(p);
      }
    }
    return false;
  }

  // Adds `c`, reached from the block's node `n` (c a successor of n, or a
  // predecessor), when the table or an op rule for the edge allows it.
  bool try_add(Block& b, int id, int n, int c, bool successor) {
    MappingType t = type_[static_cast<size_t>(c)];
    const Node& bn = *g_.nodes()[static_cast<size_t>(n)];
    const Node& cn = *g_.nodes()[static_cast<size_t>(c)];
    FusionRule rule = successor ? edge_rule(bn, b.type, cn, t) : edge_rule(cn, t, bn, b.type);
    if (rule.decision == Decision::Break) return false;
    group_[static_cast<size_t>(c)] = id;
    bool ok = acyclic() && live_values(b, c) <= (opts_.max_live > 0 ? opts_.max_live : opts_.machine.register_budget());
    if (ok && rule.decision == Decision::Profile) ok = profile(b, c);
    if (!ok) {
      group_[static_cast<size_t>(c)] = c;
      return false;
    }
    b.nodes.push_back(c);
    b.type = rule.result;
    return true;
  }

  // Distinct values the fused loop body keeps live: the block's inputs, and
  // its internal values read more than once.
  int live_values(const Block& b, int c) const {
    std::unordered_set<int> in(b.nodes.begin(), b.nodes.end());
    in.insert(c);
    std::unordered_set<const Value*> live;
    for (int n : in)
      for (const Value* v : g_.nodes()[static_cast<size_t>(n)]->inputs) {
        if (!v) continue;
        bool internal = v->producer && in.count(index_.at(v->producer));
        int reads = 0;
        for (const Use& u : v->uses) reads += in.count(index_.at(u.node)) ? 1 : 0;
        if (!internal || reads > 1) live.insert(v);
      }
    return static_cast<int>(live.size());
  }

  // Every node reading `v`: through an input, or by name from a subgraph.
  std::vector<int> readers(const Value* v) const {
    std::vector<int> r;
    for (const Use& u : v->uses) r.push_back(index_.at(u.node));
    auto it = captures_.find(v);
    if (it != captures_.end())
      for (const Node* n : it->second) r.push_back(index_.at(n));
    return r;
  }

  // The edges between groups (blocks and single nodes), with in-degrees.
  void group_edges(std::unordered_map<int, std::unordered_set<int>>& succ,
                   std::unordered_map<int, int>& indegree) const {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      int gi = group_[i];
      indegree.try_emplace(gi, 0);
      for (const Value* v : g_.nodes()[i]->outputs)
        if (v)
          for (int j : readers(v)) {
            int gj = group_[static_cast<size_t>(j)];
            if (gj != gi && succ[gi].insert(gj).second) ++indegree[gj];
          }
    }
  }

  // True when the graph of groups (blocks and single nodes) has no cycle.
  bool acyclic() const {
    std::unordered_map<int, std::unordered_set<int>> succ;
    std::unordered_map<int, int> indegree;
    group_edges(succ, indegree);
    std::vector<int> ready;
    for (const auto& [gi, d] : indegree)
      if (d == 0) ready.push_back(gi);
    size_t seen = 0;
    while (!ready.empty()) {
      int gi = ready.back();
      ready.pop_back();
      ++seen;
      for (int gj : succ[gi])
        if (--indegree[gj] == 0) ready.push_back(gj);
    }
    return seen == indegree.size();
  }

  bool profile(const Block& b, int c) {
    std::vector<int> fused = b.nodes;
    fused.push_back(c);
    std::sort(fused.begin(), fused.end());
    ProfileDecision d{fused, c, {}, false};
    std::string key = profile_key(g_, fused, opts_.target);
    std::optional<ProfileEntry> e = opts_.db ? opts_.db->find(key) : std::nullopt;
    if (e) {
      d.cached = true;
    } else if (opts_.profile) {
      std::vector<int> part = b.nodes;
      std::sort(part.begin(), part.end());
      e = opts_.profile(fused, {part, {c}});
      if (e && opts_.db) opts_.db->record(key, *e);
    }
    if (!e) {
      ++plan_.unmeasured;
      return false;
    }
    d.entry = *e;
    plan_.profiled.push_back(d);
    return e->fuse();
  }

  // Blocks in a topological order of the block graph, ties by first node.
  void order_blocks() {
    std::unordered_map<int, int> indegree;
    std::unordered_map<int, std::unordered_set<int>> succ;
    group_edges(succ, indegree);
    auto first = [&](int gid) { return blocks_by_group_.at(gid).nodes.front(); };
    auto later = [&](int a, int b) { return first(a) > first(b); };
    std::vector<int> ready;
    for (const auto& [gid, d] : indegree)
      if (d == 0) ready.push_back(gid);
    plan_.block_of.assign(g_.nodes().size(), -1);
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), later);
      int gid = ready.back();
      ready.pop_back();
      int bi = static_cast<int>(plan_.blocks.size());
      for (int n : blocks_by_group_.at(gid).nodes) plan_.block_of[static_cast<size_t>(n)] = bi;
      plan_.blocks.push_back(blocks_by_group_.at(gid));
      for (int gj : succ[gid])
        if (--indegree[gj] == 0) ready.push_back(gj);
    }
  }

  const Graph& g_;
  const PartitionOptions& opts_;
  Partition plan_;
  std::unordered_map<const Node*, int> index_;
  std::vector<int> group_;  // per node: its block's id (a fresh node is its own index)
  int next_group_ = 1 << 24;
  std::vector<bool> fusible_;
  std::unordered_set<int> in_place_;  // concats done in place (never fused)
  std::vector<MappingType> type_;
  std::unordered_map<const Value*, std::vector<const Node*>> captures_;
  std::unordered_map<int, Block> blocks_by_group_;
};

}  // namespace

std::string unfusable_reason(const Node& n, int64_t opset) {
  const OpDef* def = op_registry().find(n.op_type, n.domain);
  if (!def || !has_expression(n)) return "no tensor expression";
  if (n.has_subgraph()) return "subgraph op";
  if (!def->deterministic) return "random op";
  // Value checks look at integer inputs only (indices, integer divisors).
  if (def->value_check)
    for (const Value* v : n.inputs)
      if (v && !is_float(v->type.dtype)) return "checks its integer input values before the kernel";
  if (def->min_opset > opset) return "opset";
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const Value* v : *list) {
      if (!v) continue;
      if (!v->type.rank_known || !v->type.fully_known()) return "type not static";
      if (v->type.dtype == DType::String) return "string tensors";
    }
  if (n.outputs.empty()) return "no outputs";
  return "";
}

MappingType partition_type(const Node& n) { return node_mapping_type(n); }

std::string profile_key(const Graph& g, const std::vector<int>& nodes, const std::string& target) {
  std::unordered_map<const Value*, int> produced;  // value -> position in the key
  std::ostringstream k;
  k << target;
  int pos = 0;
  for (int i : nodes) {
    const Node& n = *g.nodes()[static_cast<size_t>(i)];
    uint64_t h = 0;
    for (const auto& [name, a] : n.attrs) {
      h = hash_combine(h, hash_bytes(name.data(), name.size()));
      h = hash_combine(h, static_cast<uint64_t>(a.i) ^ (static_cast<uint64_t>(a.kind) << 56));
      h = hash_combine(h, hash_bytes(a.ints.data(), a.ints.size() * sizeof(int64_t)));
      h = hash_combine(h, hash_bytes(&a.f, sizeof(float)));
      h = hash_combine(h, hash_bytes(a.floats.data(), a.floats.size() * sizeof(float)));
      h = hash_combine(h, hash_bytes(a.s.data(), a.s.size()));
    }
    k << ' ' << n.op_type << '#' << std::hex << (h & 0xffffffff) << std::dec << '(';
    for (const Value* v : n.inputs) {
      if (!v) {
        k << "-,";
        continue;
      }
      auto it = produced.find(v);
      if (it != produced.end()) k << '%' << it->second << ',';
      else k << v->type.to_string() << (v->constant ? "c" : "") << ',';
    }
    k << ")->";
    for (const Value* v : n.outputs) {
      if (v) produced[v] = pos;
      ++pos;
      k << (v ? v->type.to_string() : "-") << ',';
    }
  }
  return k.str();
}

Partition partition_graph(const Graph& g, const PartitionOptions& opts) { return Partitioner(g, opts).run(); }

std::vector<const Value*> block_outputs(const Graph& g, const Block& b) {
  std::unordered_set<const Node*> in;
  for (int n : b.nodes) in.insert(g.nodes()[static_cast<size_t>(n)].get());
  std::unordered_set<const Value*> graph_out(g.outputs().begin(), g.outputs().end());
  auto captures = captures_of(g);
  std::vector<const Value*> outs;
  for (int n : b.nodes)
    for (const Value* v : g.nodes()[static_cast<size_t>(n)]->outputs) {
      if (!v) continue;
      bool outside = graph_out.count(v) > 0 || captures.count(v) > 0;
      for (const Use& u : v->uses) outside |= !in.count(u.node);
      if (outside) outs.push_back(v);
    }
  return outs;
}

std::vector<const Value*> block_inputs(const Graph& g, const Block& b) {
  std::unordered_set<const Node*> in;
  for (int n : b.nodes) in.insert(g.nodes()[static_cast<size_t>(n)].get());
  std::vector<const Value*> ins;
  std::unordered_set<const Value*> seen;
  for (int n : b.nodes)
    for (const Value* v : g.nodes()[static_cast<size_t>(n)]->inputs)
      if (v && !(v->producer && in.count(v->producer)) && seen.insert(v).second) ins.push_back(v);
  return ins;
}

FusionStats fusion_stats(const Graph& g, const Partition& p) {
  FusionStats s;
  s.ops = static_cast<int>(g.nodes().size());
  // A concat done in place is a block of its own that runs no code (a view).
  s.blocks = static_cast<int>(p.blocks.size() - p.concats_in_place.size());
  std::unordered_set<const Value*> graph_out(g.outputs().begin(), g.outputs().end());
  for (const auto& n : g.nodes())
    for (const Value* v : n->outputs)
      if (v && !graph_out.count(v)) s.intermediate_before += value_bytes(v);
  // Written into a root concat's buffer (inputs and nested views): no buffer of their own.
  std::unordered_set<const Value*> in_place;
  const std::unordered_set<int> views(p.concats_in_place.begin(), p.concats_in_place.end());
  for (const ConcatPlacement& c : in_place_concats(g, [](const Value* v) { return v->type; })) {
    if (!views.count(index_of(g, c.concat))) continue;
    for (const Value* v : c.concat->inputs) in_place.insert(v);
    if (c.root) in_place.insert(c.concat->outputs[0]);
  }
  for (const Block& b : p.blocks) {
    s.fused_blocks += b.nodes.size() > 1;
    for (const Value* v : block_outputs(g, b))
      if (!graph_out.count(v) && !in_place.count(v)) s.intermediate_after += value_bytes(v);
  }
  return s;
}

std::string print_fusion(const Graph& g, const Partition& p) {
  std::ostringstream o;
  FusionStats s = fusion_stats(g, p);
  auto mib = [](double b) { return b / (1024.0 * 1024.0); };
  for (size_t bi = 0; bi < p.blocks.size(); ++bi) {
    const Block& b = p.blocks[bi];
    o << "block " << bi << "  " << mapping_type_name(b.type) << "  " << b.nodes.size()
      << (b.nodes.size() == 1 ? " op" : " ops");
    if (b.seed >= 0) o << "  seed " << g.nodes()[static_cast<size_t>(b.seed)]->describe();
    o << '\n';
    for (int n : b.nodes) {
      const Node& node = *g.nodes()[static_cast<size_t>(n)];
      o << "  " << node.describe() << "  " << mapping_type_name(partition_type(node));
      for (const Value* v : node.inputs)  // joined to its producer by an op rule, not by the table
        if (v && v->producer && std::count(b.nodes.begin(), b.nodes.end(), index_of(g, v->producer)))
          if (const OpFusionRule* r = op_fusion_rule(*v->producer, node)) {
            o << "  (op rule: " << r->why << ")";
            break;
          }
      if (std::count(p.concats_in_place.begin(), p.concats_in_place.end(), n))
        o << "  (in place: its inputs write into its output)";
      if (b.nodes.size() == 1 && b.seed < 0) {
        std::string why = unfusable_reason(node, g.opset);
        if (!why.empty()) o << "  (not fusible: " << why << ")";
      }
      o << '\n';
    }
  }
  for (const ProfileDecision& d : p.profiled) {
    o << "profiled " << g.nodes()[static_cast<size_t>(d.node)]->describe() << " into a block of "
      << d.candidate.size() - 1 << ": fused " << d.entry.fused_seconds * 1e6 << " us vs parts "
      << d.entry.parts_seconds * 1e6 << " us -> " << (d.entry.fuse() ? "fuse" : "keep apart")
      << (d.cached ? " (profile database)" : " (measured)") << '\n';
  }
  if (p.unmeasured) o << p.unmeasured << " profile decision(s) could not be measured and were not fused\n";
  o.precision(3);
  o << std::fixed << "fusion: " << s.ops << " ops -> " << s.blocks << " kernels (rate "
    << (s.blocks ? static_cast<double>(s.ops) / s.blocks : 0.0) << "), " << s.fused_blocks
    << " fused blocks; intermediate results " << mib(s.intermediate_before) << " MiB -> "
    << mib(s.intermediate_after) << " MiB\n";
  return o.str();
}

}  // namespace tessera::fusion
