// The zoo's graph-building helper.
#include "zoo/builder.h"

#include <cmath>
#include <cstring>

#include "support/error.h"

// Weight values must not depend on whether the compiler fuses a*b+c into one
// FMA (a different rounding): keep every multiply and add separately rounded.
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

namespace tessera::zoo {

ModelBuilder::ModelBuilder(std::string model_name, uint64_t seed, int64_t opset)
    : g_(std::make_unique<Graph>()), rng_(seed) {
  g_->name = std::move(model_name);
  g_->opset = opset;
}

std::unique_ptr<Graph> ModelBuilder::finish() {
  TESSERA_CHECK(g_, "ModelBuilder::finish called twice");
  return std::move(g_);
}

Value* ModelBuilder::input(const std::string& name, DType dtype, Dims dims) {
  return g_->add_input(name, TensorType{dtype, std::move(dims), true});
}

void ModelBuilder::output(Value* v, DType dtype, Dims dims) {
  v->type = TensorType{dtype, std::move(dims), true};
  g_->add_output(v);
}

// ---------------------------------------------------------------- constants

double ModelBuilder::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

namespace {
// Sum of the four 16-bit parts of r minus their mean: an Irwin–Hall(4) draw,
// exact, with variance 4 * (65536^2 - 1) / 12.
inline int64_t centered_sum16x4(uint64_t r) {
  return static_cast<int64_t>(r & 0xffff) + static_cast<int64_t>((r >> 16) & 0xffff) +
         static_cast<int64_t>((r >> 32) & 0xffff) + static_cast<int64_t>(r >> 48) - 131070;
}
// 1 / sqrt(variance) of centered_sum16x4 (sqrt and / are correctly rounded).
const double kInvSigma = 1.0 / std::sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
}  // namespace

double ModelBuilder::std_normal() { return static_cast<double>(centered_sum16x4(next())) * kInvSigma; }

Value* ModelBuilder::weight_normal(const std::string& name, Dims dims, double std) {
  Tensor t(DType::F32, std::move(dims));
  float* p = t.data<float>();
  const double scale = kInvSigma * std;  // one rounding per value below
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(static_cast<double>(centered_sum16x4(rng_())) * scale);
  return g_->add_constant(name, std::move(t));
}

Value* ModelBuilder::weight_uniform(const std::string& name, Dims dims, double lo, double hi) {
  Tensor t(DType::F32, std::move(dims));
  float* p = t.data<float>();
  const double width = hi - lo;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double u = uniform01() * width;
    double w = lo + u;
    p[i] = static_cast<float>(w);
  }
  return g_->add_constant(name, std::move(t));
}

Value* ModelBuilder::const_f32(const std::string& name, Dims dims, std::vector<float> values) {
  return g_->add_constant(name, Tensor::from<float>(std::move(dims), values));
}

Value* ModelBuilder::const_i64(const std::string& name, Dims dims, std::vector<int64_t> values) {
  return g_->add_constant(name, Tensor::from<int64_t>(std::move(dims), values));
}

Value* ModelBuilder::scalar_f32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto it = scalars_.find(bits);
  if (it != scalars_.end()) return it->second;
  Value* c = g_->add_constant(g_->unique_name("const_f"), Tensor::scalar<float>(v));
  scalars_[bits] = c;
  return c;
}

Value* ModelBuilder::ints(const std::vector<int64_t>& values) {
  auto it = int_consts_.find(values);
  if (it != int_consts_.end()) return it->second;
  Value* c = g_->add_constant(g_->unique_name("const_i"),
                              Tensor::from<int64_t>({static_cast<int64_t>(values.size())}, values));
  int_consts_[values] = c;
  return c;
}

// ---------------------------------------------------------------- nodes

Value* ModelBuilder::op(const std::string& op_type, std::vector<Value*> inputs, AttrMap attrs,
                        const std::string& name, const std::string& out_name) {
  std::string n = name.empty() ? g_->unique_name(op_type) : name;
  Node* node = g_->add_node(op_type, std::move(inputs), {out_name.empty() ? n : out_name}, std::move(attrs), n);
  return node->outputs[0];
}

Value* ModelBuilder::conv(const std::string& name, Value* x, int64_t in_ch, int64_t out_ch, int64_t kernel,
                          int64_t stride, int64_t pad, int64_t group, bool bias) {
  TESSERA_CHECK(in_ch % group == 0 && out_ch % group == 0, "zoo: conv '", name, "': channels ", in_ch, "->",
                out_ch, " not divisible by group ", group);
  const int64_t fan_in = in_ch / group * kernel * kernel;
  Value* w = weight_normal(name + ".weight", {out_ch, in_ch / group, kernel, kernel},
                           std::sqrt(2.0 / static_cast<double>(fan_in)));
  std::vector<Value*> ins = {x, w};
  if (bias) ins.push_back(weight_uniform(name + ".bias", {out_ch}, -0.05, 0.05));
  AttrMap a;
  a["kernel_shape"] = Attribute::of_ints({kernel, kernel});
  a["strides"] = Attribute::of_ints({stride, stride});
  a["pads"] = Attribute::of_ints({pad, pad, pad, pad});
  a["dilations"] = Attribute::of_ints({1, 1});
  a["group"] = Attribute::of_int(group);
  return op("Conv", std::move(ins), std::move(a), name);
}

