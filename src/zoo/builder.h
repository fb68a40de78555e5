// A small graph-building helper for the zoo: one call per layer, creating the
// node, its named output value and its weights (deterministic pseudo-random
// constants drawn from the builder's seeded generator in call order).
//
// Weight values depend only on the seed and the sequence of calls, and are
// computed with integer arithmetic plus one correctly-rounded multiply per
// value, so the same build gives bit-identical weights on every machine.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera::zoo {

class ModelBuilder {
 public:
  ModelBuilder(std::string model_name, uint64_t seed, int64_t opset = 17);

  Graph& graph() { return *g_; }
  // Hands the finished graph over (the builder is unusable afterwards).
  std::unique_ptr<Graph> finish();

  // --- signature ------------------------------------------------------------
  Value* input(const std::string& name, DType dtype, Dims dims);
  // Adds a graph output with its declared type (inference fills in and
  // checks the rest); -1 dims stay free, e.g. a batch that --shape may change.
  void output(Value* v, DType dtype, Dims dims);

  // --- constants ------------------------------------------------------------
  // Approximately normal values (mean 0, the given std; bounded by ~3.46 std).
  Value* weight_normal(const std::string& name, Dims dims, double std);
  // Uniform values in [lo, hi).
  Value* weight_uniform(const std::string& name, Dims dims, double lo, double hi);
  // A constant with the given values (dims must match their count).
  Value* const_f32(const std::string& name, Dims dims, std::vector<float> values);
  Value* const_i64(const std::string& name, Dims dims, std::vector<int64_t> values);
  // A float scalar constant, shared by value.
  Value* scalar_f32(float v);
  // A 1-D int64 constant, shared by value (shapes, axes, perms).
  Value* ints(const std::vector<int64_t>& values);

  // --- generic node ---------------------------------------------------------
  // Adds a single-output node named `name` (a fresh "<op>_<n>" when empty);
  // its output value has the same name unless `out_name` is given.
  Value* op(const std::string& op_type, std::vector<Value*> inputs, AttrMap attrs = {},
            const std::string& name = "", const std::string& out_name = "");

  // --- CNN layers (NCHW) ----------------------------------------------------
  // Conv with He/Kaiming-scaled weights "<name>.weight" (fan_in = in/group*k*k,
  // std = sqrt(2 / fan_in)) and, when bias, a small bias "<name>.bias".
  Value* conv(const std::string& name, Value* x, int64_t in_ch, int64_t out_ch, int64_t kernel,
              int64_t stride = 1, int64_t pad = 0, int64_t group = 1, bool bias = false);
  // Inference-mode BatchNormalization with near-identity statistics:
  // gamma in [gamma_lo, gamma_hi), beta in [-0.1,0.1), mean in [-0.1,0.1),
  // var in [0.8,1.2).
  Value* batch_norm(const std::string& name, Value* x, int64_t channels, float epsilon = 1e-5f,
                    double gamma_lo = 0.8, double gamma_hi = 1.2);
  Value* relu(Value* x, const std::string& name = "");
  // Clip(x, lo, hi) with min/max as constant inputs (opset 11+ form).
  Value* clip(Value* x, float lo, float hi, const std::string& name = "");
  Value* max_pool(const std::string& name, Value* x, int64_t kernel, int64_t stride, int64_t pad);
  Value* global_avg_pool(Value* x, const std::string& name = "");
  Value* flatten(Value* x, int64_t axis = 1, const std::string& name = "");
  // Gemm(x, W^T, b) with W "<name>.weight" [out, in] (transB=1), like a
  // torch Linear layer; weights ~ N(0, weight_std^2), bias uniform small.
  Value* gemm(const std::string& name, Value* x, int64_t in_features, int64_t out_features,
              double weight_std, const std::string& out_name = "");

  // --- transformer layers ---------------------------------------------------
  // MatMul(x, W) + b with W "<name>.weight" [in, out] and b "<name>.bias".
  Value* linear(const std::string& name, Value* x, int64_t in_features, int64_t out_features,
                double weight_std);
  // LayerNormalization over the last axis with gamma ~1 and beta ~0.
  Value* layer_norm(const std::string& name, Value* x, int64_t dim, float epsilon,
                    const std::string& out_name = "");
  // x * 0.5 * (1 + Erf(x / sqrt(2))): exact Gelu from basic ops.
  Value* gelu_erf(const std::string& name, Value* x);
  Value* reshape(Value* x, const std::vector<int64_t>& shape, const std::string& name = "");
  Value* transpose(Value* x, const std::vector<int64_t>& perm, const std::string& name = "");
  Value* softmax(Value* x, int64_t axis, const std::string& name = "");
  Value* matmul(Value* a, Value* b, const std::string& name = "");
  Value* gather(Value* table, Value* indices, int64_t axis = 0, const std::string& name = "");
  Value* add(Value* a, Value* b, const std::string& name = "");
  Value* sub(Value* a, Value* b, const std::string& name = "");
  Value* mul(Value* a, Value* b, const std::string& name = "");
  Value* div(Value* a, Value* b, const std::string& name = "");

 private:
  // Next raw 64-bit value of the generator.
  uint64_t next() { return rng_(); }
  // Uniform double in [0, 1) from the top 53 bits.
  double uniform01();
  // Approximately standard-normal value (Irwin–Hall sum of four 16-bit parts).
  double std_normal();

  std::unique_ptr<Graph> g_;
  std::mt19937_64 rng_;
  std::map<uint32_t, Value*> scalars_;                // by float bit pattern
  std::map<std::vector<int64_t>, Value*> int_consts_;
};

}  // namespace tessera::zoo
