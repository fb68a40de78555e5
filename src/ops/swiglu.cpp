// SwiGLU (opset 28): Y = Swish_alpha(A) * B = A * sigmoid(alpha * A) * B for a
// gate A and a value B of identical shapes (no broadcasting, per the spec).
// Each output element reads exactly the two input elements at its own index,
// so the op is one-to-one (like an unbroadcast Mul); a model with one packed
// projection splits it into A and B upstream with Split or Slice, which keeps
// that reorganization visible to the optimizer. It is linear in B for fixed A.
#include <cmath>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

void infer_swiglu(InferContext& c) {
  const TensorType& a = c.in(0);
  const TensorType& b = c.in(1);
  TESSERA_CHECK(a.dtype == DType::Undefined || is_float(a.dtype), c.node.describe(),
                ": A must be a float tensor, got ", dtype_name(a.dtype));
  check_same_dtype(c.node, {&a, &b});
  TensorType t = a;
  if (t.dtype == DType::Undefined) t.dtype = b.dtype;
  if (a.rank_known && b.rank_known) {
    TESSERA_CHECK(a.rank() == b.rank(), c.node.describe(), ": A ", a.to_string(), " and B ", b.to_string(),
                  " must have the same shape (SwiGLU does not broadcast)");
    for (size_t i = 0; i < t.dims.size(); ++i) {
      TESSERA_CHECK(a.dims[i] < 0 || b.dims[i] < 0 || a.dims[i] == b.dims[i], c.node.describe(), ": A ",
                    a.to_string(), " and B ", b.to_string(), " must have the same shape (SwiGLU does not broadcast)");
      if (t.dims[i] < 0) t.dims[i] = b.dims[i];
    }
  } else if (!a.rank_known) {
    t.dims = b.dims;
    t.rank_known = b.rank_known;
  }
  c.out(0) = t;
}

std::vector<Tensor> run_swiglu(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  TESSERA_CHECK(a.dtype() == b.dtype(), c.node.describe(), ": A is ", dtype_name(a.dtype()), " but B is ",
                dtype_name(b.dtype()));
  TESSERA_CHECK(a.dims() == b.dims(), c.node.describe(), ": A [", dims_to_string(a.dims()), "] and B [",
                dims_to_string(b.dims()), "] must have the same shape (SwiGLU does not broadcast)");
  const double alpha = op_attrs(c).f("alpha");
  Tensor y(a.dtype(), a.dims());
  dispatch_float(a.dtype(), [&]<class T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      double x = static_cast<double>(static_cast<compute_t<T>>(pa[i]));
      double v = static_cast<double>(static_cast<compute_t<T>>(pb[i]));
      double gate = x / (1.0 + std::exp(-alpha * x));
      py[i] = to_storage<T>(static_cast<compute_t<T>>(gate * v));
    }
  }, "SwiGLU");
  return {y};
}

}  // namespace

void register_swiglu_ops(OpRegistry& r) {
  // FLOPs per element: alpha*a, exp, 1+e, a/(1+e), times b.
  r.add({.name = "SwiGLU", .min_opset = 28, .mapping = MappingType::OneToOne, .linear_inputs = {1},
         .infer = infer_swiglu, .reference = run_swiglu,
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>& outs) {
           return outs.empty() ? 0.0 : 5.0 * static_cast<double>(numel_of(outs[0].dims));
         },
         .attributes = {float_attr("alpha", 1.0f)}});
}

}  // namespace tessera
