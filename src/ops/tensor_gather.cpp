// Ops that read elements at data-dependent positions: Gather, GatherElements,
// GatherND and Compress.
#include <algorithm>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// Normalises index v (negative counts from the end) for an axis of size dim;
// throws naming the node when out of range.
int64_t checked_index(const Node& n, int64_t v, int64_t dim) {
  TESSERA_CHECK(v >= -dim && v < dim, n.describe(), ": index ", v, " is out of range for an axis of size ", dim);
  return v < 0 ? v + dim : v;
}

// Every index of `ind` normalised against an axis of size dim (throws when out of range).
void check_indices(const Node& n, const Tensor& ind, int64_t dim) {
  for (int64_t v : ind.to_int_vector()) checked_index(n, v, dim);
}

// ---------------------------------------------------------------- Gather

void infer_gather(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  check_index_dtype(c.node, ind.dtype, "indices");
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": data must have rank >= 1");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  Dims d(x.dims.begin(), x.dims.begin() + static_cast<int64_t>(axis));
  d.insert(d.end(), ind.dims.begin(), ind.dims.end());
  d.insert(d.end(), x.dims.begin() + static_cast<int64_t>(axis) + 1, x.dims.end());
  c.out(0) = {x.dtype, d, true};
}

std::vector<Tensor> run_gather(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  check_index_dtype(c.node, ind.dtype(), "indices");
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": data must have rank >= 1");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  const Dims& xd = x.dims();
  Dims d(xd.begin(), xd.begin() + static_cast<int64_t>(axis));
  d.insert(d.end(), ind.dims().begin(), ind.dims().end());
  d.insert(d.end(), xd.begin() + static_cast<int64_t>(axis) + 1, xd.end());
  std::vector<int64_t> idx = ind.to_int_vector();
  int64_t dim = xd[axis];
  for (int64_t& v : idx) v = checked_index(c.node, v, dim);
  int64_t outer = known_product(xd, 0, axis), inner = known_product(xd, axis + 1, xd.size());
  int64_t n = static_cast<int64_t>(idx.size());
  Tensor y(x.dtype(), d);
  dispatch_storage(x.dtype(), [&]<class W>() {
    const W* s = elems<W>(x);
    W* o = elems<W>(y);
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t k = 0; k < n; ++k) {
        const W* src = s + (b * dim + idx[static_cast<size_t>(k)]) * inner;
        W* dst = o + (b * n + k) * inner;
        for (int64_t j = 0; j < inner; ++j) dst[j] = src[j];
      }
  });
  return {y};
}

void check_gather(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  check_indices(n, *in[1], x.dim(normalize_axis(n, OpAttrs(n, kAnyOpset).i("axis"), x.rank())));
}

// ---------------------------------------------------------------- GatherElements

void infer_gather_elements(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  check_index_dtype(c.node, ind.dtype, "indices");
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() == x.rank(), c.node.describe(),
                ": data and indices must have the same rank >= 1, got ", x.to_string(), " and ", ind.to_string());
  normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  c.out(0) = {x.dtype, ind.dims, true};
}

std::vector<Tensor> run_gather_elements(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  check_index_dtype(c.node, ind.dtype(), "indices");
  TESSERA_CHECK(x.rank() >= 1 && ind.rank() == x.rank(), c.node.describe(),
                ": data and indices must have the same rank >= 1, got ", dims_to_string(x.dims()), " and ",
                dims_to_string(ind.dims()));
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  for (size_t k = 0; k < x.dims().size(); ++k)
    TESSERA_CHECK(k == axis || ind.dims()[k] <= x.dims()[k], c.node.describe(), ": indices shape ",
                  dims_to_string(ind.dims()), " exceeds data shape ", dims_to_string(x.dims()), " outside the axis");
  std::vector<int64_t> idx = ind.to_int_vector();
  Dims xs = strides_of(x.dims());
  Tensor y(x.dtype(), ind.dims());
  if (y.numel() == 0) return {y};
  std::vector<int64_t> src(idx.size());
  NdCounter it(ind.dims());
  for (size_t i = 0; i < idx.size(); ++i, it.next()) {
    int64_t off = 0;
    for (size_t k = 0; k < xs.size(); ++k)
      off += (k == axis ? checked_index(c.node, idx[i], x.dims()[axis]) : it.idx[k]) * xs[k];
    src[i] = off;
  }
  copy_indexed(x, y, [&](int64_t i) { return src[static_cast<size_t>(i)]; });
  return {y};
}

