// Det: determinants of the trailing square matrices of a [..., M, M] tensor,
// by LU decomposition with partial pivoting in double.
#include <cmath>

#include "ops/op_helpers.h"
#include "ops/reduce_ops.h"

namespace tessera {

namespace {

void infer_det(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": input must be a float tensor, got ", dtype_name(x.dtype));
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got ", x.to_string());
  int64_t m = x.dims[x.dims.size() - 2], n = x.dims.back();
  TESSERA_CHECK(m < 0 || n < 0 || m == n, c.node.describe(), ": matrices must be square, got ", x.to_string());
  TensorType t = x;
  t.dims.resize(t.dims.size() - 2);
  c.out(0) = t;
}

double determinant(std::vector<double>& a, int64_t n) {
  double det = 1;
  for (int64_t col = 0; col < n; ++col) {
    int64_t piv = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::fabs(a[static_cast<size_t>(r * n + col)]) > std::fabs(a[static_cast<size_t>(piv * n + col)])) piv = r;
    double p = a[static_cast<size_t>(piv * n + col)];
    if (p == 0) return 0.0;
    if (piv != col) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[static_cast<size_t>(piv * n + k)], a[static_cast<size_t>(col * n + k)]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      double f = a[static_cast<size_t>(r * n + col)] / p;
      if (f == 0) continue;
      for (int64_t k = col; k < n; ++k) a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(col * n + k)];
    }
  }
  return det;
}

std::vector<Tensor> det_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.rank() >= 2, c.node.describe(), ": input must have rank >= 2, got shape ",
                dims_to_string(x.dims()));
  int64_t n = x.dim(-1);
  TESSERA_CHECK(x.dim(-2) == n, c.node.describe(), ": matrices must be square, got shape ", dims_to_string(x.dims()));
  Dims od(x.dims().begin(), x.dims().end() - 2);
  Tensor y(x.dtype(), od);
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::vector<double> a(static_cast<size_t>(n * n));
    for (int64_t b = 0; b < y.numel(); ++b) {
      for (int64_t i = 0; i < n * n; ++i)
        a[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(px[b * n * n + i]));
      py[b] = saturate_cast<T>(determinant(a, n));
    }
  }, "Det");
  return {y};
}

}  // namespace

void register_reduce_det_ops(OpRegistry& r) {
  r.add({.name = "Det",
         .min_opset = 11,
         .mapping = MappingType::ManyToMany,
         .linear_inputs = {},
         .infer = infer_det,
         .reference = det_kernel,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           // LU: ~2/3 n^3 per matrix.
           const Dims& d = ins[0]->dims;
           double n = static_cast<double>(d.back());
           return static_cast<double>(numel_of(d)) / std::max(1.0, n * n) * (2.0 / 3.0) * n * n * n;
         },
         .attributes = {}});
}

}  // namespace tessera
