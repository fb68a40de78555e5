// Shared pieces of the data-movement op family: element copies that work for
// every dtype (by storage width, strings by value), index helpers, and the
// per-file registration functions called from register_tensor_ops.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

// The value of a Constant node (its one value attribute); throws naming the
// node for sparse or string constants or when not exactly one is set.
Tensor constant_value(const OpAttrs& attrs);
// ConstantOfShape's fill value: the one-element `value` tensor, float 0 when
// absent (ONNX's default); shared by the reference and the expression.
Tensor constant_of_shape_value(const OpAttrs& attrs);

// Calls f.template operator()<W>() with W a type of the same width as the
// elements of `t` (uint8_t .. uint64_t), or std::string for string tensors.
// Data movement only needs to copy elements, never to interpret them.
template <class F>
decltype(auto) dispatch_storage(DType t, F&& f) {
  if (t == DType::String) return f.template operator()<std::string>();
  switch (dtype_size(t)) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default:
      throw std::invalid_argument("unsupported element type " + std::string(dtype_name(t)));
  }
}

// Element pointer of a tensor viewed as storage type W (see dispatch_storage).
template <class W>
W* elems(Tensor& t) {
  if constexpr (std::is_same_v<W, std::string>)
    return t.strings().data();
  else
    return static_cast<W*>(t.raw());
}
template <class W>
const W* elems(const Tensor& t) {
  if constexpr (std::is_same_v<W, std::string>)
    return t.strings().data();
  else
    return static_cast<const W*>(t.raw());
}

// dst[i] = src[index(i)] for every element i of dst (same dtype).
template <class IndexFn>
void copy_indexed(const Tensor& src, Tensor& dst, IndexFn index) {
  dispatch_storage(src.dtype(), [&]<class W>() {
    const W* s = elems<W>(src);
    W* d = elems<W>(dst);
    for (int64_t i = 0; i < dst.numel(); ++i) d[i] = s[index(i)];
  });
}

// dst[idx] = src[base + sum_k idx[k] * strides[k]] over dst's row-major
// multi-index idx (strides are per dst axis, in src elements; 0 repeats).
void copy_strided(const Tensor& src, Tensor& dst, int64_t base, const Dims& strides);

// A deep copy with new dims (same element count).
Tensor copy_reshaped(const Tensor& x, Dims dims);

// Row-major multi-index counter over `dims`: visits every index in order.
struct NdCounter {
  Dims dims;
  Dims idx;
  explicit NdCounter(Dims d) : dims(std::move(d)), idx(dims.size(), 0) {}
  // Advances to the next index; false after the last one.
  bool next() {
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) return true;
      idx[k] = 0;
    }
    return false;
  }
};

// Integer contents of input i (shape / axes / indices tensors).
std::vector<int64_t> input_ints(const KernelContext& c, int i);
// Requires input i's dtype to be one of int32/int64 (index inputs).
void check_index_dtype(const Node& n, DType t, const char* what);
// A type with unknown rank.
TensorType unknown_rank(DType t);
// Product of dims, -1 if any is unknown.
int64_t known_product(const Dims& d, size_t from, size_t to);
// A dim merged from two candidates (-1 unknown); throws naming the node on conflict.
int64_t merge_dim(const Node& n, int64_t a, int64_t b, const char* what);
// Normalises and checks a list of axes (no repeats) for the given rank.
std::vector<int64_t> normalize_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank);
// A scatter's `reduction` attribute (none, add, mul, max, min); throws naming the node otherwise.
enum class Reduction { None, Add, Mul, Max, Min };
Reduction reduction_of(const OpAttrs& attrs);
// Shape's [start, end) of a rank-r value's dims (opset 15 attributes),
// clamped; shared with constant folding.
std::pair<int64_t, int64_t> shape_range(const OpAttrs& attrs, int64_t r);
// FLOPs of pure data movement: none.
double zero_flops(const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&);

// Per-file registration.
void register_tensor_shape_ops(OpRegistry& r);    // Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Identity
void register_tensor_layout_ops(OpRegistry& r);   // Transpose, DepthToSpace, SpaceToDepth, Trilu, ReverseSequence
void register_tensor_concat_ops(OpRegistry& r);   // Concat, Split, Slice
void register_tensor_gather_ops(OpRegistry& r);   // Gather, GatherElements, GatherND, Compress
void register_tensor_scatter_ops(OpRegistry& r);  // ScatterND, ScatterElements, Scatter
void register_tensor_pad_ops(OpRegistry& r);      // Pad, CenterCropPad, Expand, Tile
void register_tensor_gen_ops(OpRegistry& r);      // Constant, ConstantOfShape, Range, EyeLike, OneHot
void register_tensor_select_ops(OpRegistry& r);   // NonZero, Unique

}  // namespace tessera
