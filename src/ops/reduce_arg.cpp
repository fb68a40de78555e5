// Index-producing reductions: ArgMax, ArgMin and TopK. As in numpy, NaN wins
// ArgMax and ArgMin alike and sorts above every number in TopK; ties go to the
// lower index (unless select_last_index asks ArgMax/ArgMin for the last one).
#include <algorithm>
#include <numeric>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"

namespace tessera {

namespace {

// outer x n x inner view of a tensor around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  AxisView(const Dims& d, int64_t axis) {
    for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
      if (i < axis) outer *= d[static_cast<size_t>(i)];
      else if (i == axis) n = d[static_cast<size_t>(i)];
      else inner *= d[static_cast<size_t>(i)];
    }
  }
};

template <class C>
bool is_nan_value(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Strict "a ranks before b" for the largest (or smallest) ordering, NaN first
// among the largest and last among the smallest; equal values do not rank.
template <class C>
bool ranks_before(C a, C b, bool largest) {
  bool na = is_nan_value(a), nb = is_nan_value(b);
  if (na || nb) return largest ? (na && !nb) : (!na && nb);
  return largest ? a > b : a < b;
}

void check_not_bool(const Node& n, DType t) {
  TESSERA_CHECK(t != DType::Bool && t != DType::String && t != DType::Undefined, n.describe(),
                ": unsupported element type ", dtype_name(t));
}

// ---------------------------------------------------------------- ArgMax/ArgMin

void infer_arg(InferContext& c) {
  const TensorType& x = c.in(0);
  check_not_bool(c.node, x.dtype);
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  bool keep = op_attrs(c).i("keepdims") != 0;
  TensorType& out = c.out(0);
  out.dtype = DType::I64;
  out.dims.clear();
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis) out.dims.push_back(x.dims[static_cast<size_t>(i)]);
    else if (keep) out.dims.push_back(1);
  }
}

std::vector<Tensor> arg_kernel(const KernelContext& c, bool largest) {
  const Tensor& x = c.in(0);
  check_not_bool(c.node, x.dtype());
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  bool keep = op_attrs(c).i("keepdims") != 0;
  bool last = op_attrs(c).i("select_last_index") != 0;
  AxisView v(x.dims(), axis);
  TESSERA_CHECK(v.n > 0, c.node.describe(), ": cannot take the arg", largest ? "max" : "min",
                " of an empty axis (", dims_to_string(x.dims()), ", axis ", axis, ")");
  Dims od = x.dims();
  od[static_cast<size_t>(axis)] = 1;
  if (!keep) od.erase(od.begin() + axis);
  Tensor y(DType::I64, od);
  int64_t* py = y.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    const T* px = x.data<T>();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t in = 0; in < v.inner; ++in) {
        const T* base = px + o * v.n * v.inner + in;
        int64_t best = 0;
        C bv = static_cast<C>(base[0]);
        for (int64_t j = 1; j < v.n; ++j) {
          C cv = static_cast<C>(base[j * v.inner]);
          // NaN wins for both ArgMax and ArgMin (numpy's argmax/argmin do so).
          bool take;
          if (is_nan_value(bv)) take = last && is_nan_value(cv);
          else if (is_nan_value(cv)) take = true;
          else take = largest ? (cv > bv || (last && cv == bv)) : (cv < bv || (last && cv == bv));
          if (take) {
            best = j;
            bv = cv;
          }
        }
        py[o * v.inner + in] = best;
      }
  });
  return {y};
}

// ---------------------------------------------------------------- TopK

