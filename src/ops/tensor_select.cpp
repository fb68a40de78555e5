// Ops whose output size depends on the data: NonZero and Unique.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/tensor_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// Calls f.template operator()<T>() with T the element type of dtype t,
// including std::string for string tensors.
template <class F>
decltype(auto) dispatch_any(DType t, F&& f) {
  if (t == DType::String) return f.template operator()<std::string>();
  return dispatch_dtype(t, std::forward<F>(f));
}

template <class T>
const T* typed(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>)
    return t.strings().data();
  else
    return t.data<T>();
}

// Total order on elements: NaNs sort last and equal each other.
template <class T>
int compare_elems(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    return a < b ? -1 : (b < a ? 1 : 0);
  } else {
    using C = compute_t<T>;
    C x = static_cast<C>(a), y = static_cast<C>(b);
    if constexpr (std::is_floating_point_v<C>) {
      bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
    }
    return x < y ? -1 : (y < x ? 1 : 0);
  }
}

// ---------------------------------------------------------------- NonZero

void infer_nonzero(InferContext& c) {
  const TensorType& x = c.in(0);
  c.out(0) = {DType::I64, {std::max<int64_t>(x.rank(), 1), -1}, true};
}

std::vector<Tensor> run_nonzero(const KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> hits;
  dispatch_any(x.dtype(), [&]<class T>() {
    const T* p = typed<T>(x);
    for (int64_t i = 0; i < x.numel(); ++i) {
      bool nz;
      if constexpr (std::is_same_v<T, std::string>)
        nz = !p[i].empty();
      else
        nz = static_cast<compute_t<T>>(p[i]) != static_cast<compute_t<T>>(0);
      if (nz) hits.push_back(i);
    }
  });
  int64_t r = std::max<int64_t>(x.rank(), 1), n = static_cast<int64_t>(hits.size());
  Tensor y(DType::I64, {r, n});
  int64_t* o = y.data<int64_t>();
  Dims st = x.rank() == 0 ? Dims{1} : strides_of(x.dims());
  Dims dims = x.rank() == 0 ? Dims{1} : x.dims();
  for (int64_t j = 0; j < n; ++j) {
    int64_t flat = hits[static_cast<size_t>(j)];
    for (int64_t k = 0; k < r; ++k) o[k * n + j] = (flat / st[static_cast<size_t>(k)]) % dims[static_cast<size_t>(k)];
  }
  return {y};
}

// ---------------------------------------------------------------- Unique

void infer_unique(InferContext& c) {
  const TensorType& x = c.in(0);
  if (c.node.has_attr("axis")) {
    TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1 when axis is given");
    size_t axis = static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank()));
    TensorType y = x;
    y.dims[axis] = -1;
    c.out(0) = y;
    c.out(2) = {DType::I64, {x.dims[axis]}, true};
  } else {
    c.out(0) = {x.dtype, {-1}, true};
    c.out(2) = {DType::I64, {known_product(x.dims, 0, x.dims.size())}, true};
  }
  c.out(1) = {DType::I64, {-1}, true};
  c.out(3) = {DType::I64, {-1}, true};
}

std::vector<Tensor> run_unique(const KernelContext& c) {
  const Tensor& x0 = c.in(0);
  bool has_axis = c.node.has_attr("axis");
  bool sorted = op_attrs(c).i("sorted") != 0;
  Tensor x = has_axis ? x0 : x0.reshaped({x0.numel()});
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1 when axis is given");
  size_t axis = has_axis ? static_cast<size_t>(normalize_axis(c.node, op_attrs(c).i("axis"), x.rank())) : 0;
  const Dims& xd = x.dims();
  int64_t n = xd[axis];
  int64_t outer = known_product(xd, 0, axis), inner = known_product(xd, axis + 1, xd.size());

  // Item k is the slice x[..., k, ...] along the axis, compared lexicographically.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::function<int(int64_t, int64_t)> cmp;
  dispatch_any(x.dtype(), [&]<class T>() {
    const T* p = typed<T>(x);
    cmp = [p, n, outer, inner](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int r = compare_elems<T>(p[(o * n + a) * inner + i], p[(o * n + b) * inner + i]);
          if (r) return r;
        }
      return 0;
    };
  });
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });

  // Groups of equal items in sorted order; the first member is the first occurrence.
  std::vector<int64_t> first, counts, group_of(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    counts.back() += 1;
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  size_t u = first.size();
  std::vector<int64_t> pos(u);  // output position of each group
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
    for (size_t k = 0; k < u; ++k) pos[static_cast<size_t>(by_first[k])] = static_cast<int64_t>(k);
  }
  std::vector<int64_t> idx_out(u), cnt_out(u), inverse(static_cast<size_t>(n));
  for (size_t g = 0; g < u; ++g) {
    idx_out[static_cast<size_t>(pos[g])] = first[g];
    cnt_out[static_cast<size_t>(pos[g])] = counts[g];
  }
  for (int64_t k = 0; k < n; ++k) inverse[static_cast<size_t>(k)] = pos[static_cast<size_t>(group_of[static_cast<size_t>(k)])];

  Dims yd = xd;
  yd[axis] = static_cast<int64_t>(u);
  Tensor y(x.dtype(), yd);
  int64_t uu = static_cast<int64_t>(u);
  copy_indexed(x, y, [&](int64_t i) {
    int64_t in = i % inner, k = (i / inner) % uu, o = i / inner / uu;
    return (o * n + idx_out[static_cast<size_t>(k)]) * inner + in;
  });
  return {y, Tensor::from<int64_t>({uu}, idx_out), Tensor::from<int64_t>({n}, inverse),
          Tensor::from<int64_t>({uu}, cnt_out)};
}

}  // namespace

void register_tensor_select_ops(OpRegistry& r) {
  // NonZero turns positions into coordinates: each output depends on where
  // many inputs are non-zero; many-to-many is the honest classification.
  r.add({.name = "NonZero", .min_opset = 9, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_nonzero, .reference = run_nonzero, .flops = zero_flops});
  // Unique compares every element with the others: many-to-many.
  r.add({.name = "Unique", .min_opset = 11, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_unique, .reference = run_unique, .attributes = {int_attr("axis"), int_attr("sorted", 1)}});
}

}  // namespace tessera
