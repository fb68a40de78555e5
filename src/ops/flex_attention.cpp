// FlexAttention (ai.onnx.preview, version 1): scaled dot-product attention on
// rank-4 inputs Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev] with
// optional subgraph hooks:
//   scores = (Q K^T) * scale            (scale defaults to 1/sqrt(E))
//   scores = score_mod(scores)          graph attribute: [B, Hq, L, S] -> same
//   probs  = Softmax(scores, axis=-1)
//   probs  = prob_mod(probs)            graph attribute: [B, Hq, L, S] -> same
//   Y      = probs V                    [B, Hq, L, Ev]
// Query head h reads K/V head h / (Hq / Hkv). The hooks see float32 tensors
// (float64 when the inputs are double), like the op's function body; they
// are run with the reference interpreter and may read values of the
// enclosing scope. A row whose scores are all -inf yields NaN, as Softmax.
#include <cmath>
#include <limits>

#include "interp/interpreter.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

const Graph* hook(const Node& n, const char* key) {
  const Attribute* a = n.attr(key);
  if (!a) return nullptr;
  TESSERA_CHECK(a->kind == Attribute::Kind::Graph && a->g, n.describe(), ": attribute '", key, "' must be a graph");
  TESSERA_CHECK(a->g->inputs().size() == 1 && a->g->outputs().size() == 1, n.describe(), ": the ", key,
                " graph must take one input and produce one output, it has ", a->g->inputs().size(), " and ",
                a->g->outputs().size());
  return a->g.get();
}

void infer_flex_attention(InferContext& c) {
  const Node& n = c.node;
  hook(n, "score_mod");
  hook(n, "prob_mod");
  const TensorType& q = c.in(0);
  const TensorType& k = c.in(1);
  const TensorType& v = c.in(2);
  TESSERA_CHECK(q.dtype == DType::Undefined || is_float(q.dtype), n.describe(), ": Q must be a float tensor, got ",
                dtype_name(q.dtype));
  check_same_dtype(n, {&q, &k, &v});
  for (const TensorType* t : {&q, &k, &v})
    TESSERA_CHECK(!t->rank_known || t->rank() == 4, n.describe(), ": Q, K and V must be 4-D, got ", t->to_string());
  Dims y = {-1, -1, -1, -1};
  if (q.rank_known) y = {q.dims[0], q.dims[1], q.dims[2], -1};
  if (v.rank_known) {
    y[3] = v.dims[3];
    if (y[0] < 0) y[0] = v.dims[0];
  }
  if (q.rank_known && k.rank_known) {
    TESSERA_CHECK(q.dims[3] < 0 || k.dims[3] < 0 || q.dims[3] == k.dims[3], n.describe(), ": Q head size ",
                  q.dims[3], " differs from K head size ", k.dims[3]);
    if (q.dims[1] > 0 && k.dims[1] > 0)
      TESSERA_CHECK(q.dims[1] % k.dims[1] == 0, n.describe(), ": Q has ", q.dims[1],
                    " heads, not a multiple of K's ", k.dims[1]);
  }
  c.out(0) = {q.dtype != DType::Undefined ? q.dtype : v.dtype, y, true};
}

// Runs a hook on `x` ([B, Hq, L, S] values) and returns its output values.
std::vector<double> run_hook(const KernelContext& c, const Graph& g, const char* key, DType compute,
                             const Dims& dims, const std::vector<double>& x) {
  DType declared = g.inputs()[0]->type.dtype;
  DType dt = is_float(declared) ? declared : compute;
  InterpreterOptions opts;
  opts.outer = c.outer;
  std::vector<Tensor> r = interpret(g, {float_tensor(dt, dims, x, "FlexAttention")}, opts);
  TESSERA_CHECK(r.size() == 1 && r[0].dims() == dims, c.node.describe(), ": the ", key, " graph must return a [",
                dims_to_string(dims), "] tensor, it returned [", r.empty() ? "" : dims_to_string(r[0].dims()), "]");
  TESSERA_CHECK(is_float(r[0].dtype()), c.node.describe(), ": the ", key, " graph must return a float tensor, got ",
                dtype_name(r[0].dtype()));
  return float_values(r[0], "FlexAttention");
}

