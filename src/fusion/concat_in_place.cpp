// Which concats can be views of their inputs (concat_in_place.h): the rules
// as one predicate per value and one per concat, first claim wins.
#include "fusion/concat_in_place.h"

#include <unordered_set>

#include "ops/op_attrs.h"

namespace tessera::fusion {

namespace {

bool static_tensor(const TensorType& t) {
  return t.rank_known && t.fully_known() && t.dtype != DType::String && t.dtype != DType::Undefined;
}

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

}  // namespace

std::vector<ConcatPlacement> in_place_concats(const Graph& g, const std::function<TensorType(const Value*)>& type) {
  const std::unordered_set<const Value*> graph_out(g.outputs().begin(), g.outputs().end());
  const std::unordered_set<const Value*> captured = captured_values(g);
  std::unordered_set<const Value*> claimed;
  std::vector<ConcatPlacement> out;
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.op_type != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0]) continue;
    const Value* y = n.outputs[0];
    if (graph_out.count(y) || captured.count(y)) continue;
    const TensorType ty = type(y);
    if (!static_tensor(ty) || ty.dims.empty()) continue;
    const int64_t rank = ty.rank();
    int64_t axis = OpAttrs(n, g.opset).i("axis");
    if (axis < -rank || axis >= rank) continue;
    if (axis < 0) axis += rank;
    bool ok = true;
    for (int64_t d = 0; d < axis; ++d) ok = ok && ty.dims[static_cast<size_t>(d)] == 1;
    int64_t inner = static_cast<int64_t>(dtype_size(ty.dtype));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= ty.dims[static_cast<size_t>(d)];
    ConcatPlacement p{&n, {}};
    std::unordered_set<const Value*> seen;
    int64_t at = 0;
    for (const Value* v : n.inputs) {
      if (!ok) break;
      ok = v && v->producer && !v->constant && !graph_out.count(v) && !captured.count(v) && !claimed.count(v) &&
           seen.insert(v).second;
      if (!ok) break;
      const TensorType tv = type(v);
      ok = static_tensor(tv) && tv.dtype == ty.dtype && tv.rank() == rank && numel_of(tv.dims) > 0;
      if (!ok) break;
      p.offsets.push_back(at * inner);
      at += tv.dims[static_cast<size_t>(axis)];
    }
    if (!ok || n.inputs.empty() || at != ty.dims[static_cast<size_t>(axis)]) continue;
    for (const Value* v : n.inputs) claimed.insert(v);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tessera::fusion
