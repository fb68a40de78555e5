// Reductions: the Reduce* family (Sum, Mean, Max, Min, Prod, L1, L2, LogSum,
// LogSumExp, SumSquare). ArgMax/ArgMin/TopK, CumSum/CumProd and Det live in
// the reduce_*.cpp files registered from here.
#include <algorithm>
#include <optional>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"

namespace tessera {

namespace {

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// The axes list as written: from the input when present (ReduceSum from opset
// 13, the others from 18), else the attribute (earlier opsets).
// nullopt when the input is present but not known (inference only).
std::optional<std::vector<int64_t>> written_axes(const ReduceAttrs& a, const Tensor* axes_value,
                                                 bool axes_input_present) {
  if (axes_input_present) {
    if (!axes_value) return std::nullopt;
    return axes_value->to_int_vector();
  }
  return a.axes;
}

Dims reduced_dims(const Dims& in, const std::vector<int64_t>& axes, bool keep) {
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool red = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (!red) out.push_back(in[i]);
    else if (keep) out.push_back(1);
  }
  return out;
}

void check_reduce_dtype(const Node& n, RK k, DType t) {
  TESSERA_CHECK(t != DType::String && t != DType::Undefined, n.describe(), ": unsupported element type ",
                dtype_name(t));
  TESSERA_CHECK(t != DType::Bool || k == RK::Max || k == RK::Min, n.describe(),
                ": bool inputs are only supported by ReduceMax and ReduceMin");
}

void infer_reduce(InferContext& c, RK k) {
  const TensorType& x = c.in(0);
  check_reduce_dtype(c.node, k, x.dtype);
  TensorType& out = c.out(0);
  out.dtype = x.dtype;
  const ReduceAttrs ra = reduce_attrs(op_attrs(c));
  const bool keep = ra.keepdims;
  bool axes_in = c.has_input(1);
  auto written = written_axes(ra, c.value(1), axes_in);
  if (!written && axes_in && c.in(1).rank_known && c.in(1).rank() == 1 && c.in(1).dims[0] == 0)
    written = std::vector<int64_t>{};  // an empty axes input of static shape [0]
  if (written) {
    out.dims = reduced_dims(x.dims, resolve_reduce_axes(c.node, ra, *written, x.rank()), keep);
    out.rank_known = true;
    return;
  }
  // Axes known only at run time.
  if (keep) {
    out.dims = x.dims;
    for (int64_t& d : out.dims)
      if (d != 1) d = -1;
    return;
  }
  // Without keepdims the rank drops by the number of axes, when that is known
  // and non-zero (an empty list could mean every axis or none).
  const TensorType& a = c.in(1);
  if (a.rank_known && a.rank() == 1 && a.dims[0] > 0 && a.dims[0] <= x.rank()) {
    out.dims.assign(static_cast<size_t>(x.rank() - a.dims[0]), -1);
  } else {
    out.rank_known = false;
    out.dims.clear();
  }
}

// The reduction for element type T. Each input element is mapped to its
// output element; accumulators are double for float types (half types
// included), exact 64-bit integers otherwise.
template <class T>
std::vector<Tensor> reduce_typed(const KernelContext& c, RK k, const Tensor& x, const std::vector<int64_t>& axes,
                                 bool keep) {
  const Dims& in = x.dims();
  Dims out_keep = reduced_dims(in, axes, true);
  Tensor y(x.dtype(), reduced_dims(in, axes, keep));
  int64_t n_out = y.numel();
  int64_t count = 1;
  for (int64_t a : axes) count *= in[static_cast<size_t>(a)];
  // Maps each input element to its output element.
  Dims ostr = strides_of(out_keep);
  Dims istr = strides_of(in);
  std::vector<bool> red(in.size(), false);
  for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
  std::vector<int64_t> dst(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, o = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t q = rem / istr[d];
      rem -= q * istr[d];
      if (!red[d]) o += q * ostr[d];
    }
    dst[static_cast<size_t>(i)] = o;
  }
  const T* px = x.data<T>();
  T* py = y.data<T>();
  constexpr bool kFloat = !std::is_integral_v<T>;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<char> acc(static_cast<size_t>(n_out), k == RK::Min ? 1 : 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      char& a = acc[static_cast<size_t>(dst[static_cast<size_t>(i)])];
      a = k == RK::Min ? (a && px[i]) : (a || px[i]);
    }
    for (int64_t o = 0; o < n_out; ++o) py[o] = acc[static_cast<size_t>(o)] != 0;
  } else if constexpr (kFloat) {
    auto val = [&](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(px[i])); };
    const double inf = std::numeric_limits<double>::infinity();
    double init = k == RK::Prod ? 1.0 : k == RK::Max || k == RK::LogSumExp ? -inf : k == RK::Min ? inf : 0.0;
    std::vector<double> acc(static_cast<size_t>(n_out), init);
    if (k == RK::LogSumExp) {  // pass 1: per-output maximum
      for (int64_t i = 0; i < x.numel(); ++i) {
        double& a = acc[static_cast<size_t>(dst[static_cast<size_t>(i)])];
        double v = val(i);
        if (std::isnan(v) || v > a) a = v;
      }
    }
    std::vector<double> sum(static_cast<size_t>(n_out), 0.0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t o = static_cast<size_t>(dst[static_cast<size_t>(i)]);
      double v = val(i);
      double& a = acc[o];
      switch (k) {
        case RK::Sum: case RK::Mean: case RK::LogSum: a += v; break;
        case RK::Max: if (std::isnan(v) || v > a) a = v; break;
        case RK::Min: if (std::isnan(v) || v < a) a = v; break;
        case RK::Prod: a *= v; break;
        case RK::L1: a += std::fabs(v); break;
        case RK::L2: case RK::SumSquare: a += v * v; break;
        case RK::LogSumExp: sum[o] += std::isinf(a) ? (v == a ? 1.0 : 0.0) : std::exp(v - a); break;
      }
    }
    for (int64_t o = 0; o < n_out; ++o) {
      double a = acc[static_cast<size_t>(o)];
      double r = a;
      switch (k) {
        case RK::Mean: r = a / static_cast<double>(count); break;
        case RK::L2: r = std::sqrt(a); break;
        case RK::LogSum: r = std::log(a); break;
        case RK::LogSumExp: r = std::isinf(a) && a > 0 ? a : a + std::log(sum[static_cast<size_t>(o)]); break;
        default: break;
      }
      py[o] = saturate_cast<T>(r);
    }
  } else {
    // Integers: sums and products wrap like the storage type (computed modulo
    // 2^64, then truncated); max/min compare exactly; the rest go via double.
    using U = uint64_t;
    std::vector<U> acc(static_cast<size_t>(n_out), k == RK::Prod ? U{1} : U{0});
    std::vector<T> ext(static_cast<size_t>(n_out),
                       k == RK::Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    std::vector<double> dsum(static_cast<size_t>(n_out), 0.0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t o = static_cast<size_t>(dst[static_cast<size_t>(i)]);
      T v = px[i];
      U u = static_cast<U>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v));
      switch (k) {
        case RK::Sum: acc[o] += u; break;
        case RK::Prod: acc[o] *= u; break;
        case RK::SumSquare: acc[o] += u * u; break;
        case RK::L1: acc[o] += (std::is_signed_v<T> && v < 0) ? U{0} - u : u; break;
        case RK::Max: ext[o] = std::max(ext[o], v); break;
        case RK::Min: ext[o] = std::min(ext[o], v); break;
        case RK::Mean: case RK::LogSum: dsum[o] += static_cast<double>(v); break;
        case RK::L2: dsum[o] += static_cast<double>(v) * static_cast<double>(v); break;
        case RK::LogSumExp: dsum[o] += std::exp(static_cast<double>(v)); break;
      }
    }
    for (int64_t o = 0; o < n_out; ++o) {
      size_t s = static_cast<size_t>(o);
      switch (k) {
        case RK::Sum: case RK::Prod: case RK::SumSquare: case RK::L1: py[o] = static_cast<T>(acc[s]); break;
        case RK::Max: case RK::Min: py[o] = ext[s]; break;
        case RK::Mean: py[o] = count == 0 ? T(0) : saturate_cast<T>(dsum[s] / static_cast<double>(count)); break;
        case RK::L2: py[o] = saturate_cast<T>(std::sqrt(dsum[s])); break;
        case RK::LogSum: case RK::LogSumExp: py[o] = saturate_cast<T>(std::log(dsum[s])); break;
      }
    }
  }
  return {y};
}

