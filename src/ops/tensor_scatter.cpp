// Ops that write updates at data-dependent positions: ScatterND,
// ScatterElements and the deprecated Scatter (= ScatterElements).
#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

Reduction reduction_of(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  if (!attrs.declares("reduction")) return Reduction::None;  // Scatter (opsets 9-10) has none
  const std::string& r = attrs.s("reduction");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  TESSERA_FAIL(n.describe(), ": unsupported reduction '", r, "' (expected none, add, mul, max or min)");
}

namespace {

// Applies the writes (destination offset in y, source offset in updates) in
// order with the node's reduction. y starts as a copy of data.
void apply_writes(const OpAttrs& attrs, Tensor& y, const Tensor& upd,
                  const std::vector<std::pair<int64_t, int64_t>>& writes) {
  const Node& n = attrs.node();
  Reduction red = reduction_of(attrs);
  TESSERA_CHECK(upd.dtype() == y.dtype(), n.describe(), ": updates have element type ", dtype_name(upd.dtype()),
                " but data has ", dtype_name(y.dtype()));
  if (red == Reduction::None) {
    dispatch_storage(y.dtype(), [&]<class W>() {
      W* o = elems<W>(y);
      const W* u = elems<W>(upd);
      for (auto [d, s] : writes) o[d] = u[s];
    });
    return;
  }
  TESSERA_CHECK(y.dtype() != DType::String, n.describe(), ": reductions are not defined for strings");
  dispatch_dtype(y.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    T* o = y.data<T>();
    const T* u = upd.data<T>();
    for (auto [d, s] : writes) {
      C a = static_cast<C>(o[d]), b = static_cast<C>(u[s]);
      C r = red == Reduction::Add ? static_cast<C>(a + b)
            : red == Reduction::Mul ? static_cast<C>(a * b)
            : red == Reduction::Max ? (a < b ? b : a)
                                    : (b < a ? b : a);
      o[d] = to_storage<T>(r);
    }
  });
}

// ---------------------------------------------------------------- ScatterND

void infer_scatter_nd(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  const TensorType& upd = c.in(2);
  TESSERA_CHECK(ind.dtype == DType::I64 || ind.dtype == DType::Undefined, c.node.describe(),
                ": indices must be int64, got ", dtype_name(ind.dtype));
  check_same_dtype(c.node, {&x, &upd});
  reduction_of(op_attrs(c));
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() >= 1, c.node.describe(), ": data and indices must have rank >= 1");
  int64_t k = ind.dims.back();
  if (k >= 0) {
    TESSERA_CHECK(k <= x.rank(), c.node.describe(), ": the last indices dim ", k, " exceeds the data rank ", x.rank());
    Dims expect(ind.dims.begin(), ind.dims.end() - 1);
    expect.insert(expect.end(), x.dims.begin() + k, x.dims.end());
    TESSERA_CHECK(upd.rank() == static_cast<int64_t>(expect.size()), c.node.describe(), ": updates have shape ",
                  upd.to_string(), " but indices and data require rank ", expect.size());
    for (size_t i = 0; i < expect.size(); ++i) merge_dim(c.node, expect[i], upd.dims[i], "updates shape mismatch");
  }
  c.out(0) = x;
}

std::vector<Tensor> run_scatter_nd(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  const Tensor& upd = c.in(2);
  check_index_dtype(c.node, ind.dtype(), "indices");
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() >= 1, c.node.describe(), ": data and indices must have rank >= 1");
  int64_t k = ind.dim(-1);
  TESSERA_CHECK(k <= x.rank(), c.node.describe(), ": the last indices dim ", k, " exceeds the data rank ", x.rank());
  Dims expect(ind.dims().begin(), ind.dims().end() - 1);
  expect.insert(expect.end(), x.dims().begin() + k, x.dims().end());
  TESSERA_CHECK(upd.dims() == expect, c.node.describe(), ": updates have shape ", dims_to_string(upd.dims()),
                " but indices and data require ", dims_to_string(expect));
  Dims xs = strides_of(x.dims());
  int64_t rows = known_product(ind.dims(), 0, ind.dims().size() - 1);
  int64_t slice = known_product(x.dims(), static_cast<size_t>(k), x.dims().size());
  std::vector<int64_t> idx = ind.to_int_vector();
  std::vector<std::pair<int64_t, int64_t>> writes;
  writes.reserve(static_cast<size_t>(rows * slice));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = x.dim(j), v = idx[static_cast<size_t>(r * k + j)];
      TESSERA_CHECK(v >= -dim && v < dim, c.node.describe(), ": index ", v, " is out of range for axis ", j,
                    " of size ", dim);
      off += (v < 0 ? v + dim : v) * xs[static_cast<size_t>(j)];
    }
    for (int64_t e = 0; e < slice; ++e) writes.push_back({off + e, r * slice + e});
  }
  Tensor y = x.clone();
  apply_writes(op_attrs(c), y, upd, writes);
  return {y};
}

