// CausalConvWithState (opset 27): stateful causal depthwise 1-D convolution.
// Per batch b and channel c, seq = concat(past_state[b, c, :] (zeros when
// absent), input[b, c, :]) of length K - 1 + L; then
//   output[b, c, t] = act(bias[c] + sum_k weight[c, 0, k] * seq[t + k])
// and present_state[b, c, :] = the last K - 1 entries of seq. act is none or
// silu/swish (x * sigmoid(x)). Accumulates in double, rounds once.
#include <cmath>

#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

bool use_silu(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string a = attrs.s("activation");
  TESSERA_CHECK(a == "none" || a == "silu" || a == "swish", n.describe(),
                ": activation must be 'none', 'silu' or 'swish', got '", a, "'");
  return a != "none";
}

// Merges a known dim into `d` (-1 unknown); throws when two known dims differ.
void unify(const Node& n, int64_t& d, int64_t v, const char* what) {
  if (v < 0) return;
  TESSERA_CHECK(d < 0 || d == v, n.describe(), ": inconsistent ", what, " (", d, " vs ", v, ")");
  d = v;
}

void infer_causal_conv(InferContext& c) {
  const Node& n = c.node;
  use_silu(op_attrs(c));
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  TESSERA_CHECK(x.dtype == DType::Undefined || is_float(x.dtype), n.describe(), ": input must be a float tensor, got ",
                dtype_name(x.dtype));
  std::vector<const TensorType*> ts = {&x, &w};
  if (c.has_input(2)) ts.push_back(&c.in(2));
  if (c.has_input(3)) ts.push_back(&c.in(3));
  check_same_dtype(n, ts);
  int64_t B = -1, C = -1, L = -1, K = -1;
  if (x.rank_known) {
    TESSERA_CHECK(x.rank() == 3, n.describe(), ": input must be 3-D (batch, channels, length), got ", x.to_string());
    B = x.dims[0], C = x.dims[1], L = x.dims[2];
  }
  if (w.rank_known) {
    TESSERA_CHECK(w.rank() == 3, n.describe(), ": weight must be 3-D (channels, 1, k), got ", w.to_string());
    TESSERA_CHECK(w.dims[1] < 0 || w.dims[1] == 1, n.describe(), ": weight dimension 1 must be 1 (depthwise), got ",
                  w.dims[1]);
    unify(n, C, w.dims[0], "channel count");
    K = w.dims[2];
    TESSERA_CHECK(K != 0, n.describe(), ": the kernel size must be at least 1");
  }
  if (c.has_input(2) && c.in(2).rank_known) {
    TESSERA_CHECK(c.in(2).rank() == 1, n.describe(), ": bias must be 1-D, got ", c.in(2).to_string());
    unify(n, C, c.in(2).dims[0], "channel count");
  }
  int64_t S = K < 0 ? -1 : K - 1;
  if (c.has_input(3) && c.in(3).rank_known) {
    const TensorType& p = c.in(3);
    TESSERA_CHECK(p.rank() == 3, n.describe(), ": past_state must be 3-D (batch, channels, k - 1), got ",
                  p.to_string());
    unify(n, B, p.dims[0], "batch size");
    unify(n, C, p.dims[1], "channel count");
    unify(n, S, p.dims[2], "state length (k - 1)");
  }
  DType dt = x.dtype != DType::Undefined ? x.dtype : w.dtype;
  c.out(0) = {dt, {B, C, L}, true};
  if (c.num_outputs() > 1) c.out(1) = {dt, {B, C, S}, true};
}

std::vector<Tensor> run_causal_conv(const KernelContext& c) {
  const Node& n = c.node;
  const bool silu = use_silu(op_attrs(c));
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  TESSERA_CHECK(X.rank() == 3, n.describe(), ": input must be 3-D (batch, channels, length), got [",
                dims_to_string(X.dims()), "]");
  const int64_t B = X.dim(0), C = X.dim(1), L = X.dim(2);
  TESSERA_CHECK(W.rank() == 3 && W.dim(0) == C && W.dim(1) == 1 && W.dim(2) >= 1, n.describe(),
                ": weight must be [", C, ", 1, k] with k >= 1, got [", dims_to_string(W.dims()), "]");
  const int64_t K = W.dim(2), S = K - 1;
  for (int i = 1; i < 4; ++i)
    if (c.has_input(i))
      TESSERA_CHECK(c.in(i).dtype() == X.dtype(), n.describe(), ": input ", i, " is ",
                    dtype_name(c.in(i).dtype()), " but input 0 is ", dtype_name(X.dtype()));
  std::vector<double> x = float_values(X, "CausalConvWithState"), w = float_values(W, "CausalConvWithState");
  std::vector<double> bias(static_cast<size_t>(C), 0.0), past(static_cast<size_t>(B * C * S), 0.0);
  if (c.has_input(2)) {
    TESSERA_CHECK(c.in(2).dims() == Dims({C}), n.describe(), ": bias must be [", C, "], got [",
                  dims_to_string(c.in(2).dims()), "]");
    bias = float_values(c.in(2), "CausalConvWithState");
  }
  if (c.has_input(3)) {
    TESSERA_CHECK(c.in(3).dims() == Dims({B, C, S}), n.describe(), ": past_state must be [", B, ", ", C, ", ", S,
                  "], got [", dims_to_string(c.in(3).dims()), "]");
    past = float_values(c.in(3), "CausalConvWithState");
  }
  std::vector<double> y(static_cast<size_t>(B * C * L)), state(static_cast<size_t>(B * C * S));
  std::vector<double> seq(static_cast<size_t>(S + L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t ch = 0; ch < C; ++ch) {
      const int64_t bc = b * C + ch;
      for (int64_t i = 0; i < S; ++i) seq[static_cast<size_t>(i)] = past[static_cast<size_t>(bc * S + i)];
      for (int64_t t = 0; t < L; ++t) seq[static_cast<size_t>(S + t)] = x[static_cast<size_t>(bc * L + t)];
      for (int64_t t = 0; t < L; ++t) {
        double acc = bias[static_cast<size_t>(ch)];
        for (int64_t k = 0; k < K; ++k)
          acc += w[static_cast<size_t>(ch * K + k)] * seq[static_cast<size_t>(t + k)];
        if (silu) acc = acc / (1.0 + std::exp(-acc));
        y[static_cast<size_t>(bc * L + t)] = acc;
      }
      for (int64_t i = 0; i < S; ++i) state[static_cast<size_t>(bc * S + i)] = seq[static_cast<size_t>(L + i)];
    }
  return {float_tensor(X.dtype(), {B, C, L}, y, "CausalConvWithState"),
          float_tensor(X.dtype(), {B, C, S}, state, "CausalConvWithState")};
}

}  // namespace

void register_causal_conv_ops(OpRegistry& r) {
  r.add({.name = "CausalConvWithState", .min_opset = 27, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_causal_conv, .reference = run_causal_conv,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           // A multiply and an add per tap and output element.
           if (outs.empty() || ins.size() < 2 || !ins[1]) return 0.0;
           return 2.0 * static_cast<double>(numel_of(outs[0].dims)) * static_cast<double>(ins[1]->dims[2]);
         },
         .attributes = {string_attr("activation", "none")}});
}

}  // namespace tessera
