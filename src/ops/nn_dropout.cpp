// Dropout. In inference (the default) it is the identity with an all-true
// mask. In training mode (opset 12+ training_mode input, or is_test=0 before
// opset 7) elements are dropped with probability `ratio` by a deterministic
// generator seeded from the `seed` attribute, and survivors scaled by
// 1/(1-ratio).
#include <random>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

DType mask_dtype(int64_t opset, DType data) { return opset >= 10 ? DType::Bool : data; }

void infer_dropout(InferContext& c) {
  const TensorType& x = c.in(0);
  c.out(0) = x;
  if (c.num_outputs() > 1) c.out(1) = TensorType{mask_dtype(c.opset, x.dtype), x.dims, x.rank_known};
}

std::vector<Tensor> run_dropout(const KernelContext& c) {
  const Tensor& x = c.in(0);
  bool training = false;
  double ratio = 0.5;
  if (c.opset >= 12) {
    if (c.has_input(1)) {
      TESSERA_CHECK(c.in(1).numel() == 1, c.node.describe(), ": ratio must be a scalar");
      ratio = c.in(1).get_double(0);
    }
    if (c.has_input(2)) {
      TESSERA_CHECK(c.in(2).numel() == 1, c.node.describe(), ": training_mode must be a scalar");
      training = c.in(2).get_int(0) != 0;
    }
  } else {
    ratio = op_attrs(c).f("ratio");
    if (c.opset < 7) training = op_attrs(c).i("is_test") == 0;
  }
  TESSERA_CHECK(ratio >= 0 && ratio < 1, c.node.describe(), ": ratio must be in [0, 1), got ", ratio);
  const DType mt = mask_dtype(c.opset, x.dtype());
  Tensor mask(mt, x.dims());
  if (!training || ratio == 0) {
    dispatch_dtype(mt, [&]<class M>() {
      M* m = mask.data<M>();
      for (int64_t i = 0; i < x.numel(); ++i) m[i] = to_storage<M>(1);
    });
    return {x.clone(), mask};
  }
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": training-mode dropout needs a float input");
  std::mt19937_64 rng(static_cast<uint64_t>(op_attrs(c).i("seed")));
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  Tensor y(x.dtype(), x.dims());
  const double scale = 1.0 / (1.0 - ratio);
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool keep = uni(rng) >= ratio;
      yp[i] = to_storage<T>(static_cast<compute_t<T>>(keep ? static_cast<double>(static_cast<compute_t<T>>(xp[i])) * scale : 0.0));
      dispatch_dtype(mt, [&]<class M>() { mask.data<M>()[i] = to_storage<M>(keep ? 1 : 0); });
    }
  }, "Dropout");
  return {y, mask};
}

}  // namespace

void register_nn_dropout_ops(OpRegistry& r) {
  r.add({.name = "Dropout", .min_opset = 1, .mapping = MappingType::OneToOne, .linear_inputs = {0},
         .infer = infer_dropout, .reference = run_dropout,
         .attributes = {float_attr("ratio", 0.5f), int_attr("seed", 0), int_attr("is_test", 0),
                        ints_attr("consumed_inputs")}});
}

}  // namespace tessera
