// Softmax, LogSoftmax and Hardmax. Since opset 13 they work along `axis`
// (default -1); before, the input is coerced to 2-D at `axis` (default 1) and
// each row of the flattened trailing dims is normalized.
#include <cmath>
#include <limits>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

// Row layout: `outer` blocks of `len` values strided by `inner`.
struct RowLayout {
  int64_t outer = 1, len = 1, inner = 1;
};

RowLayout row_layout(const Node& n, int64_t opset, const Dims& d) {
  const int64_t rank = static_cast<int64_t>(d.size());
  const bool old = opset < 13;
  int64_t axis = OpAttrs(n, opset).i("axis");
  RowLayout r;
  if (rank == 0) return r;
  if (old) {
    TESSERA_CHECK(axis >= -rank && axis <= rank, n.describe(), ": axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    for (int64_t i = 0; i < axis; ++i) r.outer *= d[static_cast<size_t>(i)];
    r.len = 1;
    for (int64_t i = axis; i < rank; ++i) r.len *= d[static_cast<size_t>(i)];
    return r;
  }
  axis = normalize_axis(n, axis, rank);
  for (int64_t i = 0; i < axis; ++i) r.outer *= d[static_cast<size_t>(i)];
  r.len = d[static_cast<size_t>(axis)];
  for (int64_t i = axis + 1; i < rank; ++i) r.inner *= d[static_cast<size_t>(i)];
  return r;
}

void infer_soft(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  if (c.opset >= 13 && x.rank() > 0) normalize_axis(c.node, op_attrs(c).i("axis"), x.rank());
  c.out(0) = x;
}

std::vector<Tensor> run_soft(const KernelContext& c, SoftKind kind) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype()));
  RowLayout r = row_layout(c.node, c.opset, x.dims());
  Tensor y(x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    std::vector<double> row(static_cast<size_t>(r.len));
    for (int64_t o = 0; o < r.outer; ++o)
      for (int64_t in = 0; in < r.inner; ++in) {
        const int64_t base = o * r.len * r.inner + in;
        double mx = -std::numeric_limits<double>::infinity();
        int64_t arg = 0;
        for (int64_t j = 0; j < r.len; ++j) {
          double v = static_cast<double>(static_cast<compute_t<T>>(xp[base + j * r.inner]));
          row[static_cast<size_t>(j)] = v;
          if (v > mx) {
            mx = v;
            arg = j;
          }
        }
        if (kind == SoftKind::Hardmax) {
          for (int64_t j = 0; j < r.len; ++j)
            yp[base + j * r.inner] = to_storage<T>(static_cast<compute_t<T>>(j == arg ? 1.0 : 0.0));
          continue;
        }
        double sum = 0;
        for (double& v : row) {
          v = std::exp(v - mx);
          sum += v;
        }
        for (int64_t j = 0; j < r.len; ++j) {
          double e = row[static_cast<size_t>(j)];
          double v = kind == SoftKind::Softmax ? e / sum
                                               : static_cast<double>(static_cast<compute_t<T>>(xp[base + j * r.inner])) -
                                                     mx - std::log(sum);
          yp[base + j * r.inner] = to_storage<T>(static_cast<compute_t<T>>(v));
        }
      }
  }, c.node.op_type.c_str());
  return {y};
}

}  // namespace

void register_nn_softmax_ops(OpRegistry& r) {
  auto fl = [](double per) {
    return [per](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
      return per * prod_dims(ins[0]->dims);
    };
  };
  // The axis: before opset 13 the input is flattened to 2-D at `axis` (default
  // 1); from 13 the op runs along `axis` (default -1).
  const AttrSpec softmax_axis = int_attr("axis", 1).default_from(13, Attribute::of_int(-1));
  r.add({.name = "Softmax", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_soft, .reference = [](const KernelContext& c) { return run_soft(c, SoftKind::Softmax); },
         .flops = fl(5.0), .attributes = {softmax_axis}});
  r.add({.name = "LogSoftmax", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_soft, .reference = [](const KernelContext& c) { return run_soft(c, SoftKind::LogSoftmax); },
         .flops = fl(5.0), .attributes = {softmax_axis}});
  r.add({.name = "Hardmax", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_soft, .reference = [](const KernelContext& c) { return run_soft(c, SoftKind::Hardmax); },
         .flops = fl(1.0), .attributes = {softmax_axis}});
}

}  // namespace tessera
