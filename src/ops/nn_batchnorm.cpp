// Per-channel normalizations: BatchNormalization (inference, and training
// mode with updated running statistics), InstanceNormalization and
// GroupNormalization. Statistics are computed in double.
#include <cmath>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {


void check_float(const Node& n, DType t) {
  TESSERA_CHECK(is_float(t), n.describe(), ": needs a float input, got ", dtype_name(t));
}

// ---------------------------------------------------------------- BatchNormalization

bool bn_training(const Node& n, int64_t opset, int num_outputs) {
  if (opset >= 14) return OpAttrs(n, opset).i("training_mode") != 0;
  if (opset <= 6 && n.has_attr("is_test")) return OpAttrs(n, opset).i("is_test") == 0 && num_outputs > 1;
  return num_outputs > 1;
}

void infer_bn(InferContext& c) {
  const TensorType& x = c.in(0);
  check_float(c.node, x.dtype);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2 (N, C, ...), got ", x.to_string());
  for (int i = 1; i <= 4; ++i) {
    const TensorType& p = c.in(i);
    check_float(c.node, p.dtype);
    if (p.rank() == 1 && p.dims[0] >= 0 && x.dims[1] >= 0)
      TESSERA_CHECK(p.dims[0] == x.dims[1], c.node.describe(), ": input ", i, " has ", p.dims[0], " values but X has ",
                    x.dims[1], " channels");
  }
  c.out(0) = x;
  // Running (or saved) statistics take the type of input_mean / input_var.
  for (int i = 1; i < c.num_outputs(); ++i) c.out(i) = c.in(i % 2 == 1 ? 3 : 4);
}

std::vector<Tensor> run_bn(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_float(c.node, x.dtype());
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2 (N, C, ...)");
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t plane = N * C == 0 ? 0 : x.numel() / (N * C);
  const double eps = op_attrs(c).f("epsilon");
  const double momentum = op_attrs(c).f("momentum");
  std::vector<double> scale = nn_to_doubles(c.in(1)), bias = nn_to_doubles(c.in(2)), mean = nn_to_doubles(c.in(3)),
                      var = nn_to_doubles(c.in(4));
  // Per channel, or (spatial=0, opsets 7-8) per element of one sample.
  const int64_t per = static_cast<int64_t>(scale.size());
  TESSERA_CHECK(per == C || per == C * plane, c.node.describe(), ": scale has ", per, " values, expected ", C);
  for (int i = 2; i <= 4; ++i)
    TESSERA_CHECK(c.in(i).numel() == per, c.node.describe(), ": input ", i, " has ", c.in(i).numel(),
                  " values, expected ", per);
  const bool training = bn_training(c.node, c.opset, c.num_outputs());
  std::vector<double> xv = nn_to_doubles(x);
  std::vector<double> bmean(static_cast<size_t>(C), 0.0), bvar(static_cast<size_t>(C), 0.0);
  if (training) {
    TESSERA_CHECK(per == C, c.node.describe(), ": training mode needs per-channel parameters");
    const double cnt = static_cast<double>(N * plane);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < plane; ++i) bmean[static_cast<size_t>(ch)] += xv[static_cast<size_t>((n * C + ch) * plane + i)];
    for (double& m : bmean) m /= cnt;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < plane; ++i) {
          double d = xv[static_cast<size_t>((n * C + ch) * plane + i)] - bmean[static_cast<size_t>(ch)];
          bvar[static_cast<size_t>(ch)] += d * d;
        }
    for (double& v : bvar) v /= cnt;
  }
  const std::vector<double>& um = training ? bmean : mean;
  const std::vector<double>& uv = training ? bvar : var;
  std::vector<double> yv(xv.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < plane; ++i) {
        const size_t k = static_cast<size_t>(per == C ? ch : ch * plane + i);
        const size_t e = static_cast<size_t>((n * C + ch) * plane + i);
        yv[e] = (xv[e] - um[k]) / std::sqrt(uv[k] + eps) * scale[k] + bias[k];
      }
  std::vector<Tensor> out{nn_from_doubles(x.dtype(), x.dims(), yv)};
  if (c.num_outputs() > 1) {
    std::vector<double> rm = mean, rv = var;
    if (training)
      for (size_t k = 0; k < rm.size(); ++k) {
        rm[k] = mean[k] * momentum + bmean[k] * (1 - momentum);
        rv[k] = var[k] * momentum + bvar[k] * (1 - momentum);
      }
    out.push_back(nn_from_doubles(c.in(3).dtype(), {per}, rm));
    out.push_back(nn_from_doubles(c.in(4).dtype(), {per}, rv));
    // Opsets before 14 also have saved_mean / saved_var: the batch statistics.
    if (c.num_outputs() > 3) out.push_back(nn_from_doubles(c.in(3).dtype(), {per}, training ? bmean : mean));
    if (c.num_outputs() > 4) out.push_back(nn_from_doubles(c.in(4).dtype(), {per}, training ? bvar : var));
  }
  return out;
}

