// Graph simplifications: exact rewrites that make an op cheaper or let the
// fusion planner see one op where the exporter wrote several. The table lists
// them; each is checked against the reference interpreter by
// tests/unit/test_simplify.cpp.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_set>

#include "ir/producer_swap.h"
#include "opt/passes.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

bool default_domain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool static_type(const Value* v) { return v && v->type.rank_known && v->type.fully_known(); }

// The integer values of a constant input, or nullopt.
std::optional<std::vector<int64_t>> constant_ints(const Node& n, int i) {
  if (!n.has_input(i)) return std::nullopt;
  const Value* v = n.inputs[static_cast<size_t>(i)];
  if (!v->constant || (v->constant->dtype() != DType::I64 && v->constant->dtype() != DType::I32)) return std::nullopt;
  std::vector<int64_t> r;
  for (int64_t k = 0; k < v->constant->numel(); ++k) r.push_back(static_cast<int64_t>(v->constant->get_double(k)));
  return r;
}

Value* int_constant(Graph& g, const std::string& name, const std::vector<int64_t>& values) {
  Tensor t(DType::I64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return g.add_constant(g.unique_name(name), std::move(t));
}

// Pow(x, 2) with a constant exponent: x * x, a multiply instead of a call to
// pow per element (layer norms square their centred input this way).
bool pow_square(Graph& g, Node& n) {
  if (n.op_type != "Pow" || !default_domain(n) || n.num_inputs() != 2 || !n.has_input(0) || !n.has_input(1)) return false;
  Value* x = n.inputs[0];
  const Value* e = n.inputs[1];
  if (!e->constant || e->constant->numel() != 1 || !is_float(e->constant->dtype()) || !is_float(x->type.dtype)) return false;
  if (e->constant->get_double(0) != 2.0 || n.outputs.empty() || !n.outputs[0] || n.outputs[0]->type != x->type) return false;
  n.op_type = "Mul";
  n.attrs.clear();
  g.set_input(&n, 1, x);
  return true;
}

// A Transpose that only moves axes of size 1 keeps every element at its
// flat position: a Reshape, which the planner treats as an index change.
bool unit_transpose(Graph& g, Node& n) {
  if (n.op_type != "Transpose" || !default_domain(n) || !n.has_input(0) || n.outputs.empty() || !n.outputs[0]) return false;
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  if (!static_type(x) || !static_type(y) || x->type.dtype == DType::String) return false;
  const Dims& d = x->type.dims;
  std::vector<int64_t> perm = OpAttrs(n, g.opset).ints("perm");
  if (perm.empty())
    for (int64_t i = static_cast<int64_t>(d.size()) - 1; i >= 0; --i) perm.push_back(i);
  if (perm.size() != d.size()) return false;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(d.size())) return false;
    if (d[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;  // two axes longer than 1 change order
    last = p;
  }
  if (std::find(y->type.dims.begin(), y->type.dims.end(), 0) != y->type.dims.end()) return false;  // 0 means "copy" to Reshape
  Value* shape = int_constant(g, y->name + ".shape", y->type.dims);
  n.op_type = "Reshape";
  n.attrs.clear();
  n.inputs.resize(2, nullptr);
  g.set_input(&n, 1, shape);
  return true;
}

// The axis and [start, end) of a unit-step Slice with constant bounds on a
// statically shaped input (bounds clamped as ONNX does), or nullopt.
struct SliceRange {
  int64_t axis, start, end;
};
std::optional<SliceRange> slice_range(const Node& n, int64_t opset) {
  if (n.op_type != "Slice" || !default_domain(n) || opset < 10 || !n.has_input(0) || n.outputs.size() != 1 || !n.outputs[0])
    return std::nullopt;
  const Value* x = n.inputs[0];
  if (!static_type(x)) return std::nullopt;
  auto starts = constant_ints(n, 1), ends = constant_ints(n, 2);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  int64_t rank = x->type.rank(), axis = 0;
  if (n.has_input(3)) {
    auto axes = constant_ints(n, 3);
    if (!axes || axes->size() != 1) return std::nullopt;
    axis = (*axes)[0] < 0 ? (*axes)[0] + rank : (*axes)[0];
  }
  if (n.has_input(4)) {
    auto steps = constant_ints(n, 4);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
  }
  if (axis < 0 || axis >= rank) return std::nullopt;
  int64_t dim = x->type.dims[static_cast<size_t>(axis)];
  auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
  return SliceRange{axis, clamp((*starts)[0]), clamp((*ends)[0])};
}

// Slices of one value along one axis that tile it exactly (attention's
// packed Q/K/V projection cut in three): one Split with several outputs, so
// the planner grows one block over all the pieces instead of one per slice.
bool slices_to_split(Graph& g, Node& n) {
  auto first = slice_range(n, g.opset);
  if (!first) return false;
  Value* x = n.inputs[0];
  std::vector<std::pair<SliceRange, Node*>> parts;
  for (const Use& u : x->uses) {
    if (u.input_index != 0) continue;
    auto r = slice_range(*u.node, g.opset);
    if (r && r->axis == first->axis) parts.push_back({*r, u.node});
  }
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  const int64_t dim = x->type.dims[static_cast<size_t>(first->axis)];
  int64_t at = 0;
  for (const auto& [r, s] : parts) {
    if (r.start != at || r.end <= r.start) return false;
    at = r.end;
  }
  if (parts.size() < 2 || at != dim) return false;
  // Before the earliest slice in node order, so every reader stays after it.
  Node* pos = nullptr;
  for (const auto& node : g.nodes())
    if (std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.second == node.get(); })) {
      pos = node.get();
      break;
    }
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  for (const auto& [r, s] : parts) {
    sizes.push_back(r.end - r.start);
    names.push_back(g.unique_name(s->outputs[0]->name + ".split"));
  }
  AttrMap attrs{{"axis", Attribute::of_int(first->axis)}};
  std::vector<Value*> ins{x};
  if (g.opset >= 13) ins.push_back(int_constant(g, x->name + ".split_sizes", sizes));
  else attrs["split"] = Attribute::of_ints(sizes);
  Node* split = g.insert_node_before(pos, "Split", ins, names, attrs, pos->name + ".split");
  // The Split takes over each slice's output value (its name may be a graph output).
  for (size_t i = 0; i < parts.size(); ++i) {
    Node* s = parts[i].second;
    Value* y = s->outputs[0];
    Value* fresh = split->outputs[i];
    swap_producers(y, fresh);
    fresh->type = y->type;
    for (size_t k = 0; k < s->inputs.size(); ++k) g.set_input(s, static_cast<int>(k), nullptr);
    g.erase_node(s);
  }
  return true;
}

struct Simplification {
  const char* name;
  bool (*apply)(Graph&, Node&);
};

const Simplification kSimplifications[] = {
    {"pow_square", pow_square},
    {"unit_transpose", unit_transpose},
    {"slices_to_split", slices_to_split},
};

}  // namespace

int simplify_graph(Graph& g, std::map<std::string, int>* applied) {
  int total = 0;
  for (const Simplification& s : kSimplifications) {
    std::vector<Node*> todo;
    for (const auto& n : g.nodes()) todo.push_back(n.get());
    std::unordered_set<const Node*> alive(todo.begin(), todo.end());  // a rewrite may erase nodes still to visit
    for (Node* n : todo) {
      if (!alive.count(n) || !s.apply(g, *n)) continue;
      ++total;
      if (applied) ++(*applied)[s.name];
      alive.clear();
      for (const auto& m : g.nodes()) alive.insert(m.get());
    }
  }
  return total;
}

}  // namespace tessera
