// Ops that create tensors from attributes, shapes or scalars: Constant,
// ConstantOfShape, Range, EyeLike, OneHot.
#include <cmath>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

// ---------------------------------------------------------------- Constant

Tensor constant_value(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  static const char* kinds[] = {"value", "value_float", "value_floats", "value_int", "value_ints",
                                "value_string", "value_strings", "sparse_value"};
  int count = 0;
  for (const char* k : kinds) count += n.has_attr(k) ? 1 : 0;
  TESSERA_CHECK(count == 1, n.describe(), ": exactly one value attribute must be set, found ", count);
  if (attrs.has("value")) return attrs.tensor("value");
  if (n.has_attr("value_float")) return Tensor::scalar<float>(attrs.f("value_float"));
  if (n.has_attr("value_int")) return Tensor::scalar<int64_t>(attrs.i("value_int"));
  if (n.has_attr("value_floats")) {
    std::vector<float> v = attrs.floats("value_floats");
    return Tensor::from<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = attrs.ints("value_ints");
    return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr("sparse_value")) TESSERA_FAIL(n.describe(), ": sparse_value constants are not supported");
  TESSERA_FAIL(n.describe(), ": string constants (value_string / value_strings) are not supported");
}

Tensor constant_of_shape_value(const OpAttrs& attrs) {
  if (!attrs.has("value")) return Tensor::scalar<float>(0.f);
  const Tensor& v = attrs.tensor("value");
  TESSERA_CHECK(v.numel() == 1, attrs.node().describe(), ": attribute 'value' must be a one-element tensor");
  return v;
}

namespace {

// ---------------------------------------------------------------- ConstantOfShape

void check_shape_values(const Node& n, const std::vector<int64_t>& s) {
  for (int64_t v : s) TESSERA_CHECK(v >= 0, n.describe(), ": invalid shape entry ", v);
}

void infer_constant_of_shape(InferContext& c) {
  DType dt = constant_of_shape_value(op_attrs(c)).dtype();
  const TensorType& s = c.in(0);
  TESSERA_CHECK(s.dtype == DType::I64 || s.dtype == DType::Undefined, c.node.describe(), ": shape must be int64");
  std::vector<int64_t> shape;
  if (constant_ints(c, 0, shape)) {
    check_shape_values(c.node, shape);
    c.out(0) = {dt, shape, true};
  } else if (s.rank() == 1 && s.dims[0] >= 0) {
    c.out(0) = {dt, Dims(static_cast<size_t>(s.dims[0]), -1), true};
  } else {
    c.out(0) = unknown_rank(dt);
  }
}

std::vector<Tensor> run_constant_of_shape(const KernelContext& c) {
  Tensor v = constant_of_shape_value(op_attrs(c));
  std::vector<int64_t> shape = input_ints(c, 0);
  check_shape_values(c.node, shape);
  Tensor y(v.dtype(), shape);
  copy_indexed(v, y, [](int64_t) { return int64_t{0}; });
  return {y};
}

// ---------------------------------------------------------------- Range

double scalar_of(const Node& n, const Tensor& t, const char* what) {
  TESSERA_CHECK(t.numel() == 1, n.describe(), ": ", what, " must be a scalar, got shape ", dims_to_string(t.dims()));
  return t.get_double(0);
}

// Number of elements of Range(start, limit, delta).
int64_t range_count(const Node& n, const Tensor& start, const Tensor& limit, const Tensor& delta) {
  TESSERA_CHECK(start.dtype() == limit.dtype() && start.dtype() == delta.dtype(), n.describe(),
                ": start, limit and delta must have the same element type");
  TESSERA_CHECK(start.dtype() != DType::Bool && start.dtype() != DType::String, n.describe(),
                ": unsupported element type ", dtype_name(start.dtype()));
  if (is_integer(start.dtype())) {
    scalar_of(n, start, "start");
    scalar_of(n, limit, "limit");
    scalar_of(n, delta, "delta");
    int64_t s = start.get_int(0), l = limit.get_int(0), d = delta.get_int(0);
    TESSERA_CHECK(d != 0, n.describe(), ": delta cannot be 0");
    if ((d > 0 && l <= s) || (d < 0 && l >= s)) return 0;
    // Exact integer ceil((l - s) / d) for same-signed numerator and denominator.
    __int128 span = static_cast<__int128>(l) - s;
    __int128 cnt = d > 0 ? (span + d - 1) / d : (span + d + 1) / d;
    TESSERA_CHECK(cnt <= (int64_t{1} << 40), n.describe(), ": range has too many elements");
    return static_cast<int64_t>(cnt);
  }
  double s = scalar_of(n, start, "start"), l = scalar_of(n, limit, "limit"), d = scalar_of(n, delta, "delta");
  TESSERA_CHECK(d != 0 && std::isfinite(s) && std::isfinite(l) && std::isfinite(d), n.describe(),
                ": start, limit and delta must be finite and delta non-zero");
  double cnt = std::ceil((l - s) / d);
  TESSERA_CHECK(cnt <= static_cast<double>(int64_t{1} << 40), n.describe(), ": range has too many elements");
  return cnt > 0 ? static_cast<int64_t>(cnt) : 0;
}

void infer_range(InferContext& c) {
  check_same_dtype(c.node, c.input_types);
  const TensorType& t = c.in(0);
  for (int i = 0; i < 3; ++i)
    TESSERA_CHECK(c.in(i).rank() == 0 || (c.in(i).rank() == 1 && c.in(i).dims[0] == 1) ||
                      (c.in(i).rank() == 1 && c.in(i).dims[0] < 0),
                  c.node.describe(), ": start, limit and delta must be scalars");
  int64_t n = -1;
  if (c.value(0) && c.value(1) && c.value(2)) n = range_count(c.node, *c.value(0), *c.value(1), *c.value(2));
  c.out(0) = {t.dtype, {n}, true};
}

std::vector<Tensor> run_range(const KernelContext& c) {
  const Tensor& start = c.in(0);
  const Tensor& delta = c.in(2);
  int64_t n = range_count(c.node, start, c.in(1), delta);
  Tensor y(start.dtype(), {n});
  dispatch_dtype(start.dtype(), [&]<class T>() {
    T* o = y.data<T>();
    if constexpr (std::is_integral_v<T>) {
      int64_t s = start.get_int(0), d = delta.get_int(0);
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<__int128>(s) + static_cast<__int128>(i) * d);
    } else {
      double s = start.get_double(0), d = delta.get_double(0);
      for (int64_t i = 0; i < n; ++i) o[i] = to_storage<T>(static_cast<compute_t<T>>(s + static_cast<double>(i) * d));
    }
  });
  return {y};
}