Value* ModelBuilder::batch_norm(const std::string& name, Value* x, int64_t channels, float epsilon,
                                double gamma_lo, double gamma_hi) {
  Value* gamma = weight_uniform(name + ".weight", {channels}, gamma_lo, gamma_hi);
  Value* beta = weight_uniform(name + ".bias", {channels}, -0.1, 0.1);
  Value* mean = weight_uniform(name + ".running_mean", {channels}, -0.1, 0.1);
  Value* var = weight_uniform(name + ".running_var", {channels}, 0.8, 1.2);
  AttrMap a;
  a["epsilon"] = Attribute::of_float(epsilon);
  return op("BatchNormalization", {x, gamma, beta, mean, var}, std::move(a), name);
}

Value* ModelBuilder::relu(Value* x, const std::string& name) { return op("Relu", {x}, {}, name); }

Value* ModelBuilder::clip(Value* x, float lo, float hi, const std::string& name) {
  return op("Clip", {x, scalar_f32(lo), scalar_f32(hi)}, {}, name);
}

Value* ModelBuilder::max_pool(const std::string& name, Value* x, int64_t kernel, int64_t stride, int64_t pad) {
  AttrMap a;
  a["kernel_shape"] = Attribute::of_ints({kernel, kernel});
  a["strides"] = Attribute::of_ints({stride, stride});
  a["pads"] = Attribute::of_ints({pad, pad, pad, pad});
  return op("MaxPool", {x}, std::move(a), name);
}

Value* ModelBuilder::global_avg_pool(Value* x, const std::string& name) {
  return op("GlobalAveragePool", {x}, {}, name);
}

Value* ModelBuilder::flatten(Value* x, int64_t axis, const std::string& name) {
  return op("Flatten", {x}, {{"axis", Attribute::of_int(axis)}}, name);
}

Value* ModelBuilder::gemm(const std::string& name, Value* x, int64_t in_features, int64_t out_features,
                          double weight_std, const std::string& out_name) {
  Value* w = weight_normal(name + ".weight", {out_features, in_features}, weight_std);
  Value* b = weight_uniform(name + ".bias", {out_features}, -0.05, 0.05);
  AttrMap a;
  a["alpha"] = Attribute::of_float(1.0f);
  a["beta"] = Attribute::of_float(1.0f);
  a["transB"] = Attribute::of_int(1);
  return op("Gemm", {x, w, b}, std::move(a), name, out_name);
}

Value* ModelBuilder::linear(const std::string& name, Value* x, int64_t in_features, int64_t out_features,
                            double weight_std) {
  Value* w = weight_normal(name + ".weight", {in_features, out_features}, weight_std);
  Value* b = weight_uniform(name + ".bias", {out_features}, -0.02, 0.02);
  Value* y = op("MatMul", {x, w}, {}, name + ".matmul");
  return op("Add", {y, b}, {}, name);
}

Value* ModelBuilder::layer_norm(const std::string& name, Value* x, int64_t dim, float epsilon,
                                const std::string& out_name) {
  Value* gamma = weight_uniform(name + ".weight", {dim}, 0.9, 1.1);
  Value* beta = weight_uniform(name + ".bias", {dim}, -0.05, 0.05);
  AttrMap a;
  a["axis"] = Attribute::of_int(-1);
  a["epsilon"] = Attribute::of_float(epsilon);
  return op("LayerNormalization", {x, gamma, beta}, std::move(a), name, out_name);
}

Value* ModelBuilder::gelu_erf(const std::string& name, Value* x) {
  // The constants are the float values a PyTorch export writes.
  Value* scaled = div(x, scalar_f32(1.41421353816986083984375f), name + ".div");
  Value* e = op("Erf", {scaled}, {}, name + ".erf");
  Value* one_plus = add(e, scalar_f32(1.0f), name + ".add");
  Value* prod = mul(x, one_plus, name + ".mul");
  return mul(prod, scalar_f32(0.5f), name);
}

Value* ModelBuilder::reshape(Value* x, const std::vector<int64_t>& shape, const std::string& name) {
  return op("Reshape", {x, ints(shape)}, {}, name);
}

Value* ModelBuilder::transpose(Value* x, const std::vector<int64_t>& perm, const std::string& name) {
  return op("Transpose", {x}, {{"perm", Attribute::of_ints(perm)}}, name);
}

Value* ModelBuilder::softmax(Value* x, int64_t axis, const std::string& name) {
  return op("Softmax", {x}, {{"axis", Attribute::of_int(axis)}}, name);
}

Value* ModelBuilder::matmul(Value* a, Value* b, const std::string& name) { return op("MatMul", {a, b}, {}, name); }

Value* ModelBuilder::gather(Value* table, Value* indices, int64_t axis, const std::string& name) {
  return op("Gather", {table, indices}, {{"axis", Attribute::of_int(axis)}}, name);
}

Value* ModelBuilder::add(Value* a, Value* b, const std::string& name) { return op("Add", {a, b}, {}, name); }
Value* ModelBuilder::sub(Value* a, Value* b, const std::string& name) { return op("Sub", {a, b}, {}, name); }
Value* ModelBuilder::mul(Value* a, Value* b, const std::string& name) { return op("Mul", {a, b}, {}, name); }
Value* ModelBuilder::div(Value* a, Value* b, const std::string& name) { return op("Div", {a, b}, {}, name); }

}  // namespace tessera::zoo
