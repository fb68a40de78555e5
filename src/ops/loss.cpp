// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12+).
// Input [N, C, d1..dk], target [N, d1..dk]; per-element loss
// -w[t] * input[n, t, d] (0 where t == ignore_index); reduction none / sum /
// mean, where mean divides by the summed weights of the non-ignored targets
// (by their count when there are no weights). SoftmaxCrossEntropyLoss first
// takes log_softmax over the class axis and can output it (log_prob).
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"

namespace tessera {
namespace {

std::string reduction_of(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string r = attrs.s("reduction");
  TESSERA_CHECK(r == "none" || r == "sum" || r == "mean", n.describe(), ": unsupported reduction '", r, "'");
  return r;
}

void check_loss_shapes(const Node& n, const Dims& x, const Dims& t, const Dims* w) {
  TESSERA_CHECK(x.size() >= 2, n.describe(), ": input must have rank >= 2 ([N, C, ...]), got rank ", x.size());
  TESSERA_CHECK(t.size() + 1 == x.size(), n.describe(), ": target rank must be input rank - 1, got ", t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    int64_t xd = x[i == 0 ? 0 : i + 1];
    TESSERA_CHECK(xd < 0 || t[i] < 0 || xd == t[i], n.describe(), ": target shape ", dims_to_string(t),
                  " does not match input shape ", dims_to_string(x));
  }
  if (w) {
    TESSERA_CHECK(w->size() == 1, n.describe(), ": weight must be 1-D");
    TESSERA_CHECK((*w)[0] < 0 || x[1] < 0 || (*w)[0] == x[1], n.describe(), ": weight has ", (*w)[0],
                  " values for ", x[1], " classes");
  }
}

void infer_loss(InferContext& c, bool sce) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  const TensorType& t = c.in(1);
  TESSERA_CHECK(is_float(x.dtype), n.describe(), ": input must be a float tensor");
  TESSERA_CHECK(t.dtype == DType::I32 || t.dtype == DType::I64, n.describe(), ": target must be int32 or int64");
  if (c.has_input(2))
    TESSERA_CHECK(c.in(2).dtype == x.dtype, n.describe(), ": weight must have the input's dtype");
  check_loss_shapes(n, x.dims, t.dims, c.has_input(2) ? &c.in(2).dims : nullptr);
  std::string red = reduction_of(op_attrs(c));
  c.out(0) = TensorType{x.dtype, red == "none" ? t.dims : Dims{}};
  if (sce) c.out(1) = x;
}

// The loss of `lp` ([N, C, D] flattened, already log-probabilities for SCE).
Tensor nll(const OpAttrs& attrs, DType dt, const Dims& xdims, const std::vector<double>& lp, const Tensor& target,
           const Tensor* weight) {
  const Node& n = attrs.node();
  const int64_t N = xdims[0], C = xdims[1];
  int64_t Dn = 1;
  for (size_t i = 2; i < xdims.size(); ++i) Dn *= xdims[i];
  std::vector<int64_t> tgt = target.to_int_vector();
  std::vector<double> w;
  if (weight) w = float_values(*weight, n.op_type.c_str());
  const bool has_ii = n.has_attr("ignore_index");
  const int64_t ii = has_ii ? attrs.i("ignore_index") : 0;
  std::vector<double> loss(static_cast<size_t>(N * Dn));
  double wsum = 0, lsum = 0;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t d = 0; d < Dn; ++d) {
      size_t e = static_cast<size_t>(b * Dn + d);
      int64_t t = tgt[e];
      if (has_ii && t == ii) continue;
      TESSERA_CHECK(t >= 0 && t < C, n.describe(), ": target ", t, " is outside [0, ", C, ")");
      double wt = weight ? w[static_cast<size_t>(t)] : 1.0;
      loss[e] = -wt * lp[static_cast<size_t>((b * C + t) * Dn + d)];
      wsum += wt;
      lsum += loss[e];
    }
  std::string red = reduction_of(attrs);
  if (red == "none") return float_tensor(dt, target.dims(), loss, n.op_type.c_str());
  double v = red == "sum" ? lsum : lsum / wsum;  // 0/0 (all ignored) is NaN, as in the reference
  return float_tensor(dt, {}, {v}, n.op_type.c_str());
}

std::vector<Tensor> run_loss(const KernelContext& c, bool sce) {
  const Node& n = c.node;
  const Tensor& x = c.in(0);
  const Tensor& t = c.in(1);
  const Tensor* w = c.has_input(2) ? c.inputs[2] : nullptr;
  check_loss_shapes(n, x.dims(), t.dims(), w ? &w->dims() : nullptr);
  TESSERA_CHECK(t.dtype() == DType::I32 || t.dtype() == DType::I64, n.describe(), ": target must be int32 or int64");
  std::vector<double> v = float_values(x, n.op_type.c_str());
  if (sce) {
    // log_softmax over axis 1.
    const int64_t N = x.dim(0), C = x.dim(1);
    const int64_t Dn = C == 0 ? 0 : x.numel() / (N * C);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t d = 0; d < Dn; ++d) {
        auto at = [&](int64_t k) -> double& { return v[static_cast<size_t>((b * C + k) * Dn + d)]; };
        double mx = -INFINITY;
        for (int64_t k = 0; k < C; ++k) mx = std::max(mx, at(k));
        double s = 0;
        for (int64_t k = 0; k < C; ++k) s += std::exp(at(k) - mx);
        double ls = std::log(s);
        for (int64_t k = 0; k < C; ++k) at(k) = at(k) - mx - ls;
      }
  }
  std::vector<Tensor> out = {nll(op_attrs(c), x.dtype(), x.dims(), v, t, w)};
  if (sce) out.push_back(float_tensor(x.dtype(), x.dims(), v, n.op_type.c_str()));
  return out;
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r.add({.name = "NegativeLogLikelihoodLoss", .min_opset = 12, .mapping = MappingType::ManyToMany,
         .linear_inputs = {0}, .infer = [](InferContext& c) { infer_loss(c, false); },
         .reference = [](const KernelContext& c) { return run_loss(c, false); },
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return ins[1] ? 2.0 * static_cast<double>(numel_of(ins[1]->dims)) : 0.0;
         },
         .attributes = {int_attr("ignore_index"), string_attr("reduction", "mean")}});
  r.add({.name = "SoftmaxCrossEntropyLoss", .min_opset = 12, .mapping = MappingType::ManyToMany,
         .linear_inputs = {}, .infer = [](InferContext& c) { infer_loss(c, true); },
         .reference = [](const KernelContext& c) { return run_loss(c, true); },
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return ins[0] ? 4.0 * static_cast<double>(numel_of(ins[0]->dims)) : 0.0;
         },
         .attributes = {int_attr("ignore_index"), string_attr("reduction", "mean")}});
}

}  // namespace tessera
