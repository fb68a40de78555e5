// Canonical reshape/transpose forms: see rt_form.h.
#include "opt/rt_form.h"

#include <algorithm>
#include <numeric>

#include "interp/interpreter.h"

namespace tessera::rt {

namespace {

bool static_dims(const Value* v) { return v && v->type.rank_known && v->type.fully_known(); }

std::vector<int64_t> iota(size_t n) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

// 1, d0, d0*d1, ..., the element count.
std::vector<int64_t> prefix_products(const Dims& d) {
  std::vector<int64_t> p{1};
  for (int64_t x : d) p.push_back(p.back() * x);
  return p;
}

Value* shape_constant(Graph& g, const std::string& name, const Dims& dims) {
  Tensor t(DType::I64, {static_cast<int64_t>(dims.size())});
  std::copy(dims.begin(), dims.end(), t.data<int64_t>());
  return g.add_constant(g.unique_name(name + ".shape"), std::move(t));
}

}  // namespace

Dims Form::transposed() const {
  Dims d;
  for (int64_t p : perm) d.push_back(split[static_cast<size_t>(p)]);
  return d;
}

bool Form::is_reshape() const { return perm == iota(perm.size()); }

int Form::op_count() const {
  if (is_reshape()) return in == out ? 0 : 1;
  return (split != in) + 1 + (transposed() != out);
}

std::optional<Form> form_of(const Node& n) {
  static const char* kOps[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"};
  if (!(n.domain.empty() || n.domain == "ai.onnx") ||
      std::none_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return n.op_type == op; }))
    return std::nullopt;
  if (!n.has_input(0) || n.outputs.size() != 1 || !n.outputs[0]) return std::nullopt;
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  if (!static_dims(x) || !static_dims(y) || x->type.dtype != y->type.dtype || x->type.dtype == DType::String ||
      x->type.dtype == DType::Undefined)
    return std::nullopt;
  const Dims& in = x->type.dims;
  if (numel_of(in) <= 0 || numel_of(in) != numel_of(y->type.dims)) return std::nullopt;
  Form f{in, in, iota(in.size()), y->type.dims};
  if (n.op_type == "Transpose") {
    const Attribute* a = n.attr("perm");
    std::vector<int64_t> perm = a ? a->ints : std::vector<int64_t>{};
    if (!a)
      for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) perm.push_back(i);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != iota(in.size())) return std::nullopt;
    f.perm = perm;
    if (f.transposed() != f.out) return std::nullopt;
  }
  return f;
}

Form normalize(Form f) {
  // Size-1 axes carry no data: drop them and renumber.
  std::vector<int64_t> index(f.split.size(), -1);
  Dims split;
  for (size_t j = 0; j < f.split.size(); ++j)
    if (f.split[j] != 1) {
      index[j] = static_cast<int64_t>(split.size());
      split.push_back(f.split[j]);
    }
  std::vector<int64_t> perm;
  for (int64_t p : f.perm)
    if (index[static_cast<size_t>(p)] >= 0) perm.push_back(index[static_cast<size_t>(p)]);
  // Axes j, j+1 that stay adjacent and in order through the transpose are one axis.
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i + 1 < perm.size(); ++i) {
      int64_t j = perm[i];
      if (perm[i + 1] != j + 1) continue;
      split[static_cast<size_t>(j)] *= split[static_cast<size_t>(j) + 1];
      split.erase(split.begin() + j + 1);
      perm.erase(perm.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      for (int64_t& p : perm)
        if (p > j) --p;
      merged = true;
      break;
    }
  }
  f.split = split;
  f.perm = perm;
  return f;
}

std::optional<Form> compose(const Form& first, const Form& second) {
  if (first.out != second.in) return std::nullopt;
  Form a = normalize(first), b = normalize(second);
  // The transposed dims of `a` and the split dims of `b` factor one element
  // count; their common refinement F exists when the union of their prefix
  // products is a divisor chain.
  const Dims s1 = a.transposed(), s2 = b.split;
  std::vector<int64_t> p1 = prefix_products(s1), p2 = prefix_products(s2), all;
  std::set_union(p1.begin(), p1.end(), p2.begin(), p2.end(), std::back_inserter(all));
  Dims f;
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i] % all[i - 1] != 0) return std::nullopt;
    f.push_back(all[i] / all[i - 1]);
  }
  auto at = [&](int64_t prefix) { return std::lower_bound(all.begin(), all.end(), prefix) - all.begin(); };
  // a's transposed axis k is F's axes [at(p1[k]), at(p1[k+1])); split a's input axis perm[k] the same way.
  std::vector<int64_t> inv(a.perm.size());
  for (size_t k = 0; k < a.perm.size(); ++k) inv[static_cast<size_t>(a.perm[k])] = static_cast<int64_t>(k);
  Dims split;
  std::vector<int64_t> pos_of_f(f.size());
  for (size_t j = 0; j < a.split.size(); ++j) {
    size_t k = static_cast<size_t>(inv[j]);
    for (auto t = at(p1[k]); t < at(p1[k + 1]); ++t) {
      pos_of_f[static_cast<size_t>(t)] = static_cast<int64_t>(split.size());
      split.push_back(f[static_cast<size_t>(t)]);
    }
  }
  // b's transpose moves its split axes, each a run of F's axes.
  std::vector<int64_t> perm;
  for (int64_t l : b.perm)
    for (auto t = at(p2[static_cast<size_t>(l)]); t < at(p2[static_cast<size_t>(l) + 1]); ++t)
      perm.push_back(pos_of_f[static_cast<size_t>(t)]);
  return normalize(Form{a.in, split, perm, b.out});
}

Form inverse(const Form& f) {
  std::vector<int64_t> inv(f.perm.size());
  for (size_t k = 0; k < f.perm.size(); ++k) inv[static_cast<size_t>(f.perm[k])] = static_cast<int64_t>(k);
  return Form{f.out, f.transposed(), inv, f.in};
}

Value* emit(Graph& g, Node* pos, Value* x, const Form& form, const std::string& name, bool at_least_one) {
  Form f = normalize(form);
  const DType dt = x->type.dtype;
  auto reshape = [&](Value* v, const Dims& dims) {
    Node* n = g.insert_node_before(pos, "Reshape", {v, shape_constant(g, name, dims)}, {g.unique_name(name)}, {},
                                   g.unique_name(name + ".reshape"));
    n->outputs[0]->type = TensorType{dt, dims, true};
    return n->outputs[0];
  };
  if (f.is_reshape()) return f.in == f.out && !at_least_one ? x : reshape(x, f.out);
  Value* v = f.split == f.in ? x : reshape(x, f.split);
  AttrMap attrs{{"perm", Attribute::of_ints(f.perm)}};
  Node* t = g.insert_node_before(pos, "Transpose", {v}, {g.unique_name(name)}, attrs, g.unique_name(name + ".transpose"));
  t->outputs[0]->type = TensorType{dt, f.transposed(), true};
  v = t->outputs[0];
  return f.transposed() == f.out ? v : reshape(v, f.out);
}

Tensor apply(const Form& f, const Tensor& t) {
  Graph g;
  g.opset = 13;
  Value* x = g.add_input("x", TensorType{t.dtype(), f.in, true});
  g.add_output(emit(g, nullptr, x, f, "rt", true));
  return interpret(g, {t.reshaped(f.in)}).at(0);
}

}  // namespace tessera::rt
