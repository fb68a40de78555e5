// Attention (opset 23, plus opset 24's nonpad_kv_seqlen) and RotaryEmbedding
// (opset 23). Attention follows the ONNX reference: 3-D inputs are split into
// heads ([B, S, H*D] -> [B, H, S, D]), past_key/past_value are concatenated in
// front of K/V (the present outputs), KV heads are repeated for grouped-query
// attention (query head h reads KV head h / (Hq / Hkv)), softcap is applied to
// the scaled QK^T before the additive mask, the causal mask is bottom-right
// aligned (query i sees keys j <= i + offset, offset = past length), and a
// fully masked row yields zero probabilities.
#include <algorithm>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"

namespace tessera {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Shapes of one Attention call after normalising 3-D inputs to 4-D.
struct AttnDims {
  int64_t B = -1, Hq = -1, Hkv = -1, Sq = -1, Skv = -1, P = 0, D = -1, Dv = -1;
  bool three_d = false;
  int64_t total() const { return Skv < 0 || P < 0 ? -1 : P + Skv; }
};

int64_t div_heads(const Node& n, int64_t hidden, int64_t heads, const char* what) {
  if (hidden < 0) return -1;
  TESSERA_CHECK(heads > 0 && hidden % heads == 0, n.describe(), ": ", what, " hidden size ", hidden,
                " is not divisible by the number of heads ", heads);
  return hidden / heads;
}

AttnDims attn_dims(const OpAttrs& attrs, const Dims& q, const Dims& k, const Dims& v, const Dims* past_key) {
  const Node& n = attrs.node();
  TESSERA_CHECK(q.size() == k.size() && q.size() == v.size() && (q.size() == 3 || q.size() == 4), n.describe(),
                ": Q, K and V must all be 3-D or all be 4-D");
  AttnDims a;
  a.B = q[0];
  if (q.size() == 4) {
    a.Hq = q[1];
    a.Sq = q[2];
    a.D = q[3];
    a.Hkv = k[1];
    a.Skv = k[2];
    a.Dv = v[3];
    TESSERA_CHECK(k[3] < 0 || a.D < 0 || k[3] == a.D, n.describe(), ": Q head size ", a.D,
                  " differs from K head size ", k[3]);
    TESSERA_CHECK(v[1] < 0 || a.Hkv < 0 || v[1] == a.Hkv, n.describe(), ": K has ", a.Hkv, " heads but V has ", v[1]);
    TESSERA_CHECK(v[2] < 0 || a.Skv < 0 || v[2] == a.Skv, n.describe(), ": K and V sequence lengths differ");
  } else {
    a.three_d = true;
    TESSERA_CHECK(n.has_attr("q_num_heads") && n.has_attr("kv_num_heads"), n.describe(),
                  ": 3-D inputs need the q_num_heads and kv_num_heads attributes");
    a.Hq = attrs.i("q_num_heads");
    a.Hkv = attrs.i("kv_num_heads");
    a.Sq = q[1];
    a.Skv = k[1];
    a.D = div_heads(n, q[2], a.Hq, "Q");
    int64_t dk = div_heads(n, k[2], a.Hkv, "K");
    a.Dv = div_heads(n, v[2], a.Hkv, "V");
    TESSERA_CHECK(dk < 0 || a.D < 0 || dk == a.D, n.describe(), ": Q head size ", a.D, " differs from K head size ", dk);
    TESSERA_CHECK(v[1] < 0 || a.Skv < 0 || v[1] == a.Skv, n.describe(), ": K and V sequence lengths differ");
  }
  for (const Dims* d : {&k, &v})
    TESSERA_CHECK((*d)[0] < 0 || a.B < 0 || (*d)[0] == a.B, n.describe(), ": Q, K and V batch sizes differ");
  if (a.Hq > 0 && a.Hkv > 0)
    TESSERA_CHECK(a.Hq % a.Hkv == 0, n.describe(), ": q_num_heads ", a.Hq, " is not a multiple of kv_num_heads ",
                  a.Hkv);
  if (past_key) {
    TESSERA_CHECK(past_key->size() == 4, n.describe(), ": past_key must be 4-D");
    a.P = (*past_key)[2];
  }
  return a;
}

void infer_attention(InferContext& c) {
  const Node& n = c.node;
  const TensorType& q = c.in(0);
  TESSERA_CHECK(is_float(q.dtype), n.describe(), ": Q must be a float tensor, got ", dtype_name(q.dtype));
  check_same_dtype(n, {&q, &c.in(1), &c.in(2)});
  AttnDims a = attn_dims(op_attrs(c), q.dims, c.in(1).dims, c.in(2).dims, c.has_input(4) ? &c.in(4).dims : nullptr);
  if (c.has_input(3))
    TESSERA_CHECK(c.in(3).dtype == DType::Bool || c.in(3).dtype == q.dtype, n.describe(),
                  ": attn_mask must be bool or ", dtype_name(q.dtype));
  TensorType y{q.dtype, {}};
  if (a.three_d)
    y.dims = {a.B, a.Sq, known_product({a.Hq, a.Dv})};
  else
    y.dims = {a.B, a.Hq, a.Sq, a.Dv};
  c.out(0) = y;
  c.out(1) = TensorType{q.dtype, {a.B, a.Hkv, a.total(), a.D}};
  c.out(2) = TensorType{q.dtype, {a.B, a.Hkv, a.total(), a.Dv}};
  c.out(3) = TensorType{q.dtype, {a.B, a.Hq, a.Sq, a.total()}};
}

// Element (b, h, s, d) of a Q/K/V input in either layout, as a flat index.
int64_t qkv_index(const AttnDims& a, bool three_d, int64_t H, int64_t S, int64_t D, int64_t b, int64_t h, int64_t s,
                  int64_t d) {
  if (three_d) return ((b * S + s) * H + h) * D + d;
  return ((b * H + h) * S + s) * D + d;
}

std::vector<Tensor> run_attention(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& Q = c.in(0);
  const Tensor& K = c.in(1);
  const Tensor& V = c.in(2);
  TESSERA_CHECK(K.dtype() == Q.dtype() && V.dtype() == Q.dtype(), n.describe(), ": Q, K and V must share a dtype");
  const Tensor* mask = c.has_input(3) ? c.inputs[3] : nullptr;
  const Tensor* past_k = c.has_input(4) ? c.inputs[4] : nullptr;
  const Tensor* past_v = c.has_input(5) ? c.inputs[5] : nullptr;
  const Tensor* nonpad = c.has_input(6) ? c.inputs[6] : nullptr;
  TESSERA_CHECK((past_k == nullptr) == (past_v == nullptr), n.describe(),
                ": past_key and past_value must be given together");
  AttnDims a = attn_dims(op_attrs(c), Q.dims(), K.dims(), V.dims(), past_k ? &past_k->dims() : nullptr);
  const int64_t T = a.total();
  if (past_k) {
    const Dims& pk = past_k->dims();
    const Dims& pv = past_v->dims();
    TESSERA_CHECK(pk == Dims({a.B, a.Hkv, a.P, a.D}) && pv.size() == 4 && pv[0] == a.B && pv[1] == a.Hkv &&
                      pv[2] == a.P && pv[3] == a.Dv,
                  n.describe(), ": past_key/past_value shapes ", dims_to_string(pk), " / ", dims_to_string(pv),
                  " do not match K/V");
    TESSERA_CHECK(past_k->dtype() == Q.dtype() && past_v->dtype() == Q.dtype(), n.describe(),
                  ": past_key/past_value must have Q's dtype");
  }
  const char* what = "Attention";
  std::vector<double> q = float_values(Q, what), kin = float_values(K, what), vin = float_values(V, what);
  // present_key / present_value: [B, Hkv, T, D] = concat(past, current).
  std::vector<double> pk(static_cast<size_t>(a.B * a.Hkv * T * a.D)), pv(static_cast<size_t>(a.B * a.Hkv * T * a.Dv));
  {
    std::vector<double> pastk, pastv;
    if (past_k) {
      pastk = float_values(*past_k, what);
      pastv = float_values(*past_v, what);
    }
    for (int64_t b = 0; b < a.B; ++b)
      for (int64_t h = 0; h < a.Hkv; ++h)
        for (int64_t t = 0; t < T; ++t) {
          bool past = t < a.P;
          for (int64_t d = 0; d < a.D; ++d)
            pk[static_cast<size_t>(((b * a.Hkv + h) * T + t) * a.D + d)] =
                past ? pastk[static_cast<size_t>(((b * a.Hkv + h) * a.P + t) * a.D + d)]
                     : kin[static_cast<size_t>(qkv_index(a, a.three_d, a.Hkv, a.Skv, a.D, b, h, t - a.P, d))];
          for (int64_t d = 0; d < a.Dv; ++d)
            pv[static_cast<size_t>(((b * a.Hkv + h) * T + t) * a.Dv + d)] =
                past ? pastv[static_cast<size_t>(((b * a.Hkv + h) * a.P + t) * a.Dv + d)]
                     : vin[static_cast<size_t>(qkv_index(a, a.three_d, a.Hkv, a.Skv, a.Dv, b, h, t - a.P, d))];
        }
  }
  // The mask, right-aligned against [B, Hq, Sq, T]; a short last dim is padded with -inf.
  Dims md(4, 1);
  std::vector<double> mvals;
  if (mask) {
    TESSERA_CHECK(mask->rank() >= 1 && mask->rank() <= 4, n.describe(), ": attn_mask must have rank 1 to 4");
    TESSERA_CHECK(mask->dtype() == DType::Bool || mask->dtype() == Q.dtype(), n.describe(),
                  ": attn_mask must be bool or Q's dtype");
    for (int64_t i = 0; i < mask->rank(); ++i) md[static_cast<size_t>(4 - mask->rank() + i)] = mask->dim(i);
    const Dims full = {a.B, a.Hq, a.Sq, T};
    for (size_t i = 0; i < 3; ++i)
      TESSERA_CHECK(md[i] == 1 || md[i] == full[i], n.describe(), ": attn_mask shape ", dims_to_string(mask->dims()),
                    " does not broadcast to ", dims_to_string(full));
    TESSERA_CHECK(md[3] <= T, n.describe(), ": attn_mask last dim ", md[3], " exceeds the total sequence length ", T);
    if (mask->dtype() == DType::Bool) {
      const bool* p = mask->data<bool>();
      for (int64_t i = 0; i < mask->numel(); ++i) mvals.push_back(p[i] ? 0.0 : kNegInf);
    } else {
      mvals = float_values(*mask, what);
    }
  }
  std::vector<int64_t> nonpad_len;
  if (nonpad) {
    nonpad_len = nonpad->to_int_vector();
    TESSERA_CHECK(static_cast<int64_t>(nonpad_len.size()) == a.B, n.describe(), ": nonpad_kv_seqlen has ",
                  nonpad_len.size(), " values for batch ", a.B);
  }
  const bool causal = op_attrs(c).i("is_causal") != 0;
  const double scale = n.has_attr("scale") ? op_attrs(c).f("scale") : 1.0 / std::sqrt(static_cast<double>(a.D));
  const double softcap = op_attrs(c).f("softcap");
  const int64_t mode = op_attrs(c).i("qk_matmul_output_mode");
  TESSERA_CHECK(mode >= 0 && mode <= 3, n.describe(), ": qk_matmul_output_mode must be 0..3, got ", mode);
  TESSERA_CHECK(a.Hq > 0 && a.Hkv > 0 && a.Hq % a.Hkv == 0, n.describe(), ": ", a.Hq,
                " query heads cannot be grouped over ", a.Hkv, " key/value heads");
  const int64_t group = a.Hq / a.Hkv;

  std::vector<double> y(static_cast<size_t>(a.B * a.Hq * a.Sq * a.Dv)), qk(static_cast<size_t>(a.B * a.Hq * a.Sq * T));
  std::vector<double> raw(static_cast<size_t>(T)), capped(static_cast<size_t>(T)), biased(static_cast<size_t>(T)),
      prob(static_cast<size_t>(T));
  for (int64_t b = 0; b < a.B; ++b) {
    int64_t offset = a.P;
    if (!past_k && nonpad) offset = nonpad_len[static_cast<size_t>(b)] - a.Sq;
    for (int64_t h = 0; h < a.Hq; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < a.Sq; ++i) {
        double mx = kNegInf;
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < a.D; ++d)
            s += q[static_cast<size_t>(qkv_index(a, a.three_d, a.Hq, a.Sq, a.D, b, h, i, d))] *
                 pk[static_cast<size_t>(((b * a.Hkv + kh) * T + j) * a.D + d)];
          s *= scale;
          size_t jj = static_cast<size_t>(j);
          raw[jj] = s;
          capped[jj] = softcap > 0 ? softcap * std::tanh(s / softcap) : s;
          double bias = 0;
          if (mask) {
            if (j >= md[3]) {
              bias += kNegInf;
            } else {
              int64_t mi = (((md[0] == 1 ? 0 : b) * md[1] + (md[1] == 1 ? 0 : h)) * md[2] + (md[2] == 1 ? 0 : i)) *
                               md[3] + j;
              bias += mvals[static_cast<size_t>(mi)];
            }
          }
          if (causal && j > i + offset) bias += kNegInf;
          if (nonpad && j >= nonpad_len[static_cast<size_t>(b)]) bias += kNegInf;
          biased[jj] = capped[jj] + bias;
          mx = std::max(mx, biased[jj]);
        }
        // Softmax; a row with every key masked gives all-zero probabilities.
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          size_t jj = static_cast<size_t>(j);
          prob[jj] = mx == kNegInf ? 0.0 : std::exp(biased[jj] - mx);
          sum += prob[jj];
        }
        if (sum > 0)
          for (double& p : prob) p /= sum;
        // qk_matmul_output: 0 scaled QK^T, 1 after softcap, 2 after the mask, 3 probabilities.
        const std::vector<double>& shown = mode == 0 ? raw : mode == 1 ? capped : mode == 2 ? biased : prob;
        std::copy(shown.begin(), shown.end(), qk.begin() + ((b * a.Hq + h) * a.Sq + i) * T);
        for (int64_t d = 0; d < a.Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            acc += prob[static_cast<size_t>(j)] * pv[static_cast<size_t>(((b * a.Hkv + kh) * T + j) * a.Dv + d)];
          int64_t yi = a.three_d ? ((b * a.Sq + i) * a.Hq + h) * a.Dv + d : ((b * a.Hq + h) * a.Sq + i) * a.Dv + d;
          y[static_cast<size_t>(yi)] = acc;
        }
      }
    }
  }
  DType dt = Q.dtype();
  Dims ydims = a.three_d ? Dims{a.B, a.Sq, a.Hq * a.Dv} : Dims{a.B, a.Hq, a.Sq, a.Dv};
  return {float_tensor(dt, ydims, y, what), float_tensor(dt, {a.B, a.Hkv, T, a.D}, pk, what),
          float_tensor(dt, {a.B, a.Hkv, T, a.Dv}, pv, what), float_tensor(dt, {a.B, a.Hq, a.Sq, T}, qk, what)};
}