// GatherElements reads along one axis: the same check as Gather.
void check_gather_elements(const Node& n, const std::vector<const Tensor*>& in) { check_gather(n, in); }

// ---------------------------------------------------------------- GatherND

struct GatherNdShape {
  int64_t batch_dims, last;
  Dims out;
};

GatherNdShape gather_nd_shape(const OpAttrs& attrs, const Dims& x, const Dims& ind) {
  const Node& n = attrs.node();
  int64_t r = static_cast<int64_t>(x.size()), q = static_cast<int64_t>(ind.size());
  int64_t b = attrs.i("batch_dims");
  TESSERA_CHECK(r >= 1 && q >= 1, n.describe(), ": data and indices must have rank >= 1");
  TESSERA_CHECK(b >= 0 && b < std::min(r, q), n.describe(), ": batch_dims ", b, " must be in [0, min(", r, ", ",
                q, "))");
  int64_t last = ind.back();
  for (int64_t i = 0; i < b; ++i)
    merge_dim(n, x[static_cast<size_t>(i)], ind[static_cast<size_t>(i)], "data and indices batch dims differ");
  GatherNdShape s{b, last, {}};
  s.out.assign(ind.begin(), ind.end() - 1);
  if (last < 0) return s;  // unknown: caller handles
  TESSERA_CHECK(last >= 1 && last <= r - b, n.describe(), ": the last indices dim ", last, " must be in [1, ",
                r - b, "]");
  s.out.insert(s.out.end(), x.begin() + b + last, x.end());
  return s;
}

void infer_gather_nd(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& ind = c.in(1);
  TESSERA_CHECK(ind.dtype == DType::I64 || ind.dtype == DType::Undefined, c.node.describe(),
                ": indices must be int64, got ", dtype_name(ind.dtype));
  GatherNdShape s = gather_nd_shape(op_attrs(c), x.dims, ind.dims);
  c.out(0) = s.last < 0 ? unknown_rank(x.dtype) : TensorType{x.dtype, s.out, true};
}

std::vector<Tensor> run_gather_nd(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  check_index_dtype(c.node, ind.dtype(), "indices");
  GatherNdShape s = gather_nd_shape(op_attrs(c), x.dims(), ind.dims());
  size_t b = static_cast<size_t>(s.batch_dims);
  const Dims& xd = x.dims();
  Dims xs = strides_of(xd);
  int64_t batches = known_product(xd, 0, b);
  int64_t per_batch = known_product(ind.dims(), b, ind.dims().size() - 1);
  int64_t slice = known_product(xd, b + static_cast<size_t>(s.last), xd.size());
  int64_t batch_stride = known_product(xd, b, xd.size());
  std::vector<int64_t> idx = ind.to_int_vector();
  Tensor y(x.dtype(), s.out);
  dispatch_storage(x.dtype(), [&]<class W>() {
    const W* src = elems<W>(x);
    W* o = elems<W>(y);
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t k = 0; k < per_batch; ++k) {
        int64_t row = bi * per_batch + k;
        int64_t off = bi * batch_stride;
        for (int64_t j = 0; j < s.last; ++j) {
          size_t ax = b + static_cast<size_t>(j);
          off += checked_index(c.node, idx[static_cast<size_t>(row * s.last + j)], xd[ax]) * xs[ax];
        }
        for (int64_t e = 0; e < slice; ++e) o[row * slice + e] = src[off + e];
      }
  });
  return {y};
}