// k from the K input (opset 10+) or the attribute; false when not yet known.
bool topk_k(const Node& n, int64_t opset, const Tensor* kval, bool has_k_input, int64_t& k) {
  if (has_k_input) {
    if (!kval) return false;
    TESSERA_CHECK(kval->numel() == 1, n.describe(), ": K must hold exactly one value, got shape ",
                  dims_to_string(kval->dims()));
    k = kval->get_int(0);
  } else {
    TESSERA_CHECK(opset < 10 || n.has_attr("k"), n.describe(), ": input K is required from opset 10");
    TESSERA_CHECK(n.has_attr("k"), n.describe(), ": attribute 'k' is required");
    k = OpAttrs(n, opset).i("k");
  }
  TESSERA_CHECK(k >= 0, n.describe(), ": k must be non-negative, got ", k);
  return true;
}

void infer_topk(InferContext& c) {
  const TensorType& x = c.in(0);
  check_not_bool(c.node, x.dtype);
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  int64_t k = -1;
  if (topk_k(c.node, c.opset, c.value(1), c.has_input(1), k)) {
    int64_t d = x.dims[static_cast<size_t>(axis)];
    TESSERA_CHECK(d < 0 || k <= d, c.node.describe(), ": k = ", k, " is larger than the axis size ", d);
  }
  TensorType t = x;
  t.dims[static_cast<size_t>(axis)] = k;
  c.out(0) = t;
  t.dtype = DType::I64;
  c.out(1) = t;
}

std::vector<Tensor> topk_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  check_not_bool(c.node, x.dtype());
  TESSERA_CHECK(x.rank() >= 1, c.node.describe(), ": input must have rank >= 1");
  int64_t axis = normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  int64_t k = 0;
  topk_k(c.node, c.opset, c.has_input(1) ? &c.in(1) : nullptr, c.has_input(1), k);
  bool largest = op_attrs(c).i("largest") != 0;
  AxisView v(x.dims(), axis);
  TESSERA_CHECK(k <= v.n, c.node.describe(), ": k = ", k, " is larger than the axis size ", v.n);
  Dims od = x.dims();
  od[static_cast<size_t>(axis)] = k;
  Tensor vals(x.dtype(), od), idx(DType::I64, od);
  int64_t* pi = idx.data<int64_t>();
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* pv = vals.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(v.n));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t in = 0; in < v.inner; ++in) {
        const T* base = px + o * v.n * v.inner + in;
        std::iota(order.begin(), order.end(), 0);
        // Stable: equal values keep the lower index first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return ranks_before(static_cast<C>(base[a * v.inner]), static_cast<C>(base[b * v.inner]), largest);
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = o * k * v.inner + j * v.inner + in;
          pv[at] = base[order[static_cast<size_t>(j)] * v.inner];
          pi[at] = order[static_cast<size_t>(j)];
        }
      }
  });
  return {vals, idx};
}

}  // namespace

void register_reduce_arg_ops(OpRegistry& r) {
  for (bool largest : {true, false}) {
    r.add({.name = largest ? "ArgMax" : "ArgMin",
           .min_opset = 1,
           .mapping = MappingType::ManyToMany,
           .linear_inputs = {},
           .infer = infer_arg,
           .reference = [largest](const KernelContext& c) { return arg_kernel(c, largest); },
           .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
             return static_cast<double>(numel_of(ins[0]->dims));
           },
           .attributes = {int_attr("axis", 0), int_attr("keepdims", 1), int_attr("select_last_index", 0)}});
  }
  r.add({.name = "TopK",
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = infer_topk,
         .reference = topk_kernel,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           // A comparison sort per slice: ~len log2 len comparisons each.
           const Dims& d = ins[0]->dims;
           int64_t axis = OpAttrs(n, kAnyOpset).i("axis");
           if (axis < 0) axis += static_cast<int64_t>(d.size());
           double len = axis >= 0 && axis < static_cast<int64_t>(d.size()) ? static_cast<double>(d[static_cast<size_t>(axis)]) : 1.0;
           return static_cast<double>(numel_of(d)) * std::max(1.0, std::log2(std::max(2.0, len)));
         },
         .attributes = {int_attr("axis", -1), int_attr("largest", 1), int_attr("sorted", 1), int_attr("k")}});
}

}  // namespace tessera
