// Running reductions along one axis: CumSum (opset 11) and CumProd (opset 26,
// accepted at any opset Tessera imports), with the exclusive and reverse
// attributes. Integers wrap like the storage type; floats accumulate in double.
#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/reduce_ops.h"

namespace tessera {

namespace {

int64_t cum_axis(const Node& n, const Tensor& axis, int64_t rank) {
  TESSERA_CHECK(axis.dtype() == DType::I32 || axis.dtype() == DType::I64, n.describe(),
                ": axis must be an int32 or int64 tensor, got ", dtype_name(axis.dtype()));
  TESSERA_CHECK(axis.numel() == 1 && axis.rank() <= 1, n.describe(), ": axis must be a scalar, got shape ",
                dims_to_string(axis.dims()));
  TESSERA_CHECK(rank >= 1, n.describe(), ": input must have rank >= 1");
  return normalize_axis(n, axis.get_int(0), rank);
}

void check_cum_dtype(const Node& n, DType t) {
  TESSERA_CHECK(t != DType::Bool && t != DType::String && t != DType::Undefined, n.describe(),
                ": unsupported element type ", dtype_name(t));
}

void infer_cum(InferContext& c) {
  const TensorType& x = c.in(0);
  check_cum_dtype(c.node, x.dtype);
  const TensorType& a = c.in(1);
  TESSERA_CHECK(a.dtype == DType::I32 || a.dtype == DType::I64, c.node.describe(),
                ": axis must be an int32 or int64 tensor, got ", dtype_name(a.dtype));
  if (const Tensor* av = c.value(1)) cum_axis(c.node, *av, x.rank());
  c.out(0) = x;
}

std::vector<Tensor> cum_kernel(const KernelContext& c, bool prod) {
  const Tensor& x = c.in(0);
  check_cum_dtype(c.node, x.dtype());
  int64_t axis = cum_axis(c.node, c.in(1), x.rank());
  bool exclusive = op_attrs(c).i("exclusive") != 0;
  bool reverse = op_attrs(c).i("reverse") != 0;
  int64_t outer = 1, n = x.dim(axis), inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  Tensor y(x.dtype(), x.dims());
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    // Floats in double; integers modulo 2^64 (then truncated: wraps like T).
    using A = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
    auto load = [&](int64_t i) -> A {
      if constexpr (std::is_integral_v<T>)
        return static_cast<A>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(px[i]));
      else
        return static_cast<A>(static_cast<compute_t<T>>(px[i]));
    };
    auto store = [&](int64_t i, A v) {
      if constexpr (std::is_integral_v<T>) py[i] = static_cast<T>(v);
      else py[i] = saturate_cast<T>(v);
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        A acc = prod ? A(1) : A(0);
        for (int64_t s = 0; s < n; ++s) {
          int64_t j = reverse ? n - 1 - s : s;
          int64_t at = (o * n + j) * inner + in;
          A v = load(at);
          if (!exclusive) acc = prod ? acc * v : acc + v;
          store(at, acc);
          if (exclusive) acc = prod ? acc * v : acc + v;
        }
      }
  });
  return {y};
}

}  // namespace

void register_reduce_cum_ops(OpRegistry& r) {
  for (bool prod : {false, true}) {
    r.add({.name = prod ? "CumProd" : "CumSum",
           .min_opset = prod ? 1 : 11,
           .mapping = MappingType::ManyToMany,
           .linear_inputs = prod ? std::vector<int>{} : std::vector<int>{0},
           .infer = infer_cum,
           .reference = [prod](const KernelContext& c) { return cum_kernel(c, prod); },
           .attributes = {int_attr("exclusive", 0), int_attr("reverse", 0)}});
  }
}

}  // namespace tessera
