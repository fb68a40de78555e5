// Which concats can be views of one root buffer (concat_in_place.h): the
// rules as one predicate per concat and its inputs, then the placement of
// the candidates, largest output first, each accepted whole or not at all.
#include "fusion/concat_in_place.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ops/op_attrs.h"

namespace tessera::fusion {

namespace {

bool static_tensor(const TensorType& t) {
  return t.rank_known && t.fully_known() && t.dtype != DType::String && t.dtype != DType::Undefined;
}

int64_t bytes_of(const TensorType& t) { return numel_of(t.dims) * static_cast<int64_t>(dtype_size(t.dtype)); }

// Values a subgraph body reads by name (If/Loop/Scan): they are looked up
// as whole tensors, so they stay ordinary buffers.
std::unordered_set<const Value*> captured_values(const Graph& g) {
  std::unordered_set<const Value*> c;
  for (const auto& n : g.nodes())
    if (n->has_subgraph())
      for (const std::string& name : captured_names(*n))
        if (const Value* v = g.find_value(name)) c.insert(v);
  return c;
}

// A concat that may be a view: its position in the graph, its output's
// bytes and each input's byte offset and size inside the output.
struct Candidate {
  const Node* concat = nullptr;
  size_t order = 0;
  int64_t bytes = 0;
  std::vector<int64_t> offsets, sizes;
};

// The concat's candidate when it and its inputs pass the rules (the header's
// list), else none.
std::optional<Candidate> candidate(const Graph& g, const Node& n, size_t order,
                                   const std::function<TensorType(const Value*)>& type,
                                   const std::unordered_set<const Value*>& graph_out,
                                   const std::unordered_set<const Value*>& captured) {
  if (n.op_type != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] || n.inputs.empty())
    return std::nullopt;
  const Value* y = n.outputs[0];
  if (graph_out.count(y) || captured.count(y)) return std::nullopt;
  const TensorType ty = type(y);
  if (!static_tensor(ty) || ty.dims.empty()) return std::nullopt;
  const int64_t rank = ty.rank();
  int64_t axis = OpAttrs(n, g.opset).i("axis");
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < axis; ++d)
    if (ty.dims[static_cast<size_t>(d)] != 1) return std::nullopt;
  int64_t inner = static_cast<int64_t>(dtype_size(ty.dtype));
  for (int64_t d = axis + 1; d < rank; ++d) inner *= ty.dims[static_cast<size_t>(d)];
  Candidate c{&n, order, bytes_of(ty), {}, {}};
  std::unordered_set<const Value*> seen;
  int64_t at = 0;
  for (const Value* v : n.inputs) {
    if (!v || !v->producer || v->constant || graph_out.count(v) || captured.count(v) || !seen.insert(v).second)
      return std::nullopt;
    const TensorType tv = type(v);
    if (!static_tensor(tv) || tv.dtype != ty.dtype || tv.rank() != rank || numel_of(tv.dims) <= 0) return std::nullopt;
    c.offsets.push_back(at * inner);
    c.sizes.push_back(tv.dims[static_cast<size_t>(axis)] * inner);
    at += tv.dims[static_cast<size_t>(axis)];
  }
  if (at != ty.dims[static_cast<size_t>(axis)]) return std::nullopt;
  return c;
}

