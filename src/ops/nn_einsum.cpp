// Einsum: explicit ("ij,jk->ik") and implicit ("ij,jk") outputs, repeated
// labels within an operand (diagonals), labels summed away, and "..."
// broadcasting. The reference loops once over every combination of labels.
#include <algorithm>
#include <cctype>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

constexpr int kEllipsis = -1;
constexpr int kEllBase = 1000;  // label of ellipsis dim j is kEllBase + j

struct EinsumPlan {
  std::vector<std::vector<int>> op_labels;  // per operand, one label per dim
  std::vector<int> out_labels;
  std::map<int, int64_t> size;              // label -> extent (-1 unknown)
};

std::vector<int> parse_term(const Node& n, const std::string& t) {
  std::vector<int> v;
  for (size_t i = 0; i < t.size(); ++i) {
    char ch = t[i];
    if (std::isalpha(static_cast<unsigned char>(ch))) {
      v.push_back(ch);
    } else if (ch == '.') {
      TESSERA_CHECK(t.compare(i, 3, "...") == 0, n.describe(), ": malformed ellipsis in einsum term '", t, "'");
      TESSERA_CHECK(std::find(v.begin(), v.end(), kEllipsis) == v.end(), n.describe(),
                    ": more than one ellipsis in einsum term '", t, "'");
      v.push_back(kEllipsis);
      i += 2;
    } else {
      TESSERA_FAIL(n.describe(), ": invalid character '", ch, "' in einsum equation");
    }
  }
  return v;
}

EinsumPlan make_plan(const OpAttrs& attrs, const std::vector<Dims>& dims) {
  const Node& n = attrs.node();
  std::string eq;
  for (char ch : attrs.s("equation")) if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  TESSERA_CHECK(!eq.empty(), n.describe(), ": attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  TESSERA_CHECK(terms.size() == dims.size(), n.describe(), ": equation '", eq, "' has ", terms.size(),
                " operands but the node has ", dims.size(), " inputs");
  EinsumPlan p;
  std::vector<std::vector<int>> raw;
  int64_t ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    raw.push_back(parse_term(n, terms[k]));
    const bool has_ell = std::find(raw[k].begin(), raw[k].end(), kEllipsis) != raw[k].end();
    const int64_t letters = static_cast<int64_t>(raw[k].size()) - (has_ell ? 1 : 0);
    const int64_t r = static_cast<int64_t>(dims[k].size());
    TESSERA_CHECK(has_ell ? r >= letters : r == letters, n.describe(), ": einsum term '", terms[k], "' does not match ",
                  "input ", k, " of rank ", r);
    if (has_ell) ell_rank = std::max(ell_rank, r - letters);
  }
  for (size_t k = 0; k < raw.size(); ++k) {
    const int64_t r = static_cast<int64_t>(dims[k].size());
    std::vector<int> labels;
    for (int l : raw[k]) {
      if (l != kEllipsis) {
        labels.push_back(l);
        continue;
      }
      const int64_t er = r - (static_cast<int64_t>(raw[k].size()) - 1);
      for (int64_t j = 0; j < er; ++j) labels.push_back(kEllBase + static_cast<int>(ell_rank - er + j));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t ext = dims[k][d];
      auto it = p.size.find(labels[d]);
      if (it == p.size.end()) {
        p.size[labels[d]] = ext;
        continue;
      }
      int64_t& cur = it->second;  // size 1 broadcasts against any extent
      if (cur == ext || ext == 1) continue;
      if (cur < 0 || cur == 1) {
        cur = (cur == 1 || ext >= 0) ? ext : cur;
        continue;
      }
      if (ext < 0) continue;
      TESSERA_FAIL(n.describe(), ": einsum label '",
                   labels[d] >= kEllBase ? std::string("...") : std::string(1, static_cast<char>(labels[d])),
                   "' has extents ", cur, " and ", ext);
    }
    p.op_labels.push_back(labels);
  }
  if (arrow != std::string::npos) {
    for (int l : parse_term(n, eq.substr(arrow + 2))) {
      if (l == kEllipsis) {
        for (int64_t j = 0; j < ell_rank; ++j) p.out_labels.push_back(kEllBase + static_cast<int>(j));
        continue;
      }
      TESSERA_CHECK(p.size.count(l), n.describe(), ": output label '", static_cast<char>(l),
                    "' does not appear in the inputs");
      TESSERA_CHECK(std::find(p.out_labels.begin(), p.out_labels.end(), l) == p.out_labels.end(), n.describe(),
                    ": output label '", static_cast<char>(l), "' is repeated");
      p.out_labels.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < ell_rank; ++j) p.out_labels.push_back(kEllBase + static_cast<int>(j));
    std::map<int, int> count;
    for (const auto& t : raw)
      for (int l : t)
        if (l != kEllipsis) ++count[l];
    for (const auto& [l, c] : count)  // ordered by character code
      if (c == 1) p.out_labels.push_back(l);
  }
  return p;
}