void check_gather_nd(const Node& n, const std::vector<const Tensor*>& in) {
  const Tensor &x = *in[0], &ind = *in[1];
  GatherNdShape s = gather_nd_shape(OpAttrs(n, kAnyOpset), x.dims(), ind.dims());
  std::vector<int64_t> idx = ind.to_int_vector();
  for (size_t i = 0; i < idx.size(); ++i)
    checked_index(n, idx[i], x.dims()[static_cast<size_t>(s.batch_dims) + i % static_cast<size_t>(s.last)]);
}

// ---------------------------------------------------------------- Compress

void infer_compress(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& cond = c.in(1);
  TESSERA_CHECK(cond.dtype == DType::Bool || cond.dtype == DType::Undefined, c.node.describe(),
                ": condition must be bool, got ", dtype_name(cond.dtype));
  TESSERA_CHECK(cond.rank() == 1, c.node.describe(), ": condition must be 1-D, got ", cond.to_string());
  int64_t count = -1;
  if (const Tensor* v = c.value(1)) {
    count = 0;
    for (int64_t i = 0; i < v->numel(); ++i) count += v->data<bool>()[i] ? 1 : 0;
  }
  if (!c.node.has_attr("axis")) {
    c.out(0) = {x.dtype, {count}, true};
    return;
  }
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1 when axis is given");
  size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
  TensorType t = x;
  t.dims[axis] = count;
  c.out(0) = t;
}

std::vector<Tensor> run_compress(const KernelContext& c) {
  const Tensor& x0 = c.in(0);
  const Tensor& cond = c.in(1);
  TESSERA_CHECK(cond.dtype() == DType::Bool && cond.rank() == 1, c.node.describe(),
                ": condition must be a 1-D bool tensor");
  bool has_axis = c.node.has_attr("axis");
  Tensor x = has_axis ? x0 : x0.reshaped({x0.numel()});
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1 when axis is given");
  size_t axis = has_axis ? static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank())) : 0;
  int64_t dim = x.dims()[axis];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (!cond.data<bool>()[i]) continue;
    TESSERA_CHECK(i < dim, c.node.describe(), ": condition selects index ", i, " beyond the axis size ", dim);
    keep.push_back(i);
  }
  Dims d = x.dims();
  d[axis] = static_cast<int64_t>(keep.size());
  int64_t inner = known_product(x.dims(), axis + 1, x.dims().size());
  int64_t n = d[axis];
  Tensor y(x.dtype(), d);
  copy_indexed(x, y, [&](int64_t i) {
    int64_t j = i % inner, k = (i / inner) % n, b = i / inner / n;
    return (b * dim + keep[static_cast<size_t>(k)]) * inner + j;
  });
  return {y};
}

}  // namespace

void register_tensor_gather_ops(OpRegistry& r) {
  r.add({.name = "Gather", .min_opset = 1, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_gather, .reference = run_gather, .flops = zero_flops, .attributes = {int_attr("axis", 0)},
         .value_check = check_gather});
  // Each output element reads one input element chosen by the index: like Gather.
  r.add({.name = "GatherElements", .min_opset = 11, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_gather_elements, .reference = run_gather_elements, .flops = zero_flops,
         .attributes = {int_attr("axis", 0)}, .value_check = check_gather_elements});
  r.add({.name = "GatherND", .min_opset = 11, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_gather_nd, .reference = run_gather_nd, .flops = zero_flops,
         .attributes = {int_attr("batch_dims", 0)},
         .value_check = check_gather_nd});
  // Compress keeps a data-dependent subset of slices: its output shape and
  // index mapping depend on the condition values, so many-to-many.
  r.add({.name = "Compress", .min_opset = 9, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_compress, .reference = run_compress, .flops = zero_flops, .attributes = {int_attr("axis")}});
}

}  // namespace tessera