// ---------------------------------------------------------------- EyeLike

DType eye_dtype(const OpAttrs& attrs, DType in) {
  const Node& n = attrs.node();
  if (!n.has_attr("dtype")) return in;
  int64_t code = attrs.i("dtype");
  TESSERA_CHECK(code != static_cast<int64_t>(DType::String) && dtype_supported(static_cast<int32_t>(code)),
                n.describe(), ": unsupported dtype ", code);
  return static_cast<DType>(code);
}

void infer_eye_like(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(x.rank() == 2, c.node.describe(), ": input must be 2-D, got ", x.to_string());
  c.out(0) = {eye_dtype(op_attrs(c), x.dtype), x.dims, true};
}

std::vector<Tensor> run_eye_like(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() == 2, c.node.describe(), ": input must be 2-D, got ", dims_to_string(x.dims()));
  int64_t k = op_attrs(c).i("k");
  Tensor y(eye_dtype(op_attrs(c), x.dtype()), x.dims());
  int64_t rows = x.dim(0), cols = x.dim(1);
  dispatch_dtype(y.dtype(), [&]<class T>() {
    T* o = y.data<T>();
    if (k <= -rows || k >= cols) return;  // the diagonal misses the matrix
    for (int64_t i = 0; i < rows; ++i) {
      int64_t j = i + k;
      if (j >= 0 && j < cols) o[i * cols + j] = to_storage<T>(1);
    }
  });
  return {y};
}

// ---------------------------------------------------------------- OneHot