double attention_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
  if (outs.size() < 4 || !ins[0]) return 0;
  const Dims& qk = outs[3].dims;  // [B, Hq, Sq, T]
  const Dims& pv = outs[2].dims;  // [B, Hkv, T, Dv]
  const Dims& pk = outs[1].dims;
  double scores = static_cast<double>(numel_of(qk));
  return scores * (2.0 * static_cast<double>(pk[3]) + 2.0 * static_cast<double>(pv[3]) + 5.0);
}

// ---- RotaryEmbedding ---------------------------------------------------------

void infer_rotary(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": X must be a float tensor");
  TESSERA_CHECK(x.rank() == 3 || x.rank() == 4, c.node.describe(), ": X must be 3-D or 4-D, got rank ", x.rank());
  check_same_dtype(c.node, {&x, &c.in(1), &c.in(2)});
  c.out(0) = x;
}

std::vector<Tensor> run_rotary(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& X = c.in(0);
  const Tensor& C = c.in(1);
  const Tensor& S = c.in(2);
  const Tensor* pos = c.has_input(3) ? c.inputs[3] : nullptr;
  TESSERA_CHECK(X.rank() == 3 || X.rank() == 4, n.describe(), ": X must be 3-D or 4-D");
  TESSERA_CHECK(C.dtype() == X.dtype() && S.dtype() == X.dtype(), n.describe(), ": caches must have X's dtype");
  TESSERA_CHECK(C.dims() == S.dims(), n.describe(), ": cos_cache and sin_cache shapes differ");
  const bool four = X.rank() == 4;
  const int64_t B = X.dim(0);
  int64_t H, Sq, D;
  if (four) {
    H = X.dim(1);
    Sq = X.dim(2);
    D = X.dim(3);
  } else {
    H = op_attrs(c).i("num_heads");
    TESSERA_CHECK(H > 0, n.describe(), ": 3-D input needs the num_heads attribute");
    Sq = X.dim(1);
    TESSERA_CHECK(X.dim(2) % H == 0, n.describe(), ": hidden size ", X.dim(2), " is not divisible by num_heads ", H);
    D = X.dim(2) / H;
  }
  int64_t rot = op_attrs(c).i("rotary_embedding_dim");
  if (rot == 0) rot = D;
  TESSERA_CHECK(rot > 0 && rot <= D && rot % 2 == 0, n.describe(), ": rotary_embedding_dim ", rot,
                " must be even and at most the head size ", D);
  const int64_t half = rot / 2;
  const bool interleaved = op_attrs(c).i("interleaved") != 0;
  std::vector<int64_t> ids;
  if (pos) {
    TESSERA_CHECK(pos->dims() == Dims({B, Sq}), n.describe(), ": position_ids must be [", B, ", ", Sq, "], got ",
                  dims_to_string(pos->dims()));
    TESSERA_CHECK(C.rank() == 2 && C.dim(1) >= half, n.describe(), ": with position_ids the caches must be ",
                  "[max_position, >= ", half, "], got ", dims_to_string(C.dims()));
    ids = pos->to_int_vector();
    for (int64_t p : ids)
      TESSERA_CHECK(p >= 0 && p < C.dim(0), n.describe(), ": position id ", p, " is outside the cache of ", C.dim(0));
  } else {
    TESSERA_CHECK(C.rank() == 3 && C.dim(0) == B && C.dim(1) == Sq && C.dim(2) >= half, n.describe(),
                  ": without position_ids the caches must be [", B, ", ", Sq, ", >= ", half, "], got ",
                  dims_to_string(C.dims()));
  }
  const int64_t cw = C.dim(-1);
  std::vector<double> x = float_values(X, "RotaryEmbedding"), cs = float_values(C, "RotaryEmbedding"),
                      sn = float_values(S, "RotaryEmbedding");
  std::vector<double> y = x;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < Sq; ++s) {
      int64_t row = pos ? ids[static_cast<size_t>(b * Sq + s)] : b * Sq + s;
      for (int64_t h = 0; h < H; ++h) {
        int64_t base = four ? ((b * H + h) * Sq + s) * D : (b * Sq + s) * H * D + h * D;
        for (int64_t k = 0; k < half; ++k) {
          double co = cs[static_cast<size_t>(row * cw + k)], si = sn[static_cast<size_t>(row * cw + k)];
          int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
          double x1 = x[static_cast<size_t>(base + i1)], x2 = x[static_cast<size_t>(base + i2)];
          y[static_cast<size_t>(base + i1)] = co * x1 - si * x2;
          y[static_cast<size_t>(base + i2)] = si * x1 + co * x2;
        }
      }
    }
  return {float_tensor(X.dtype(), X.dims(), y, "RotaryEmbedding")};
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  r.add({.name = "Attention", .min_opset = 23, .mapping = MappingType::ManyToMany, .linear_inputs = {2},
         .infer = infer_attention, .reference = run_attention, .flops = attention_flops,
         .attributes = {int_attr("is_causal", 0), int_attr("kv_num_heads", 0), int_attr("q_num_heads", 0),
                        int_attr("qk_matmul_output_mode", 0), float_attr("scale"), float_attr("softcap", 0.0f),
                        int_attr("softmax_precision")}});
  r.add({.name = "RotaryEmbedding", .min_opset = 23, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_rotary, .reference = run_rotary,
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>& outs) {
           return outs.empty() ? 0.0 : 3.0 * static_cast<double>(numel_of(outs[0].dims));
         },
         .attributes = {int_attr("interleaved", 0), int_attr("num_heads", 0), int_attr("rotary_embedding_dim", 0)}});
}

}  // namespace tessera