std::vector<Tensor> run_flex_attention(const KernelContext& c) {
  const Node& n = c.node;
  const char* what = "FlexAttention";
  const Tensor& Q = c.in(0);
  const Tensor& K = c.in(1);
  const Tensor& V = c.in(2);
  TESSERA_CHECK(Q.rank() == 4 && K.rank() == 4 && V.rank() == 4, n.describe(), ": Q, K and V must be 4-D, got [",
                dims_to_string(Q.dims()), "], [", dims_to_string(K.dims()), "], [", dims_to_string(V.dims()), "]");
  TESSERA_CHECK(K.dtype() == Q.dtype() && V.dtype() == Q.dtype(), n.describe(),
                ": Q, K and V must have the same element type");
  const int64_t B = Q.dim(0), Hq = Q.dim(1), L = Q.dim(2), E = Q.dim(3);
  const int64_t Hkv = K.dim(1), S = K.dim(2), Ev = V.dim(3);
  TESSERA_CHECK(K.dim(0) == B && V.dim(0) == B, n.describe(), ": Q, K and V batch sizes differ");
  TESSERA_CHECK(K.dim(3) == E, n.describe(), ": Q head size ", E, " differs from K head size ", K.dim(3));
  TESSERA_CHECK(V.dim(1) == Hkv && V.dim(2) == S, n.describe(), ": K [", dims_to_string(K.dims()), "] and V [",
                dims_to_string(V.dims()), "] must agree in heads and sequence length");
  TESSERA_CHECK(Hkv > 0 && Hq % Hkv == 0, n.describe(), ": Q has ", Hq, " heads, not a multiple of K's ", Hkv);
  const int64_t G = Hq / Hkv;
  const Graph* score_mod = hook(n, "score_mod");
  const Graph* prob_mod = hook(n, "prob_mod");
  float scale_attr = n.has_attr("scale") ? op_attrs(c).f("scale") : 0.0f;
  const double scale =
      n.has_attr("scale") && scale_attr != 0.0f ? scale_attr : 1.0 / std::sqrt(static_cast<double>(E));
  const DType compute = Q.dtype() == DType::F64 ? DType::F64 : DType::F32;
  std::vector<double> q = float_values(Q, what), k = float_values(K, what), v = float_values(V, what);
  const Dims sdims = {B, Hq, L, S};
  std::vector<double> p(static_cast<size_t>(B * Hq * L * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / G;
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          const double* qi = &q[static_cast<size_t>(((b * Hq + h) * L + i) * E)];
          const double* kj = &k[static_cast<size_t>(((b * Hkv + hk) * S + j) * E)];
          for (int64_t e = 0; e < E; ++e) acc += qi[e] * kj[e];
          p[static_cast<size_t>(((b * Hq + h) * L + i) * S + j)] = acc * scale;
        }
    }
  if (score_mod) p = run_hook(c, *score_mod, "score_mod", compute, sdims, p);
  for (int64_t r = 0; r < B * Hq * L; ++r) {
    double* row = &p[static_cast<size_t>(r * S)];
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < S; ++j) m = std::max(m, row[j]);
    double sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += row[j] = std::exp(row[j] - m);
    for (int64_t j = 0; j < S; ++j) row[j] /= sum;
  }
  if (prob_mod) p = run_hook(c, *prob_mod, "prob_mod", compute, sdims, p);
  std::vector<double> y(static_cast<size_t>(B * Hq * L * Ev), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / G;
      for (int64_t i = 0; i < L; ++i) {
        double* yi = &y[static_cast<size_t>(((b * Hq + h) * L + i) * Ev)];
        for (int64_t j = 0; j < S; ++j) {
          double pj = p[static_cast<size_t>(((b * Hq + h) * L + i) * S + j)];
          const double* vj = &v[static_cast<size_t>(((b * Hkv + hk) * S + j) * Ev)];
          for (int64_t e = 0; e < Ev; ++e) yi[e] += pj * vj[e];
        }
      }
    }
  return {float_tensor(Q.dtype(), {B, Hq, L, Ev}, y, what)};
}

double flex_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
  // QK^T and PV (a multiply-add each), the softmax (~3 per score) and the hooks.
  if (outs.empty() || ins.size() < 3 || !ins[0] || !ins[1]) return 0.0;
  const double BHL = static_cast<double>(ins[0]->dims[0] * ins[0]->dims[1] * ins[0]->dims[2]);
  const double S = static_cast<double>(ins[1]->dims[2]), E = static_cast<double>(ins[0]->dims[3]),
               Ev = static_cast<double>(outs[0].dims[3]);
  double f = BHL * S * (2.0 * E + 2.0 * Ev + 3.0);
  for (const char* key : {"score_mod", "prob_mod"})
    if (const Attribute* a = n.attr(key); a && a->g)
      for (const auto& node : a->g->nodes()) f += node_flops(*node);
  return f;
}

}  // namespace

void register_flex_attention_ops(OpRegistry& r) {
  r.add({.name = "FlexAttention", .domain = "ai.onnx.preview", .min_opset = 1, .mapping = MappingType::ManyToMany,
         .linear_inputs = {2}, .infer = infer_flex_attention, .reference = run_flex_attention, .flops = flex_flops,
         .attributes = {graph_attr("prob_mod"), float_attr("scale"), graph_attr("score_mod")}});
}

}  // namespace tessera
