// TreeEnsemble (ai.onnx.ml v5): sums (or averages, min, max) the leaf
// weights reached by each tree for each target, then post-transforms.
//
// Nodes are given as parallel nodes_* arrays; a child reference is an index
// into nodes_* or, when the matching *_leafs flag is 1, into leaf_*.
#include <algorithm>
#include <cmath>

#include "ops/ml_ops.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

namespace {

enum Mode { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };
enum Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
enum Post { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };

struct Ensemble {
  int64_t n_targets = 0;
  int64_t aggregate = kSum, post = kNone;
  std::vector<int64_t> feature, mode, true_id, false_id, true_leaf, false_leaf, missing_true, roots;
  std::vector<double> split;
  std::vector<std::vector<double>> members;  // per node (BRANCH_MEMBER only)
  std::vector<int64_t> leaf_target;
  std::vector<double> leaf_weight;
};

const Tensor& tensor_attr(const Node& n, const char* key) {
  const Attribute* a = n.attr(key);
  TESSERA_CHECK(a && a->kind == Attribute::Kind::Tensor, n.describe(), ": requires the tensor attribute '", key, "'");
  return a->t;
}

std::vector<double> doubles_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_double(i);
  return v;
}

Ensemble read_ensemble(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  Ensemble e;
  e.n_targets = attrs.i("n_targets");
  TESSERA_CHECK(e.n_targets >= 1 && e.n_targets < (int64_t{1} << 24), n.describe(), ": n_targets ", e.n_targets,
                " is out of range");
  e.aggregate = attrs.i("aggregate_function");
  TESSERA_CHECK(e.aggregate >= kAverage && e.aggregate <= kMax, n.describe(), ": aggregate_function ", e.aggregate,
                " is not one of 0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)");
  e.post = attrs.i("post_transform");
  TESSERA_CHECK(e.post >= kNone && e.post <= kProbit, n.describe(), ": post_transform ", e.post,
                " is not one of 0 (NONE) .. 4 (PROBIT)");
  e.feature = attrs.ints("nodes_featureids");
  e.true_id = attrs.ints("nodes_truenodeids");
  e.false_id = attrs.ints("nodes_falsenodeids");
  e.true_leaf = attrs.ints("nodes_trueleafs");
  e.false_leaf = attrs.ints("nodes_falseleafs");
  e.roots = attrs.ints("tree_roots");
  e.split = doubles_of(tensor_attr(n, "nodes_splits"));
  for (int64_t v : tensor_attr(n, "nodes_modes").to_int_vector()) e.mode.push_back(v);
  size_t count = e.feature.size();
  e.missing_true = attrs.has("nodes_missing_value_tracks_true") ? attrs.ints("nodes_missing_value_tracks_true")
                                                                : std::vector<int64_t>(count, 0);
  for (auto* v : {&e.true_id, &e.false_id, &e.true_leaf, &e.false_leaf, &e.mode, &e.missing_true})
    TESSERA_CHECK(v->size() == count, n.describe(), ": the nodes_* attributes must all have ", count, " entries");
  TESSERA_CHECK(e.split.size() == count, n.describe(), ": nodes_splits must have ", count, " entries");
  e.leaf_target = attrs.ints("leaf_targetids");
  e.leaf_weight = doubles_of(tensor_attr(n, "leaf_weights"));
  size_t leaves = e.leaf_target.size();
  TESSERA_CHECK(e.leaf_weight.size() == leaves, n.describe(), ": leaf_weights has ", e.leaf_weight.size(),
                " entries but leaf_targetids has ", leaves);
  for (int64_t t : e.leaf_target)
    TESSERA_CHECK(t >= 0 && t < e.n_targets, n.describe(), ": leaf target id ", t, " is out of range for ",
                  e.n_targets, " targets");
  for (size_t i = 0; i < count; ++i) {
    TESSERA_CHECK(e.mode[i] >= kLeq && e.mode[i] <= kMember, n.describe(), ": node ", i, " has unknown mode ",
                  e.mode[i]);
    TESSERA_CHECK(e.feature[i] >= 0, n.describe(), ": node ", i, " has negative feature id ", e.feature[i]);
    for (auto [id, leaf] : {std::pair{e.true_id[i], e.true_leaf[i]}, std::pair{e.false_id[i], e.false_leaf[i]}}) {
      size_t limit = leaf ? leaves : count;
      TESSERA_CHECK(id >= 0 && static_cast<size_t>(id) < limit, n.describe(), ": node ", i, " refers to ",
                    leaf ? "leaf " : "node ", id, " of ", limit);
    }
  }
  for (int64_t r : e.roots)
    TESSERA_CHECK(r >= 0 && static_cast<size_t>(r) < count, n.describe(), ": tree root ", r, " is out of range");
  // membership_values: one NaN-terminated set per BRANCH_MEMBER node, in order.
  e.members.resize(count);
  std::vector<double> mv;
  if (n.has_attr("membership_values")) mv = doubles_of(tensor_attr(n, "membership_values"));
  size_t pos = 0;
  for (size_t i = 0; i < count; ++i) {
    if (e.mode[i] != kMember) continue;
    TESSERA_CHECK(pos < mv.size(), n.describe(), ": membership_values has no set for BRANCH_MEMBER node ", i);
    while (pos < mv.size() && !std::isnan(mv[pos])) e.members[i].push_back(mv[pos++]);
    ++pos;  // the NaN separator
  }
  return e;
}

