// LinearAttention (opset 27): recurrent linear attention over packed 3-D inputs
// query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv], with the
// per-KV-head state S [dk, dv] (past_state / present_state [B, Hkv, dk, dv],
// zeros when absent). For each step t, with g = decay (log-space, per key
// row: [B, T, Hkv*dk], or per head: [B, T, Hkv]) and beta ([B, T, Hkv] or
// [B, T, 1]):
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S' = exp(g) S;  S = S' + k (beta (v - S'^T k))^T   (default)
// and o_t = scale * q^T S (after the update), query head h reading KV head
// h / (Hq / Hkv). scale defaults to 1/sqrt(dk). Computed in double.
#include <cmath>

#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

enum class Rule { Linear, Gated, Delta, GatedDelta };

Rule update_rule(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string r = attrs.s("update_rule");
  if (r == "linear") return Rule::Linear;
  if (r == "gated") return Rule::Gated;
  if (r == "delta") return Rule::Delta;
  if (r == "gated_delta") return Rule::GatedDelta;
  TESSERA_FAIL(n.describe(), ": update_rule must be 'linear', 'gated', 'delta' or 'gated_delta', got '", r, "'");
}
bool uses_decay(Rule r) { return r == Rule::Gated || r == Rule::GatedDelta; }
bool uses_beta(Rule r) { return r == Rule::Delta || r == Rule::GatedDelta; }

struct Heads {
  int64_t hq, hkv;
};

Heads heads(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  TESSERA_CHECK(n.has_attr("q_num_heads") && n.has_attr("kv_num_heads"), n.describe(),
                ": the q_num_heads and kv_num_heads attributes are required");
  Heads h{attrs.i("q_num_heads"), attrs.i("kv_num_heads")};
  TESSERA_CHECK(h.hq > 0 && h.hkv > 0 && h.hq % h.hkv == 0, n.describe(), ": q_num_heads (", h.hq,
                ") must be a positive multiple of kv_num_heads (", h.hkv, ")");
  return h;
}

int64_t per_head(const Node& n, int64_t hidden, int64_t h, const char* what) {
  if (hidden < 0) return -1;
  TESSERA_CHECK(hidden % h == 0, n.describe(), ": ", what, " hidden size ", hidden, " is not divisible by ", h,
                " heads");
  return hidden / h;
}

void infer_linear_attention(InferContext& c) {
  const Node& n = c.node;
  Rule rule = update_rule(op_attrs(c));
  Heads h = heads(op_attrs(c));
  const TensorType& q = c.in(0);
  const TensorType& k = c.in(1);
  const TensorType& v = c.in(2);
  TESSERA_CHECK(q.dtype == DType::Undefined || is_float(q.dtype), n.describe(), ": query must be a float tensor, got ",
                dtype_name(q.dtype));
  std::vector<const TensorType*> ts = {&q, &k, &v};
  for (int i = 3; i < 6; ++i)
    if (c.has_input(i)) ts.push_back(&c.in(i));
  check_same_dtype(n, ts);
  TESSERA_CHECK(!uses_decay(rule) || c.has_input(4), n.describe(), ": this update_rule needs the decay input");
  TESSERA_CHECK(!uses_beta(rule) || c.has_input(5), n.describe(), ": this update_rule needs the beta input");
  int64_t B = -1, T = -1, dk = -1, dv = -1;
  for (const TensorType* t : {&q, &k, &v}) {
    if (!t->rank_known) continue;
    TESSERA_CHECK(t->rank() == 3, n.describe(), ": query, key and value must be 3-D [B, T, H*D], got ",
                  t->to_string());
    if (t->dims[0] >= 0) B = t->dims[0];
    if (t->dims[1] >= 0) T = t->dims[1];
  }
  if (q.rank_known) dk = per_head(n, q.dims[2], h.hq, "query");
  if (k.rank_known) {
    int64_t kd = per_head(n, k.dims[2], h.hkv, "key");
    TESSERA_CHECK(kd < 0 || dk < 0 || kd == dk, n.describe(), ": query head size ", dk, " differs from key head size ",
                  kd);
    if (dk < 0) dk = kd;
  }
  if (v.rank_known) dv = per_head(n, v.dims[2], h.hkv, "value");
  if (c.has_input(3) && c.in(3).rank_known) {
    const TensorType& p = c.in(3);
    TESSERA_CHECK(p.rank() == 4, n.describe(), ": past_state must be 4-D [B, Hkv, dk, dv], got ", p.to_string());
    if (B < 0) B = p.dims[0];
    if (dk < 0) dk = p.dims[2];
    if (dv < 0) dv = p.dims[3];
  }
  DType dt = q.dtype;
  c.out(0) = {dt, {B, T, dv < 0 ? -1 : h.hq * dv}, true};
  if (c.num_outputs() > 1) c.out(1) = {dt, {B, h.hkv, dk, dv}, true};
}

std::vector<Tensor> run_linear_attention(const KernelContext& c) {
  const Node& n = c.node;
  const char* what = "LinearAttention";
  Rule rule = update_rule(op_attrs(c));
  Heads h = heads(op_attrs(c));
  const Tensor& Q = c.in(0);
  const Tensor& K = c.in(1);
  const Tensor& V = c.in(2);
  for (int i = 1; i < 6; ++i)
    if (c.has_input(i))
      TESSERA_CHECK(c.in(i).dtype() == Q.dtype(), n.describe(), ": input ", i, " is ", dtype_name(c.in(i).dtype()),
                    " but query is ", dtype_name(Q.dtype()));
  for (const Tensor* t : {&Q, &K, &V})
    TESSERA_CHECK(t->rank() == 3 && t->dim(0) == Q.dim(0) && t->dim(1) == Q.dim(1), n.describe(),
                  ": query, key and value must be 3-D with equal batch and sequence sizes, got [",
                  dims_to_string(Q.dims()), "], [", dims_to_string(K.dims()), "], [", dims_to_string(V.dims()), "]");
  const int64_t B = Q.dim(0), T = Q.dim(1), Hq = h.hq, Hkv = h.hkv, G = Hq / Hkv;
  const int64_t dk = per_head(n, Q.dim(2), Hq, "query"), dv = per_head(n, V.dim(2), Hkv, "value");
  TESSERA_CHECK(K.dim(2) == Hkv * dk, n.describe(), ": key hidden size ", K.dim(2), " must be kv_num_heads * ", dk,
                " = ", Hkv * dk);
  TESSERA_CHECK(!uses_decay(rule) || c.has_input(4), n.describe(), ": this update_rule needs the decay input");
  TESSERA_CHECK(!uses_beta(rule) || c.has_input(5), n.describe(), ": this update_rule needs the beta input");
  std::vector<double> q = float_values(Q, what), k = float_values(K, what), v = float_values(V, what);
  std::vector<double> S(static_cast<size_t>(B * Hkv * dk * dv), 0.0);
  if (c.has_input(3)) {
    TESSERA_CHECK(c.in(3).dims() == Dims({B, Hkv, dk, dv}), n.describe(), ": past_state must be [", B, ", ", Hkv,
                  ", ", dk, ", ", dv, "], got [", dims_to_string(c.in(3).dims()), "]");
    S = float_values(c.in(3), what);
  }
  std::vector<double> g, beta;
  int64_t g_width = 0, beta_width = 0;  // entries per (b, t)
  if (uses_decay(rule)) {
    const Tensor& D = c.in(4);
    TESSERA_CHECK(D.rank() == 3 && D.dim(0) == B && D.dim(1) == T && (D.dim(2) == Hkv * dk || D.dim(2) == Hkv),
                  n.describe(), ": decay must be [", B, ", ", T, ", ", Hkv * dk, "] or [", B, ", ", T, ", ", Hkv,
                  "], got [", dims_to_string(D.dims()), "]");
    g = float_values(D, what);
    g_width = D.dim(2);
  }
  if (uses_beta(rule)) {
    const Tensor& Bt = c.in(5);
    TESSERA_CHECK(Bt.rank() == 3 && Bt.dim(0) == B && Bt.dim(1) == T && (Bt.dim(2) == Hkv || Bt.dim(2) == 1),
                  n.describe(), ": beta must be [", B, ", ", T, ", ", Hkv, "] or [", B, ", ", T, ", 1], got [",
                  dims_to_string(Bt.dims()), "]");
    beta = float_values(Bt, what);
    beta_width = Bt.dim(2);
  }
  float scale_attr = c.node.has_attr("scale") ? op_attrs(c).f("scale") : 0.0f;  // 0: 1/sqrt(dk)
  const double scale = scale_attr != 0.0f ? static_cast<double>(scale_attr) : 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<double> out(static_cast<size_t>(B * T * Hq * dv), 0.0), retrieved(static_cast<size_t>(dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t bt = b * T + t;
      for (int64_t hk = 0; hk < Hkv; ++hk) {
        double* s = &S[static_cast<size_t>((b * Hkv + hk) * dk * dv)];
        const double* kt = &k[static_cast<size_t>((bt * Hkv + hk) * dk)];
        const double* vt = &v[static_cast<size_t>((bt * Hkv + hk) * dv)];
        if (uses_decay(rule))
          for (int64_t i = 0; i < dk; ++i) {
            double gi = g_width == Hkv ? g[static_cast<size_t>(bt * Hkv + hk)]
                                       : g[static_cast<size_t>((bt * Hkv + hk) * dk + i)];
            double e = std::exp(gi);
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] *= e;
          }
        if (uses_beta(rule)) {
          double bb = beta[static_cast<size_t>(bt * beta_width + (beta_width == 1 ? 0 : hk))];
          for (int64_t j = 0; j < dv; ++j) {
            double r = 0;
            for (int64_t i = 0; i < dk; ++i) r += s[i * dv + j] * kt[i];
            retrieved[static_cast<size_t>(j)] = bb * (vt[j] - r);
          }
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kt[i] * retrieved[static_cast<size_t>(j)];
        } else {
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kt[i] * vt[j];
        }
        for (int64_t gq = 0; gq < G; ++gq) {
          const int64_t hq = hk * G + gq;
          const double* qt = &q[static_cast<size_t>((bt * Hq + hq) * dk)];
          double* o = &out[static_cast<size_t>((bt * Hq + hq) * dv)];
          for (int64_t j = 0; j < dv; ++j) {
            double acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qt[i] * s[i * dv + j];
            o[j] = scale * acc;
          }
        }
      }
    }
  return {float_tensor(Q.dtype(), {B, T, Hq * dv}, out, what), float_tensor(Q.dtype(), {B, Hkv, dk, dv}, S, what)};
}

}  // namespace

void register_linear_attention_ops(OpRegistry& r) {
  r.add({.name = "LinearAttention", .min_opset = 27, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_linear_attention, .reference = run_linear_attention,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           // Per step and KV head: the state update (~4 dk*dv with the delta
           // read-back, 2 dk*dv otherwise); per query head: the 2 dk*dv read.
           if (outs.size() < 2 || ins.size() < 3 || !ins[0]) return 0.0;
           const double B = static_cast<double>(ins[0]->dims[0]), T = static_cast<double>(ins[0]->dims[1]);
           const double Hq = static_cast<double>(OpAttrs(n, kAnyOpset).i("q_num_heads"));
           const double Hkv = static_cast<double>(outs[1].dims[1]), dk = static_cast<double>(outs[1].dims[2]),
                        dv = static_cast<double>(outs[1].dims[3]);
           const double upd = uses_beta(update_rule(OpAttrs(n, kAnyOpset))) ? 4.0 : 2.0;
           return B * T * (Hkv * upd * dk * dv + Hq * 2.0 * dk * dv);
         },
         .attributes = {int_attr("kv_num_heads").required(), int_attr("q_num_heads").required(), float_attr("scale"),
                        string_attr("update_rule", "gated_delta")}});
}

}  // namespace tessera