int64_t onehot_depth(const Node& n, const Tensor& depth) {
  double d = scalar_of(n, depth, "depth");
  TESSERA_CHECK(std::isfinite(d) && d >= 0 && d <= static_cast<double>(int64_t{1} << 40), n.describe(),
                ": invalid depth ", d);
  return static_cast<int64_t>(d);
}

void infer_onehot(InferContext& c) {
  const TensorType& ind = c.in(0);
  const TensorType& vals = c.in(2);
  TESSERA_CHECK(vals.rank() == 1 && (vals.dims[0] == 2 || vals.dims[0] < 0), c.node.describe(),
                ": values must be a 2-element tensor [off, on], got ", vals.to_string());
  int64_t r = ind.rank() + 1;
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), r);
  int64_t depth = c.value(1) ? onehot_depth(c.node, *c.value(1)) : -1;
  Dims d = ind.dims;
  d.insert(d.begin() + axis, depth);
  c.out(0) = {vals.dtype, d, true};
}

std::vector<Tensor> run_onehot(const KernelContext& c) {
  const Tensor& ind = c.in(0);
  const Tensor& vals = c.in(2);
  TESSERA_CHECK(vals.numel() == 2, c.node.describe(), ": values must be a 2-element tensor [off, on]");
  TESSERA_CHECK(ind.dtype() != DType::String && ind.dtype() != DType::Bool, c.node.describe(),
                ": indices must be numeric");
  int64_t depth = onehot_depth(c.node, c.in(1));
  int64_t r = ind.rank() + 1;
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), r));
  Dims d = ind.dims();
  d.insert(d.begin() + static_cast<int64_t>(axis), depth);
  Tensor y(vals.dtype(), d);
  int64_t inner = known_product(ind.dims(), axis, ind.dims().size());
  dispatch_storage(vals.dtype(), [&]<class W>() {
    const W* v = elems<W>(vals);
    W* o = elems<W>(y);
    for (int64_t i = 0; i < y.numel(); ++i) o[i] = v[0];
    for (int64_t i = 0; i < ind.numel(); ++i) {
      double raw = ind.get_double(i);
      if (!std::isfinite(raw)) continue;
      int64_t k = static_cast<int64_t>(raw);
      if (k < 0) k += depth;
      if (k < 0 || k >= depth) continue;  // out of range: all off
      int64_t outer = i / inner, in = i % inner;
      o[(outer * depth + k) * inner + in] = v[1];
    }
  });
  return {y};
}

}  // namespace

void register_tensor_gen_ops(OpRegistry& r) {
  // Generators read no tensor elements; one-to-one is the closest mapping
  // (each output element is produced independently).
  r.add({.name = "Constant", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = [](InferContext& c) {
           Tensor t = constant_value(op_attrs(c));
           c.out(0) = {t.dtype(), t.dims(), true};
         },
         .reference = [](const KernelContext& c) { return std::vector<Tensor>{constant_value(op_attrs(c))}; },
         .flops = zero_flops,
         .attributes = {tensor_attr("value"), float_attr("value_float"), floats_attr("value_floats"),
                        int_attr("value_int"), ints_attr("value_ints"), string_attr("value_string"),
                        strings_attr("value_strings"), tensor_attr("sparse_value")}});
  // ConstantOfShape broadcasts one value to every element: one-to-many.
  r.add({.name = "ConstantOfShape", .min_opset = 9, .mapping = MappingType::OneToMany, .linear_inputs = {},
         .infer = infer_constant_of_shape, .reference = run_constant_of_shape, .flops = zero_flops,
         .attributes = {tensor_attr("value")}});
  r.add({.name = "Range", .min_opset = 11, .mapping = MappingType::OneToMany, .linear_inputs = {},
         .infer = infer_range, .reference = run_range});
  r.add({.name = "EyeLike", .min_opset = 9, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = infer_eye_like, .reference = run_eye_like, .flops = zero_flops,
         .attributes = {int_attr("dtype"), int_attr("k", 0)}});
  r.add({.name = "OneHot", .min_opset = 9, .mapping = MappingType::OneToMany, .linear_inputs = {2},
         .infer = infer_onehot, .reference = run_onehot, .flops = zero_flops, .attributes = {int_attr("axis", -1)}});
}

}  // namespace tessera