bool branch_true(const Ensemble& e, size_t node, double x) {
  if (std::isnan(x) && e.missing_true[node]) return true;
  double s = e.split[node];
  switch (e.mode[node]) {
    case kLeq: return x <= s;
    case kLt: return x < s;
    case kGte: return x >= s;
    case kGt: return x > s;
    case kEq: return x == s;
    case kNeq: return x != s;
    default: {
      const auto& m = e.members[node];
      return std::find(m.begin(), m.end(), x) != m.end();
    }
  }
}

// Inverse error function: Giles' single-precision approximation refined by
// Newton steps on std::erf.
double erfinv(double y) {
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  double w = -std::log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double k : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = k + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double k : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = k + p * w;
  }
  double x = p * y;
  for (int it = 0; it < 3; ++it) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

void post_transform(int64_t post, std::vector<double>& v) {
  switch (post) {
    case kSoftmax:
    case kSoftmaxZero: {
      double mx = *std::max_element(v.begin(), v.end());
      double sum = 0;
      for (double& a : v) {
        a = (post == kSoftmaxZero && a == 0) ? 0 : std::exp(a - mx);
        sum += a;
      }
      for (double& a : v) a = sum > 0 ? a / sum : 0;
      break;
    }
    case kLogistic:
      for (double& a : v) a = 1 / (1 + std::exp(-a));
      break;
    case kProbit:
      for (double& a : v) a = std::sqrt(2.0) * erfinv(2 * a - 1);
      break;
    default: break;
  }
}

void check_x(const Node& n, DType t, int64_t rank) {
  TESSERA_CHECK(t == DType::F32 || t == DType::F64 || t == DType::F16, n.describe(),
                ": input must be float, double or float16, got ", dtype_name(t));
  TESSERA_CHECK(rank == 2, n.describe(), ": input must be 2-D [N, F], got rank ", rank);
}

void infer_tree_ensemble(InferContext& c) {
  const TensorType& x = c.in(0);
  check_x(c.node, x.dtype, x.rank());
  Ensemble e = read_ensemble(op_attrs(c));
  c.out(0) = {x.dtype, {x.dims[0], e.n_targets}, true};
}

std::vector<Tensor> run_tree_ensemble(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_x(c.node, x.dtype(), x.rank());
  Ensemble e = read_ensemble(op_attrs(c));
  int64_t rows = x.dim(0), features = x.dim(1);
  for (int64_t f : e.feature)
    TESSERA_CHECK(f < features, c.node.describe(), ": feature id ", f, " is out of range for ", features,
                  " input features");
  Tensor y(x.dtype(), {rows, e.n_targets});
  size_t nt = static_cast<size_t>(e.n_targets);
  std::vector<double> score(nt);
  std::vector<bool> hit(nt);
  size_t max_steps = e.feature.size() + 1;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(score.begin(), score.end(), 0.0);
    std::fill(hit.begin(), hit.end(), false);
    for (int64_t root : e.roots) {
      size_t node = static_cast<size_t>(root);
      size_t steps = 0;
      while (true) {
        TESSERA_CHECK(++steps <= max_steps, c.node.describe(), ": the tree at root ", root, " has a cycle");
        bool t = branch_true(e, node, x.get_double(r * features + e.feature[node]));
        int64_t next = t ? e.true_id[node] : e.false_id[node];
        if (t ? e.true_leaf[node] : e.false_leaf[node]) {
          size_t target = static_cast<size_t>(e.leaf_target[static_cast<size_t>(next)]);
          double w = e.leaf_weight[static_cast<size_t>(next)];
          if (e.aggregate == kMin) score[target] = hit[target] ? std::min(score[target], w) : w;
          else if (e.aggregate == kMax) score[target] = hit[target] ? std::max(score[target], w) : w;
          else score[target] += w;
          hit[target] = true;
          break;
        }
        node = static_cast<size_t>(next);
      }
    }
    if (e.aggregate == kAverage && !e.roots.empty())
      for (double& s : score) s /= static_cast<double>(e.roots.size());
    post_transform(e.post, score);
    dispatch_float(x.dtype(), [&]<class T>() {
      T* o = y.data<T>() + r * e.n_targets;
      for (size_t t = 0; t < nt; ++t) o[t] = to_storage<T>(score[t]);
    });
  }
  return {y};
}

// One comparison per tree level: estimated as the node count per row.
double tree_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (!ins[0] || ins[0]->dims.empty()) return 0;
  const size_t nodes = OpAttrs(n, kAnyOpset).ints("nodes_featureids").size();
  return static_cast<double>(ins[0]->dims[0]) * static_cast<double>(nodes);
}

}  // namespace

void register_ml_tree_ops(OpRegistry& r) {
  // Every output target depends on many input features.
  r.add({.name = "TreeEnsemble", .domain = "ai.onnx.ml", .min_opset = 1, .mapping = MappingType::ManyToMany,
         .infer = infer_tree_ensemble, .reference = run_tree_ensemble, .flops = tree_flops,
         .attributes = {int_attr("aggregate_function", 1), ints_attr("leaf_targetids").required(),
                        tensor_attr("leaf_weights").required(), tensor_attr("membership_values"),
                        int_attr("n_targets").required(), ints_attr("nodes_falseleafs").required(),
                        ints_attr("nodes_falsenodeids").required(), ints_attr("nodes_featureids").required(),
                        tensor_attr("nodes_hitrates"), ints_attr("nodes_missing_value_tracks_true"),
                        tensor_attr("nodes_modes").required(), tensor_attr("nodes_splits").required(),
                        ints_attr("nodes_trueleafs").required(), ints_attr("nodes_truenodeids").required(),
                        int_attr("post_transform", 0), ints_attr("tree_roots").required()}});
}

}  // namespace tessera
