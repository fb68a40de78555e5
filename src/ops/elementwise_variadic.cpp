// Variadic elementwise ops with numpy broadcasting across all inputs:
// Sum Mean Max Min. Max/Min propagate NaN like numpy's maximum/minimum.
// Before opset 8 the inputs must have equal shapes (no broadcasting).
#include "ops/elementwise_common.h"

namespace tessera {

namespace {

using namespace ew;

template <unsigned Mask>
void infer_variadic(InferContext& c) {
  TESSERA_CHECK(c.num_inputs() >= 1, c.node.describe(), ": needs at least one input");
  for (int i = 0; i < c.num_inputs(); ++i) {
    TESSERA_CHECK(c.has_input(i), c.node.describe(), ": input ", i, " is missing");
    require_type(c.node, c.in(i).dtype, Mask);
  }
  check_same_dtype(c.node, c.input_types);
  c.out(0) = broadcast_types(c.node, c.input_types);
}

// Folds f(acc, v) over all inputs elementwise; Mean divides the sum by n.
template <unsigned Mask, class F>
std::vector<Tensor> fold_inputs(const KernelContext& c, F f, bool mean = false) {
  TESSERA_CHECK(c.num_inputs() >= 1, c.node.describe(), ": needs at least one input");
  const Tensor& x0 = c.in(0);
  Dims od = x0.dims();
  for (int i = 1; i < c.num_inputs(); ++i) {
    TESSERA_CHECK(c.in(i).dtype() == x0.dtype(), c.node.describe(), ": inputs have different element types (",
                  dtype_name(x0.dtype()), " and ", dtype_name(c.in(i).dtype()), ")");
    od = broadcast_dims(c.node, od, c.in(i).dims());
  }
  Tensor y(x0.dtype(), od);
  dispatch_mask<Mask>(c.node, x0.dtype(), [&]<class T>() {
    using W = work_t<T>;
    std::vector<W> acc(static_cast<size_t>(y.numel()));
    for (int k = 0; k < c.num_inputs(); ++k) {
      const Tensor& x = c.in(k);
      BroadcastIndexer ix(x.dims(), od);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) {
        W v = load(p[ix(i)]);
        acc[static_cast<size_t>(i)] = k == 0 ? v : f(acc[static_cast<size_t>(i)], v);
      }
    }
    T* o = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      W v = acc[static_cast<size_t>(i)];
      if constexpr (std::is_floating_point_v<W>)
        if (mean) v /= static_cast<W>(c.num_inputs());
      o[i] = store<T>(v);
    }
  });
  return {y};
}

// (inputs - 1) operations per output element; Mean adds the division.
FlopsFn fold_flops(int extra) {
  return [extra](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
    return static_cast<double>(numel_of(outs.at(0).dims)) * static_cast<double>(ins.size() - 1 + extra);
  };
}

template <unsigned Mask, class F>
void add_variadic(OpRegistry& r, const char* name, F f, bool mean = false) {
  r.add(with_equal_shapes_before(
      {.name = name, .min_opset = 8, .mapping = MappingType::OneToOne, .broadcasts = true,
       .infer = infer_variadic<Mask>,
       .reference = [f, mean](const KernelContext& c) { return fold_inputs<Mask>(c, f, mean); },
       .flops = fold_flops(mean ? 1 : 0)},
      8));
}

}  // namespace

void register_ew_variadic_ops(OpRegistry& r) {
  auto sum = [](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) return wrap_add(a, b);
    else return a + b;
  };
  add_variadic<kNumeric>(r, "Sum", sum);
  add_variadic<kFloat>(r, "Mean", sum, true);
  add_variadic<kNumeric>(r, "Max", [](auto a, auto b) {
    if constexpr (std::is_floating_point_v<decltype(a)>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return a < b ? b : a;
  });
  add_variadic<kNumeric>(r, "Min", [](auto a, auto b) {
    if constexpr (std::is_floating_point_v<decltype(a)>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return b < a ? b : a;
  });
}

}  // namespace tessera