// ---------------------------------------------------------------- Instance / Group

// Normalizes each of `groups` contiguous runs of `len` values per sample; the
// affine parameters are per channel (C of them, each covering `plane` values).
std::vector<double> group_normalize(const std::vector<double>& x, int64_t N, int64_t C, int64_t plane, int64_t groups,
                                    double eps, const std::vector<double>& scale, const std::vector<double>& bias,
                                    bool per_group_params) {
  std::vector<double> y(x.size());
  const int64_t cpg = C / groups;
  const int64_t len = cpg * plane;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const size_t base = static_cast<size_t>((n * C + g * cpg) * plane);
      double mean = 0, var = 0;
      for (int64_t i = 0; i < len; ++i) mean += x[base + static_cast<size_t>(i)];
      mean /= static_cast<double>(len);
      for (int64_t i = 0; i < len; ++i) {
        double d = x[base + static_cast<size_t>(i)] - mean;
        var += d * d;
      }
      var /= static_cast<double>(len);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < len; ++i) {
        const size_t k = static_cast<size_t>(per_group_params ? g : g * cpg + i / plane);
        y[base + static_cast<size_t>(i)] = (x[base + static_cast<size_t>(i)] - mean) * inv * scale[k] + bias[k];
      }
    }
  return y;
}

void infer_instance_norm(InferContext& c) {
  const TensorType& x = c.in(0);
  check_float(c.node, x.dtype);
  check_same_dtype(c.node, c.input_types);
  TESSERA_CHECK(x.rank() >= 3, c.node.describe(), ": X must have rank >= 3, got ", x.to_string());
  c.out(0) = x;
}

std::vector<Tensor> run_instance_norm(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_float(c.node, x.dtype());
  TESSERA_CHECK(x.rank() >= 3, c.node.describe(), ": X must have rank >= 3");
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t plane = N * C == 0 ? 0 : x.numel() / (N * C);
  TESSERA_CHECK(c.in(1).numel() == C && c.in(2).numel() == C, c.node.describe(), ": scale and B must have ", C,
                " values");
  std::vector<double> y = group_normalize(nn_to_doubles(x), N, C, plane, C, op_attrs(c).f("epsilon"),
                                          nn_to_doubles(c.in(1)), nn_to_doubles(c.in(2)), true);
  return {nn_from_doubles(x.dtype(), x.dims(), y)};
}

void infer_group_norm(InferContext& c) {
  const TensorType& x = c.in(0);
  check_float(c.node, x.dtype);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2, got ", x.to_string());
  const int64_t g = op_attrs(c).i("num_groups");
  TESSERA_CHECK(g > 0 && (x.dims[1] < 0 || x.dims[1] % g == 0), c.node.describe(), ": ", x.dims[1],
                " channels are not divisible into ", g, " groups");
  c.out(0) = x;
}

std::vector<Tensor> run_group_norm(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_float(c.node, x.dtype());
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": X must have rank >= 2");
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t G = op_attrs(c).i("num_groups");
  TESSERA_CHECK(G > 0 && C % G == 0, c.node.describe(), ": ", C, " channels are not divisible into ", G, " groups");
  const int64_t plane = N * C == 0 ? 0 : x.numel() / (N * C);
  const int64_t ns = c.in(1).numel();
  // Opset 21 has per-channel scale/bias; opset 18 had one per group.
  TESSERA_CHECK((ns == C || ns == G) && c.in(2).numel() == ns, c.node.describe(), ": scale and bias must have ", C,
                " (or ", G, ") values");
  std::vector<double> y = group_normalize(nn_to_doubles(x), N, C, plane, G, op_attrs(c).f("epsilon"),
                                          nn_to_doubles(c.in(1)), nn_to_doubles(c.in(2)), ns != C);
  return {nn_from_doubles(x.dtype(), x.dims(), y)};
}

}  // namespace

void register_nn_batchnorm_ops(OpRegistry& r) {
  r.add({.name = "BatchNormalization", .min_opset = 6, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_bn, .reference = run_bn,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return 2.0 * prod_dims(ins[0]->dims);  // folded to one multiply-add per element
         },
         .attributes = {float_attr("epsilon", 1e-5f), float_attr("momentum", 0.9f), int_attr("training_mode", 0),
                        int_attr("spatial", 1), int_attr("is_test", 0), ints_attr("consumed_inputs")}});
  auto norm_flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
    return 6.0 * prod_dims(ins[0]->dims);  // mean, variance, normalize, affine
  };
  r.add({.name = "InstanceNormalization", .min_opset = 6, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_instance_norm, .reference = run_instance_norm, .flops = norm_flops,
         .attributes = {float_attr("epsilon", 1e-5f), ints_attr("consumed_inputs")}});
  r.add({.name = "GroupNormalization", .min_opset = 18, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_group_norm, .reference = run_group_norm, .flops = norm_flops,
         .attributes = {float_attr("epsilon", 1e-5f), int_attr("num_groups").required(), int_attr("stash_type", 1)}});
}

}  // namespace tessera