std::vector<Tensor> reduce_kernel(const KernelContext& c, RK k) {
  const Tensor& x = c.in(0);
  check_reduce_dtype(c.node, k, x.dtype());
  bool axes_in = c.has_input(1);
  const ReduceAttrs ra = reduce_attrs(op_attrs(c));
  auto written = written_axes(ra, axes_in ? &c.in(1) : nullptr, axes_in);
  std::vector<int64_t> axes = resolve_reduce_axes(c.node, ra, *written, x.rank());
  const bool keep = ra.keepdims;
  return dispatch_dtype(x.dtype(), [&]<class T>() { return reduce_typed<T>(c, k, x, axes, keep); });
}

double reduce_flops(RK k, const std::vector<const TensorType*>& ins) {
  double n = ins.empty() || !ins[0] ? 0 : static_cast<double>(numel_of(ins[0]->dims));
  switch (k) {
    case RK::L2: case RK::SumSquare: return 2 * n;
    case RK::LogSumExp: return 3 * n;
    default: return n;
  }
}

void add_reduce(OpRegistry& r, const std::string& name, RK k) {
  r.add({.name = name,
         .min_opset = 1,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = (k == RK::Sum || k == RK::Mean) ? std::vector<int>{0} : std::vector<int>{},
         .infer = [k](InferContext& c) { infer_reduce(c, k); },
         .reference = [k](const KernelContext& c) { return reduce_kernel(c, k); },
         .flops = [k](const Node&, const std::vector<const TensorType*>& ins,
                      const std::vector<TensorType>&) { return reduce_flops(k, ins); },
         .attributes = {ints_attr("axes", {}), int_attr("keepdims", 1), int_attr("noop_with_empty_axes", 0)}});
}

}  // namespace

