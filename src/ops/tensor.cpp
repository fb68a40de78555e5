// Data-movement and shape ops: reshape, transpose, concat, split, slice, gather, scatter, pad, expand, tile.
// This file holds the family's shared helpers and calls the per-file registrations.
#include "ops/tensor_common.h"

#include <algorithm>

namespace tessera {

Tensor copy_reshaped(const Tensor& x, Dims dims) {
  Tensor y(x.dtype(), std::move(dims));
  TESSERA_CHECK(y.numel() == x.numel(), "cannot reshape ", dims_to_string(x.dims()), " to ",
                dims_to_string(y.dims()));
  if (x.dtype() == DType::String)
    y.strings() = x.strings();
  else if (x.nbytes())
    std::memcpy(y.raw(), x.raw(), x.nbytes());
  return y;
}

void copy_strided(const Tensor& src, Tensor& dst, int64_t base, const Dims& strides) {
  const Dims& d = dst.dims();
  if (dst.numel() == 0) return;
  dispatch_storage(src.dtype(), [&]<class W>() {
    const W* s = elems<W>(src);
    W* o = elems<W>(dst);
    size_t r = d.size();
    if (r == 0) {
      o[0] = s[base];
      return;
    }
    Dims idx(r, 0);
    int64_t off = base;
    int64_t inner = d[r - 1], inner_stride = strides[r - 1];
    for (int64_t i = 0; i < dst.numel(); i += inner) {
      for (int64_t j = 0; j < inner; ++j) o[i + j] = s[off + j * inner_stride];
      // Advance the outer index (all axes but the last).
      for (size_t k = r - 1; k-- > 0;) {
        off += strides[k];
        if (++idx[k] < d[k]) break;
        off -= strides[k] * d[k];
        idx[k] = 0;
      }
    }
  });
}

std::vector<int64_t> input_ints(const KernelContext& c, int i) {
  const Tensor& t = c.in(i);
  TESSERA_CHECK(is_integer(t.dtype()), c.node.describe(), ": input ", i, " must be an integer tensor, got ",
                dtype_name(t.dtype()));
  return t.to_int_vector();
}

void check_index_dtype(const Node& n, DType t, const char* what) {
  TESSERA_CHECK(t == DType::I32 || t == DType::I64 || t == DType::Undefined, n.describe(), ": ", what,
                " must be int32 or int64, got ", dtype_name(t));
}

TensorType unknown_rank(DType t) {
  TensorType r;
  r.dtype = t;
  r.rank_known = false;
  return r;
}

int64_t known_product(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) {
    if (d[i] < 0) return -1;
    p *= d[i];
  }
  return p;
}

int64_t merge_dim(const Node& n, int64_t a, int64_t b, const char* what) {
  if (a < 0) return b;
  if (b < 0) return a;
  TESSERA_CHECK(a == b, n.describe(), ": ", what, " (", a, " vs ", b, ")");
  return a;
}

std::vector<int64_t> normalize_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    TESSERA_CHECK(a >= -rank && a < rank, n.describe(), ": axis ", a, " is out of range for rank ", rank);
    int64_t v = a < 0 ? a + rank : a;
    TESSERA_CHECK(std::find(out.begin(), out.end(), v) == out.end(), n.describe(), ": axis ", a,
                  " is repeated");
    out.push_back(v);
  }
  return out;
}

double zero_flops(const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
  return 0;
}

void register_tensor_ops(OpRegistry& r) {
  register_tensor_shape_ops(r);
  register_tensor_layout_ops(r);
  register_tensor_concat_ops(r);
  register_tensor_gather_ops(r);
  register_tensor_scatter_ops(r);
  register_tensor_pad_ops(r);
  register_tensor_gen_ops(r);
  register_tensor_select_ops(r);
}

}  // namespace tessera
