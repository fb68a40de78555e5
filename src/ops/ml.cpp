// Ops of the ai.onnx.ml domain (classic machine learning): Binarizer and
// ArrayFeatureExtractor here; LabelEncoder (ml_label_encoder.cpp) and
// TreeEnsemble (ml_tree.cpp).
#include "ops/ml_ops.h"

#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

namespace {

const char* kMl = "ai.onnx.ml";

// ---------------------------------------------------------------- Binarizer

void check_binarizer_dtype(const Node& n, DType t) {
  TESSERA_CHECK(is_float(t) || is_integer(t), n.describe(), ": input must be numeric, got ", dtype_name(t));
}

void infer_binarizer(InferContext& c) {
  check_binarizer_dtype(c.node, c.in(0).dtype);
  infer_same_as_input0(c);
}

std::vector<Tensor> run_binarizer(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_binarizer_dtype(c.node, x.dtype());
  double threshold = op_attrs(c).f("threshold");
  Tensor y(x.dtype(), x.dims());
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      out[i] = to_storage<T>(static_cast<double>(static_cast<compute_t<T>>(in[i])) > threshold ? 1 : 0);
  });
  return {y};
}

// ---------------------------------------------------------------- ArrayFeatureExtractor

// Output: X's dims with the last replaced by the number of indices; a 1-D X
// gives [1, K].
Dims feature_dims(const Dims& x, int64_t k) {
  Dims d = x.size() == 1 ? Dims{1} : Dims(x.begin(), x.end() - 1);
  d.push_back(k);
  return d;
}

void check_feature_inputs(const Node& n, DType x, int64_t rank, DType ind) {
  TESSERA_CHECK(rank >= 1, n.describe(), ": input X must have rank >= 1");
  TESSERA_CHECK(x == DType::F32 || x == DType::F64 || x == DType::I64 || x == DType::I32 || x == DType::String,
                n.describe(), ": input X must be float, double, int64, int32 or string, got ", dtype_name(x));
  TESSERA_CHECK(ind == DType::I64, n.describe(), ": indices Y must be int64, got ", dtype_name(ind));
}

void infer_array_feature_extractor(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  check_feature_inputs(c.node, x.dtype, x.rank(), ind.dtype);
  int64_t k = 1;
  for (int64_t v : ind.dims) k = (k < 0 || v < 0) ? -1 : k * v;
  c.out(0) = {x.dtype, feature_dims(x.dims, k), true};
}

std::vector<Tensor> run_array_feature_extractor(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  check_feature_inputs(c.node, x.dtype(), x.rank(), ind.dtype());
  std::vector<int64_t> idx = ind.to_int_vector();
  int64_t m = x.dim(-1);
  for (int64_t v : idx)
    TESSERA_CHECK(v >= 0 && v < m, c.node.describe(), ": index ", v, " is out of range for the last axis of size ", m);
  int64_t k = static_cast<int64_t>(idx.size());
  Tensor y(x.dtype(), feature_dims(x.dims(), k));
  int64_t rows = m == 0 ? 0 : x.numel() / m;
  if (x.dtype() == DType::String) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        y.strings()[static_cast<size_t>(r * k + j)] = x.strings()[static_cast<size_t>(r * m + idx[static_cast<size_t>(j)])];
    return {y};
  }
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) out[r * k + j] = in[r * m + idx[static_cast<size_t>(j)]];
  });
  return {y};
}

double no_flops(const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) { return 0; }

}  // namespace

void register_ml_ops(OpRegistry& r) {
  // An elementwise threshold.
  r.add({.name = "Binarizer", .domain = kMl, .min_opset = 1, .mapping = MappingType::OneToOne,
         .infer = infer_binarizer, .reference = run_binarizer, .attributes = {float_attr("threshold", 0.0f)}});
  // A gather along the last axis: an input element may feed several outputs
  // (repeated indices), like Gather; linear in the data.
  r.add({.name = "ArrayFeatureExtractor", .domain = kMl, .min_opset = 1, .mapping = MappingType::OneToMany,
         .linear_inputs = {0}, .infer = infer_array_feature_extractor, .reference = run_array_feature_extractor,
         .flops = no_flops});
  register_ml_label_encoder_ops(r);
  register_ml_tree_ops(r);
}

}  // namespace tessera
