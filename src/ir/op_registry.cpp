// Op registry lookup, graph-wide inference and shared inference helpers.
#include "ir/op_registry.h"

#include <algorithm>
#include <mutex>

#include "support/error.h"

namespace tessera {

std::string_view mapping_type_name(MappingType t) {
  switch (t) {
    case MappingType::OneToOne: return "one-to-one";
    case MappingType::Reorganize: return "reorganize";
    case MappingType::Shuffle: return "shuffle";
    case MappingType::OneToMany: return "one-to-many";
    case MappingType::ManyToMany: return "many-to-many";
  }
  return "?";
}

const TensorType& InferContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return *input_types[static_cast<size_t>(i)];
}

TensorType& InferContext::out(int i) {
  if (static_cast<int>(output_types.size()) <= i) output_types.resize(static_cast<size_t>(i) + 1);
  return output_types[static_cast<size_t>(i)];
}

const Tensor& KernelContext::in(int i) const {
  TESSERA_CHECK(has_input(i), node.describe(), ": required input ", i, " is missing");
  return *inputs[static_cast<size_t>(i)];
}

// ---------------------------------------------------------------- registry

void OpRegistry::add(OpDef def) {
  std::string key = def.domain + "::" + def.name;
  TESSERA_CHECK(!ops_.count(key), "op '", def.name, "' registered twice");
  TESSERA_CHECK(def.infer && def.reference, "op '", def.name, "' needs inference and a reference kernel");
  ops_.emplace(std::move(key), std::move(def));
}

const OpDef* OpRegistry::find(const std::string& op, const std::string& domain) const {
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = ops_.find(d + "::" + op);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::get(const Node& n, int64_t opset) const {
  const OpDef* d = find(n.op_type, n.domain);
  TESSERA_CHECK(d, n.describe(), ": op '", n.op_type, "'",
                n.domain.empty() ? std::string() : " of domain '" + n.domain + "'", " (opset ", opset,
                ") is not supported by Tessera");
  // Other domains version independently; their ops carry min_opset 1.
  TESSERA_CHECK(!n.domain.empty() || opset >= d->min_opset, n.describe(), ": opset ", opset, " is older than the oldest supported (",
                d->min_opset, ") for ", n.op_type);
  return *d;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> v;
  for (const auto& [k, d] : ops_) v.push_back(&d);
  return v;
}

// ---------------------------------------------------------------- helpers

Dims broadcast_dims(const Node& n, const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // unknown against known non-1: must be the known one
    } else {
      TESSERA_FAIL(n.describe(), ": shapes ", dims_to_string(a), " and ", dims_to_string(b),
                   " cannot be broadcast together");
    }
  }
  return out;
}

TensorType broadcast_types(const Node& n, const std::vector<const TensorType*>& ins) {
  TensorType t;
  bool first = true;
  for (const TensorType* in : ins) {
    if (!in) continue;
    if (first) {
      t = *in;
      first = false;
      continue;
    }
    if (!in->rank_known || !t.rank_known) {
      t.rank_known = false;
      t.dims.clear();
      continue;
    }
    t.dims = broadcast_dims(n, t.dims, in->dims);
  }
  return t;
}

int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank) {
  TESSERA_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), n.describe(), ": axis ", axis,
                " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tessera