Dims out_dims(const EinsumPlan& p) {
  Dims d;
  for (int l : p.out_labels) d.push_back(p.size.at(l));
  return d;
}

void infer_einsum(InferContext& c) {
  std::vector<Dims> dims;
  for (int i = 0; i < c.num_inputs(); ++i) dims.push_back(c.in(i).dims);
  check_same_dtype(c.node, c.input_types);
  const DType t = c.in(0).dtype;
  TESSERA_CHECK(t != DType::Bool && t != DType::String, c.node.describe(), ": unsupported element type ",
                dtype_name(t));
  c.out(0) = TensorType{t, out_dims(make_plan(op_attrs(c), dims))};
}

template <class T>
using einsum_acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                        std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

std::vector<Tensor> run_einsum(const KernelContext& c) {
  std::vector<Dims> dims;
  for (int i = 0; i < c.num_inputs(); ++i) {
    dims.push_back(c.in(i).dims());
    TESSERA_CHECK(c.in(i).dtype() == c.in(0).dtype(), c.node.describe(), ": inputs have different element types");
  }
  EinsumPlan p = make_plan(op_attrs(c), dims);
  // Loop order: output labels, then the summed ones.
  std::vector<int> order = p.out_labels;
  for (const auto& [l, s] : p.size)
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  const size_t L = order.size(), K = dims.size();
  std::vector<int64_t> ext(L), ostride(L, 0);
  std::vector<std::vector<int64_t>> istride(K, std::vector<int64_t>(L, 0));
  for (size_t i = 0; i < L; ++i) ext[i] = p.size.at(order[i]);
  Dims od = out_dims(p);
  const Dims os = strides_of(od);
  for (size_t i = 0; i < p.out_labels.size(); ++i) ostride[i] = os[i];
  for (size_t k = 0; k < K; ++k) {
    const Dims st = strides_of(dims[k]);
    for (size_t d = 0; d < dims[k].size(); ++d) {
      if (dims[k][d] == 1 && p.size.at(p.op_labels[k][d]) != 1) continue;  // broadcast
      size_t i = static_cast<size_t>(std::find(order.begin(), order.end(), p.op_labels[k][d]) - order.begin());
      istride[k][i] += st[d];
    }
  }
  Tensor y(c.in(0).dtype(), od);
  const int64_t total = numel_of(ext);
  dispatch_dtype(y.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      TESSERA_FAIL(c.node.describe(), ": bool inputs are not supported");
    } else {
      using Acc = einsum_acc_t<T>;
      std::vector<Acc> acc(static_cast<size_t>(y.numel()), Acc(0));
      std::vector<const T*> ptr(K);
      for (size_t k = 0; k < K; ++k) ptr[k] = c.in(static_cast<int>(k)).template data<T>();
      if (total > 0) {
        const size_t last = L == 0 ? 0 : L - 1;
        const int64_t inner = L == 0 ? 1 : ext[last];
        std::vector<int64_t> idx(L, 0), off(K, 0);
        int64_t ooff = 0;
        for (;;) {
          for (int64_t j = 0; j < inner; ++j) {
            Acc prod = Acc(1);
            for (size_t k = 0; k < K; ++k)
              prod *= static_cast<Acc>(static_cast<compute_t<T>>(ptr[k][off[k] + (L ? j * istride[k][last] : 0)]));
            acc[static_cast<size_t>(ooff + (L ? j * ostride[last] : 0))] += prod;
          }
          // Advance the odometer over all labels but the innermost.
          int64_t d = static_cast<int64_t>(L) - 2;
          for (; d >= 0; --d) {
            const size_t u = static_cast<size_t>(d);
            if (++idx[u] < ext[u]) {
              for (size_t k = 0; k < K; ++k) off[k] += istride[k][u];
              ooff += ostride[u];
              break;
            }
            for (size_t k = 0; k < K; ++k) off[k] -= istride[k][u] * (ext[u] - 1);
            ooff -= ostride[u] * (ext[u] - 1);
            idx[u] = 0;
          }
          if (d < 0) break;
        }
      }
      T* o = y.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) o[i] = to_storage<T>(static_cast<compute_t<T>>(acc[i]));
    }
  });
  return {y};
}

}  // namespace

void register_nn_einsum_ops(OpRegistry& r) {
  r.add({.name = "Einsum", .min_opset = 12, .mapping = MappingType::ManyToMany, .linear_inputs = {0, 1},
         .infer = infer_einsum, .reference = run_einsum,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           // One multiply per extra operand and one add per term: K per label combination.
           std::vector<Dims> dims;
           for (const TensorType* t : ins) dims.push_back(t->dims);
           EinsumPlan p = make_plan(OpAttrs(n, kAnyOpset), dims);
           double terms = 1;
           for (const auto& [l, s] : p.size) terms *= static_cast<double>(s);
           return terms * static_cast<double>(std::max<size_t>(1, ins.size()));
         },
         .attributes = {string_attr("equation").required()}});
}

}  // namespace tessera
