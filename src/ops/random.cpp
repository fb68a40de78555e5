// Random generators: RandomNormal, RandomUniform (+Like), Bernoulli and
// Multinomial. A `seed` attribute makes a node reproducible (same seed, same
// values on every run); without one each run draws a fresh seed. Values come
// from a 64-bit Mersenne Twister with hand-written transforms, so they are
// identical across standard libraries (but not to other ONNX runtimes).
#include <cstring>
#include <random>

#include "ops/misc_ops.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"
#include "ops/reduce_ops.h"

namespace tessera {

namespace {

class Rng {
 public:
  explicit Rng(const OpAttrs& attrs) {
    if (attrs.has("seed")) {
      float s = attrs.f("seed");
      uint32_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      eng_.seed(0x9E3779B97F4A7C15ull ^ bits);
    } else {
      std::random_device rd;
      eng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; 1 - u keeps the log argument in (0, 1]).
  double normal() {
    double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::mt19937_64 eng_;
};

DType attr_dtype(const OpAttrs& attrs, DType def) {
  const Node& n = attrs.node();
  if (!n.has_attr("dtype")) return def;
  int64_t code = attrs.i("dtype");
  TESSERA_CHECK(code > 0 && code < 1000 && dtype_supported(static_cast<int32_t>(code)), n.describe(),
                ": unsupported dtype code ", code);
  return static_cast<DType>(code);
}

// Output dtype of the generators: `dtype` or (for *Like) the input's.
DType generator_dtype(const OpAttrs& attrs, DType def) {
  const Node& n = attrs.node();
  DType t = attr_dtype(attrs, def);
  TESSERA_CHECK(is_float(t), n.describe(), ": output element type must be a float type, got ", dtype_name(t));
  return t;
}

Dims shape_attr(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  Dims d = attrs.ints("shape");
  for (int64_t x : d) TESSERA_CHECK(x >= 0, n.describe(), ": shape ", dims_to_string(d), " has a negative dim");
  return d;
}

// Fills a float tensor of the given type with draw() values.
template <class F>
Tensor generate(DType t, const Dims& dims, F draw) {
  Tensor y(t, dims);
  dispatch_float(t, [&]<class T>() {
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = saturate_cast<T>(draw());
  });
  return y;
}

std::vector<Tensor> normal_kernel(const KernelContext& c, const Dims& dims, DType t) {
  Rng rng(op_attrs(c));
  double mean = op_attrs(c).f("mean"), scale = op_attrs(c).f("scale");
  return {generate(t, dims, [&] { return mean + scale * rng.normal(); })};
}

std::vector<Tensor> uniform_kernel(const KernelContext& c, const Dims& dims, DType t) {
  Rng rng(op_attrs(c));
  double low = op_attrs(c).f("low"), high = op_attrs(c).f("high");
  TESSERA_CHECK(low <= high, c.node.describe(), ": low (", low, ") must not exceed high (", high, ")");
  return {generate(t, dims, [&] { return low + (high - low) * rng.uniform(); })};
}

// ---------------------------------------------------------------- Bernoulli

std::vector<Tensor> bernoulli_kernel(const KernelContext& c) {
  const Tensor& p = c.in(0);
  TESSERA_CHECK(is_float(p.dtype()), c.node.describe(), ": input must be a float tensor, got ", dtype_name(p.dtype()));
  DType t = attr_dtype(op_attrs(c), p.dtype());
  Rng rng(op_attrs(c));
  Tensor y(t, p.dims());
  dispatch_dtype(t, [&]<class T>() {
    T* py = y.data<T>();
    for (int64_t i = 0; i < p.numel(); ++i) {
      double pi = p.get_double(i);
      TESSERA_CHECK(pi >= 0 && pi <= 1, c.node.describe(), ": probability ", pi, " at element ", i,
                    " is outside [0, 1]");
      // u in [0, 1): p = 0 never fires, p = 1 always does.
      py[i] = saturate_cast<T>(rng.uniform() < pi ? 1.0 : 0.0);
    }
  });
  return {y};
}

// ---------------------------------------------------------------- Multinomial

DType multinomial_dtype(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  DType t = attr_dtype(attrs, DType::I32);
  TESSERA_CHECK(t == DType::I32 || t == DType::I64, n.describe(), ": dtype must be int32 or int64, got ",
                dtype_name(t));
  return t;
}

void infer_multinomial(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": input must be a float tensor, got ", dtype_name(x.dtype));
  TESSERA_CHECK(x.rank() == 2, c.node.describe(), ": input must be [batch, classes], got ", x.to_string());
  int64_t s = op_attrs(c).i("sample_size");
  TESSERA_CHECK(s >= 1, c.node.describe(), ": sample_size must be positive, got ", s);
  c.out(0) = {multinomial_dtype(op_attrs(c)), {x.dims[0], s}, true};
}

std::vector<Tensor> multinomial_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()) && x.rank() == 2, c.node.describe(),
                ": input must be a float [batch, classes] tensor, got ", dtype_name(x.dtype()), "[",
                dims_to_string(x.dims()), "]");
  int64_t s = op_attrs(c).i("sample_size");
  TESSERA_CHECK(s >= 1, c.node.describe(), ": sample_size must be positive, got ", s);
  int64_t batch = x.dim(0), k = x.dim(1);
  TESSERA_CHECK(k >= 1, c.node.describe(), ": there must be at least one class");
  Rng rng(op_attrs(c));
  std::vector<int64_t> out(static_cast<size_t>(batch * s));
  std::vector<double> cdf(static_cast<size_t>(k));
  for (int64_t b = 0; b < batch; ++b) {
    // The input holds unnormalised log-probabilities: softmax, then the CDF.
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < k; ++j) mx = std::max(mx, x.get_double(b * k + j));
    TESSERA_CHECK(std::isfinite(mx), c.node.describe(), ": row ", b, " has no finite log-probability");
    double total = 0;
    for (int64_t j = 0; j < k; ++j) {
      total += std::exp(x.get_double(b * k + j) - mx);
      cdf[static_cast<size_t>(j)] = total;
    }
    for (int64_t i = 0; i < s; ++i) {
      double u = rng.uniform() * total;
      int64_t j = static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      out[static_cast<size_t>(b * s + i)] = std::min(j, k - 1);
    }
  }
  Tensor y = Tensor::from<int64_t>({batch, s}, out);
  return {multinomial_dtype(op_attrs(c)) == DType::I64 ? y : y.cast(DType::I32)};
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  r.add({.name = "RandomNormal", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           c.out(0) = {generator_dtype(op_attrs(c), DType::F32), shape_attr(op_attrs(c)), true};
         },
         .reference = [](const KernelContext& c) {
           return normal_kernel(c, shape_attr(op_attrs(c)), generator_dtype(op_attrs(c), DType::F32));
         },
         .attributes = {int_attr("dtype"), float_attr("mean", 0.0f), float_attr("scale", 1.0f), float_attr("seed"),
                        ints_attr("shape").required()}, .deterministic = false});
  r.add({.name = "RandomUniform", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           c.out(0) = {generator_dtype(op_attrs(c), DType::F32), shape_attr(op_attrs(c)), true};
         },
         .reference = [](const KernelContext& c) {
           return uniform_kernel(c, shape_attr(op_attrs(c)), generator_dtype(op_attrs(c), DType::F32));
         },
         .attributes = {int_attr("dtype"), float_attr("high", 1.0f), float_attr("low", 0.0f), float_attr("seed"),
                        ints_attr("shape").required()}, .deterministic = false});
  r.add({.name = "RandomNormalLike", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           TensorType t = c.in(0);
           t.dtype = generator_dtype(op_attrs(c), t.dtype);
           c.out(0) = t;
         },
         .reference = [](const KernelContext& c) {
           return normal_kernel(c, c.in(0).dims(), generator_dtype(op_attrs(c), c.in(0).dtype()));
         },
         .attributes = {int_attr("dtype"), float_attr("mean", 0.0f), float_attr("scale", 1.0f),
                        float_attr("seed")}, .deterministic = false});
  r.add({.name = "RandomUniformLike", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           TensorType t = c.in(0);
           t.dtype = generator_dtype(op_attrs(c), t.dtype);
           c.out(0) = t;
         },
         .reference = [](const KernelContext& c) {
           return uniform_kernel(c, c.in(0).dims(), generator_dtype(op_attrs(c), c.in(0).dtype()));
         },
         .attributes = {int_attr("dtype"), float_attr("high", 1.0f), float_attr("low", 0.0f),
                        float_attr("seed")}, .deterministic = false});
  r.add({.name = "Bernoulli", .min_opset = 15, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           TensorType t = c.in(0);
           TESSERA_CHECK(is_float(t.dtype), c.node.describe(), ": input must be a float tensor, got ",
                         dtype_name(t.dtype));
           t.dtype = attr_dtype(op_attrs(c), t.dtype);
           TESSERA_CHECK(t.dtype != DType::String, c.node.describe(), ": dtype must be numeric or bool");
           c.out(0) = t;
         },
         .reference = bernoulli_kernel,
         .attributes = {int_attr("dtype"), float_attr("seed")}, .deterministic = false});
  r.add({.name = "Multinomial", .min_opset = 7, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = infer_multinomial,
         .reference = multinomial_kernel,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           const int64_t draws = OpAttrs(n, kAnyOpset).i("sample_size") + 1;
           return static_cast<double>(numel_of(ins[0]->dims)) * static_cast<double>(draws);
         },
         .attributes = {int_attr("dtype"), int_attr("sample_size", 1), float_attr("seed")}, .deterministic = false});
}

}  // namespace tessera
