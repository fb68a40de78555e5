// Local and statistical normalizations: LRN (across channels),
// MeanVarianceNormalization (over `axes`) and LpNormalization (along `axis`).
#include <cmath>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

void infer_float_same(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  c.out(0) = x;
}

std::vector<Tensor> run_lrn(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()) && x.rank() >= 2, c.node.describe(), ": X must be a float tensor of rank >= 2");
  const int64_t size = op_attrs(c).i("size");
  TESSERA_CHECK(size > 0, c.node.describe(), ": size must be positive");
  const double alpha = op_attrs(c).f("alpha"), beta = op_attrs(c).f("beta"),
               bias = op_attrs(c).f("bias");
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t plane = N * C == 0 ? 0 : x.numel() / (N * C);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<double> xv = nn_to_doubles(x), y(xv.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < plane; ++i) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, ch - before); j <= std::min(C - 1, ch + after); ++j) {
          double v = xv[static_cast<size_t>((n * C + j) * plane + i)];
          sq += v * v;
        }
        const size_t e = static_cast<size_t>((n * C + ch) * plane + i);
        y[e] = xv[e] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
  return {nn_from_doubles(x.dtype(), x.dims(), y)};
}

// Index of each element's reduction group when the dims in `axes` are reduced.
std::vector<int64_t> group_of(const Dims& d, const std::vector<bool>& reduced, int64_t& groups) {
  Dims kept(d.size());
  for (size_t i = 0; i < d.size(); ++i) kept[i] = reduced[i] ? 1 : d[i];
  const Dims ks = strides_of(kept), ds = strides_of(d);
  groups = numel_of(kept);
  std::vector<int64_t> g(static_cast<size_t>(numel_of(d)));
  for (size_t e = 0; e < g.size(); ++e) {
    int64_t rem = static_cast<int64_t>(e), idx = 0;
    for (size_t k = 0; k < d.size(); ++k) {
      int64_t q = rem / ds[k];
      rem -= q * ds[k];
      if (!reduced[k]) idx += q * ks[k];
    }
    g[e] = idx;
  }
  return g;
}

std::vector<Tensor> run_mvn(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": needs a float input");
  std::vector<int64_t> axes = op_attrs(c).ints("axes");
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(c.node, a, x.rank()))] = true;
  int64_t groups = 0;
  std::vector<int64_t> g = group_of(x.dims(), reduced, groups);
  std::vector<double> xv = nn_to_doubles(x);
  std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0),
      cnt(static_cast<size_t>(groups), 0.0);
  for (size_t e = 0; e < xv.size(); ++e) {
    const size_t k = static_cast<size_t>(g[e]);
    sum[k] += xv[e];
    sq[k] += xv[e] * xv[e];
    cnt[k] += 1;
  }
  std::vector<double> y(xv.size());
  for (size_t e = 0; e < xv.size(); ++e) {
    const size_t k = static_cast<size_t>(g[e]);
    const double mean = sum[k] / cnt[k];
    const double var = std::max(0.0, sq[k] / cnt[k] - mean * mean);
    y[e] = (xv[e] - mean) / (std::sqrt(var) + 1e-9);
  }
  return {nn_from_doubles(x.dtype(), x.dims(), y)};
}

std::vector<Tensor> run_lp_norm(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": needs a float input");
  const int64_t p = op_attrs(c).i("p");
  TESSERA_CHECK(p == 1 || p == 2, c.node.describe(), ": p must be 1 or 2, got ", p);
  const int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  int64_t len = x.rank() == 0 ? 1 : x.dim(axis), inner = 1;
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  std::vector<double> xv = nn_to_doubles(x), y(xv.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double norm = 0;
      for (int64_t j = 0; j < len; ++j) {
        double v = xv[static_cast<size_t>((o * len + j) * inner + in)];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t j = 0; j < len; ++j) {
        const size_t e = static_cast<size_t>((o * len + j) * inner + in);
        y[e] = norm == 0 ? 0.0 : xv[e] / norm;  // an all-zero vector stays zero
      }
    }
  return {nn_from_doubles(x.dtype(), x.dims(), y)};
}

}  // namespace

void register_nn_lrn_ops(OpRegistry& r) {
  r.add({.name = "LRN", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_float_same, .reference = run_lrn,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return prod_dims(ins[0]->dims) * (2.0 * static_cast<double>(OpAttrs(n, kAnyOpset).i("size")) + 4.0);
         },
         .attributes = {float_attr("alpha", 1e-4f), float_attr("beta", 0.75f), float_attr("bias", 1.0f),
                        int_attr("size").required()}});
  r.add({.name = "MeanVarianceNormalization", .min_opset = 9, .mapping = MappingType::ManyToMany,
         .linear_inputs = {}, .infer = infer_float_same, .reference = run_mvn,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return 6.0 * prod_dims(ins[0]->dims);
         },
         .attributes = {ints_attr("axes", {0, 2, 3})}});
  r.add({.name = "LpNormalization", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_float_same, .reference = run_lp_norm,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return 3.0 * prod_dims(ins[0]->dims);
         },
         .attributes = {int_attr("axis", -1), int_attr("p", 2)}});
}

}  // namespace tessera