// The values placed so far, each a byte range of a root, and the roots.
class Placer {
 public:
  // Places the candidate's output and inputs in one root when the rules
  // allow (the header), and returns where; a rejected one places nothing.
  std::optional<ConcatPlacement> place(const Candidate& c) {
    const Value* y = c.concat->outputs[0];
    const Value* root = y;
    int64_t base = 0;
    if (const Place* p = find(y)) {
      root = p->root;
      base = p->offset;
    } else {
      for (size_t i = 0; i < c.offsets.size(); ++i)
        if (const Place* q = find(c.concat->inputs[i])) {
          root = q->root;
          base = q->offset - c.offsets[i];
          break;
        }
    }
    const int64_t root_bytes = root == y ? c.bytes : root_bytes_.at(root);
    if (base < 0 || base + c.bytes > root_bytes) return std::nullopt;
    for (size_t i = 0; i < c.offsets.size(); ++i) {
      const Value* v = c.concat->inputs[i];
      const int64_t at = base + c.offsets[i];
      if (root_bytes_.count(v)) return std::nullopt;  // already holds other values: one level of views only
      if (const Place* q = find(v)) {
        if (q->root != root || q->offset != at) return std::nullopt;
        continue;
      }
      if (root != y && overlaps_others(root, y, base, c.bytes, at, c.sizes[i])) return std::nullopt;
    }
    if (root == y) root_bytes_[y] = c.bytes;
    else if (auto it = places_.find(y); it != places_.end()) it->second.view = true;
    else add(y, {root, base, c.bytes, true});
    for (size_t i = 0; i < c.offsets.size(); ++i)
      if (!find(c.concat->inputs[i])) add(c.concat->inputs[i], {root, base + c.offsets[i], c.sizes[i], false});
    return ConcatPlacement{c.concat, c.offsets, root == y ? nullptr : root, base};
  }

 private:
  struct Place {
    const Value* root;
    int64_t offset, bytes;
    bool view;  // the output of a concat done in place (its range holds its inputs)
  };

  const Place* find(const Value* v) const {
    auto it = places_.find(v);
    return it == places_.end() ? nullptr : &it->second;
  }

  void add(const Value* v, Place p) {
    in_root_[p.root].push_back(v);
    places_.emplace(v, p);
  }

  // True when [at, at + bytes) of `root` meets a value placed there other
  // than `y` itself and the views enclosing y's range [base, base + y_bytes).
  bool overlaps_others(const Value* root, const Value* y, int64_t base, int64_t y_bytes, int64_t at,
                       int64_t bytes) const {
    auto it = in_root_.find(root);
    if (it == in_root_.end()) return false;
    for (const Value* w : it->second) {
      if (w == y) continue;
      const Place& q = places_.at(w);
      bool encloses = q.view && q.offset <= base && base + y_bytes <= q.offset + q.bytes;
      if (!encloses && at < q.offset + q.bytes && q.offset < at + bytes) return true;
    }
    return false;
  }

  std::unordered_map<const Value*, Place> places_;                       // leaves and nested views
  std::unordered_map<const Value*, std::vector<const Value*>> in_root_;  // per root: the values placed in it
  std::unordered_map<const Value*, int64_t> root_bytes_;                 // per root: its bytes
};

}  // namespace

std::vector<ConcatPlacement> in_place_concats(const Graph& g, const std::function<TensorType(const Value*)>& type,
                                              const std::function<bool(const Node&)>& eligible) {
  const std::unordered_set<const Value*> graph_out(g.outputs().begin(), g.outputs().end());
  const std::unordered_set<const Value*> captured = captured_values(g);
  std::vector<Candidate> cands;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    if (eligible && n.op_type == "Concat" && !eligible(n)) continue;
    if (std::optional<Candidate> c = candidate(g, n, i, type, graph_out, captured)) cands.push_back(std::move(*c));
  }
  // Largest first, so a dense block's last concat is the root of its
  // prefixes and an outer concat is placed before the ones nested in it;
  // ties in graph order.
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.order < b.order;
  });
  Placer placer;
  std::vector<std::pair<size_t, ConcatPlacement>> accepted;
  for (const Candidate& c : cands)
    if (std::optional<ConcatPlacement> p = placer.place(c)) accepted.emplace_back(c.order, std::move(*p));
  std::sort(accepted.begin(), accepted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ConcatPlacement> out;
  for (auto& [order, p] : accepted) out.push_back(std::move(p));
  return out;
}

}  // namespace tessera::fusion
