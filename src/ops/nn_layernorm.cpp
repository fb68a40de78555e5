// Normalization over the trailing dims from `axis`: LayerNormalization (with
// optional Mean / InvStdDev outputs in the stash type) and RMSNormalization.
// Statistics are computed in double.
#include <cmath>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

DType stash_dtype(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  const int64_t s = attrs.i("stash_type");
  TESSERA_CHECK(dtype_supported(static_cast<int32_t>(s)) && is_float(static_cast<DType>(s)), n.describe(),
                ": stash_type ", s, " is not a float type");
  return static_cast<DType>(s);
}

// Dims of the per-row statistics: dims[:axis] followed by ones.
Dims stat_dims(const Dims& d, int64_t axis) {
  Dims s = d;
  for (size_t i = static_cast<size_t>(axis); i < s.size(); ++i) s[i] = 1;
  return s;
}

void check_param(const Node& n, const TensorType* p, const TensorType& x, const char* what) {
  if (!p) return;
  TESSERA_CHECK(p->dtype == x.dtype, n.describe(), ": ", what, " must have X's element type ", dtype_name(x.dtype),
                ", got ", dtype_name(p->dtype));
  TESSERA_CHECK(p->rank() <= x.rank(), n.describe(), ": ", what, " of shape ", p->to_string(),
                " cannot be broadcast to X ", x.to_string());
  for (size_t i = 0; i < p->dims.size(); ++i) {
    int64_t pd = p->dims[i], xd = x.dims[x.dims.size() - p->dims.size() + i];
    TESSERA_CHECK(pd == 1 || pd < 0 || xd < 0 || pd == xd, n.describe(), ": ", what, " of shape ", p->to_string(),
                  " cannot be broadcast to X ", x.to_string());
  }
}

void infer_norm(InferContext& c, bool layer) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  const int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  check_param(c.node, &c.in(1), x, "scale");
  if (layer && c.has_input(2)) check_param(c.node, &c.in(2), x, "bias");
  c.out(0) = x;
  const DType st = stash_dtype(op_attrs(c));
  for (int i = 1; i < c.num_outputs() && layer; ++i) c.out(i) = TensorType{st, stat_dims(x.dims, axis)};
}

std::vector<Tensor> run_norm(const KernelContext& c, bool layer) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype()));
  const int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  const double eps = op_attrs(c).f("epsilon");
  const DType st = stash_dtype(op_attrs(c));
  TensorType xt{x.dtype(), x.dims()};
  TensorType st_scale{c.in(1).dtype(), c.in(1).dims()};
  check_param(c.node, &st_scale, xt, "scale");
  const Tensor* bias = layer && c.has_input(2) ? &c.in(2) : nullptr;
  if (bias) {
    TensorType bt{bias->dtype(), bias->dims()};
    check_param(c.node, &bt, xt, "bias");
  }
  int64_t inner = 1;
  for (int64_t i = axis; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t outer = inner == 0 ? 0 : x.numel() / inner;
  std::vector<double> xv = nn_to_doubles(x), sv = nn_to_doubles(c.in(1));
  std::vector<double> bv = bias ? nn_to_doubles(*bias) : std::vector<double>{};
  BroadcastIndexer is(c.in(1).dims(), x.dims());
  BroadcastIndexer ib(bias ? bias->dims() : Dims{}, x.dims());
  std::vector<double> y(xv.size()), means(static_cast<size_t>(outer)), invs(static_cast<size_t>(outer));
  for (int64_t r = 0; r < outer; ++r) {
    const size_t base = static_cast<size_t>(r * inner);
    double mean = 0, var = 0;
    if (layer) {
      for (int64_t i = 0; i < inner; ++i) mean += xv[base + static_cast<size_t>(i)];
      mean /= static_cast<double>(inner);
    }
    for (int64_t i = 0; i < inner; ++i) {
      double d = xv[base + static_cast<size_t>(i)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + eps);
    means[static_cast<size_t>(r)] = mean;
    invs[static_cast<size_t>(r)] = inv;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t e = r * inner + i;
      double v = (xv[static_cast<size_t>(e)] - mean) * inv * sv[static_cast<size_t>(is(e))];
      if (bias) v += bv[static_cast<size_t>(ib(e))];
      y[static_cast<size_t>(e)] = v;
    }
  }
  std::vector<Tensor> out{nn_from_doubles(x.dtype(), x.dims(), y)};
  if (layer && c.num_outputs() > 1) out.push_back(nn_from_doubles(st, stat_dims(x.dims(), axis), means));
  if (layer && c.num_outputs() > 2) out.push_back(nn_from_doubles(st, stat_dims(x.dims(), axis), invs));
  return out;
}

}  // namespace

void register_nn_layernorm_ops(OpRegistry& r) {
  auto flops = [](double per) {
    return [per](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
      return per * prod_dims(ins[0]->dims);
    };
  };
  r.add({.name = "LayerNormalization", .min_opset = 17, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = [](InferContext& c) { infer_norm(c, true); },
         .reference = [](const KernelContext& c) { return run_norm(c, true); }, .flops = flops(7.0),
         .attributes = {int_attr("axis", -1), float_attr("epsilon", 1e-5f), int_attr("stash_type", 1)}});
  r.add({.name = "RMSNormalization", .min_opset = 23, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = [](InferContext& c) { infer_norm(c, false); },
         .reference = [](const KernelContext& c) { return run_norm(c, false); }, .flops = flops(4.0),
         .attributes = {int_attr("axis", -1), float_attr("epsilon", 1e-5f), int_attr("stash_type", 1)}});
}

}  // namespace tessera