// ---------------------------------------------------------------- ScatterElements / Scatter

void infer_scatter_elements(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  const TensorType& upd = c.in(2);
  check_index_dtype(c.node, ind.dtype, "indices");
  check_same_dtype(c.node, {&x, &upd});
  reduction_of(op_attrs(c));
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() == x.rank() && upd.rank() == x.rank(), c.node.describe(),
                ": data, indices and updates must have the same rank >= 1");
  for (size_t i = 0; i < ind.dims.size(); ++i)
    merge_dim(c.node, ind.dims[i], upd.dims[i], "indices and updates have different shapes");
  normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  c.out(0) = x;
}

std::vector<Tensor> run_scatter_elements(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  const Tensor& upd = c.in(2);
  check_index_dtype(c.node, ind.dtype(), "indices");
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() == x.rank() && upd.dims() == ind.dims(), c.node.describe(),
                ": data, indices and updates must have the same rank >= 1 and indices/updates the same shape");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  for (size_t k = 0; k < x.dims().size(); ++k)
    TESSERA_CHECK(k == axis || ind.dims()[k] <= x.dims()[k], c.node.describe(), ": indices shape ",
                  dims_to_string(ind.dims()), " exceeds data shape ", dims_to_string(x.dims()), " outside the axis");
  Dims xs = strides_of(x.dims());
  std::vector<int64_t> idx = ind.to_int_vector();
  std::vector<std::pair<int64_t, int64_t>> writes;
  writes.reserve(idx.size());
  if (!idx.empty()) {
    NdCounter it(ind.dims());
    int64_t dim = x.dims()[axis];
    for (size_t i = 0; i < idx.size(); ++i, it.next()) {
      int64_t v = idx[i];
      TESSERA_CHECK(v >= -dim && v < dim, c.node.describe(), ": index ", v, " is out of range for an axis of size ",
                    dim);
      int64_t off = 0;
      for (size_t k = 0; k < xs.size(); ++k) off += (k == axis ? (v < 0 ? v + dim : v) : it.idx[k]) * xs[k];
      writes.push_back({off, static_cast<int64_t>(i)});
    }
  }
  Tensor y = x.clone();
  apply_writes(op_attrs(c), y, upd, writes);
  return {y};
}

// Index ranges of ScatterND (tuples over the leading data dims) and
// ScatterElements / Scatter (one axis), as their reference kernels check them.
void check_scatter_nd(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor &x = *in[0], &ind = *in[1];
  int64_t k = ind.rank() ? ind.dim(-1) : 0;
  TESSERA_CHECK(k <= x.rank(), n.describe(), ": the last indices dim ", k, " exceeds the data rank ", x.rank());
  std::vector<int64_t> idx = ind.to_int_vector();
  for (size_t i = 0; k > 0 && i < idx.size(); ++i) {
    int64_t j = static_cast<int64_t>(i) % k, dim = x.dim(j), v = idx[i];
    TESSERA_CHECK(v >= -dim && v < dim, n.describe(), ": index ", v, " is out of range for axis ", j, " of size ", dim);
  }
}

void check_scatter_elements(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  int64_t dim = x.dim(normalize_axis(n, OpAttrs(n, kAnyOpset).i("axis"), x.rank()));
  for (int64_t v : in[1]->to_int_vector())
    TESSERA_CHECK(v >= -dim && v < dim, n.describe(), ": index ", v, " is out of range for an axis of size ", dim);
}

// Without a reduction a scatter only moves data; with one, one operation per update.
double scatter_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
  if (OpAttrs(n, kAnyOpset).s("reduction") == "none" || ins.size() < 3 || !ins[2]) return 0;
  return static_cast<double>(numel_of(ins[2]->dims));
}

}  // namespace

void register_tensor_scatter_ops(OpRegistry& r) {
  // Scatters write updates at data-dependent positions (and may reduce
  // several updates into one element): many-to-many, so fusion never assumes
  // an index mapping it cannot see.
  r.add({.name = "ScatterND", .min_opset = 11, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_scatter_nd, .reference = run_scatter_nd, .flops = scatter_flops,
         .attributes = {string_attr("reduction", "none")},
         .value_check = check_scatter_nd});
  r.add({.name = "ScatterElements", .min_opset = 11, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_scatter_elements, .reference = run_scatter_elements, .flops = scatter_flops,
         .attributes = {int_attr("axis", 0), string_attr("reduction", "none")}, .value_check = check_scatter_elements});
  r.add({.name = "Scatter", .min_opset = 9, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_scatter_elements, .reference = run_scatter_elements, .flops = zero_flops,
         .attributes = {int_attr("axis", 0)},
         .value_check = check_scatter_elements});
}

}  // namespace tessera