ReduceAttrs reduce_attrs(const OpAttrs& a) {
  return {a.ints("axes"), a.i("keepdims") != 0, a.i("noop_with_empty_axes") != 0};
}

std::vector<int64_t> resolve_reduce_axes(const Node& n, const ReduceAttrs& a, std::vector<int64_t> axes, int64_t rank) {
  if (axes.empty()) {
    if (a.noop_with_empty_axes) return {};
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t& x : axes) {
    TESSERA_CHECK(x >= -rank && x < rank, n.describe(), ": axis ", x, " is out of range for rank ", rank);
    if (x < 0) x += rank;
  }
  std::sort(axes.begin(), axes.end());
  TESSERA_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), n.describe(),
                ": axes contain a repeated axis");
  return axes;
}

void register_reduce_ops(OpRegistry& r) {
  add_reduce(r, "ReduceSum", RK::Sum);
  add_reduce(r, "ReduceMean", RK::Mean);
  add_reduce(r, "ReduceMax", RK::Max);
  add_reduce(r, "ReduceMin", RK::Min);
  add_reduce(r, "ReduceProd", RK::Prod);
  add_reduce(r, "ReduceL1", RK::L1);
  add_reduce(r, "ReduceL2", RK::L2);
  add_reduce(r, "ReduceLogSum", RK::LogSum);
  add_reduce(r, "ReduceLogSumExp", RK::LogSumExp);
  add_reduce(r, "ReduceSumSquare", RK::SumSquare);
  register_reduce_arg_ops(r);
  register_reduce_cum_ops(r);
  register_reduce_det_ops(r);
}

}  // namespace tessera
