// Shared inference rules and broadcasting index helper.
#include "ops/op_helpers.h"

namespace tessera {

void infer_same_as_input0(InferContext& c) { c.out(0) = c.in(0); }

void infer_broadcast(InferContext& c) {
  check_same_dtype(c.node, c.input_types);
  c.out(0) = broadcast_types(c.node, c.input_types);
}

void infer_broadcast_bool(InferContext& c) {
  check_same_dtype(c.node, c.input_types);
  TensorType t = broadcast_types(c.node, c.input_types);
  t.dtype = DType::Bool;
  c.out(0) = t;
}

BroadcastIndexer::BroadcastIndexer(const Dims& in, const Dims& out) {
  identity_ = in == out;
  out_strides_ = strides_of(out);
  Dims istr = strides_of(in);
  in_strides_.assign(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) in_strides_[i + off] = in[i] == 1 ? 0 : istr[i];
}

int64_t BroadcastIndexer::operator()(int64_t out_index) const {
  if (identity_) return out_index;
  int64_t idx = 0;
  for (size_t d = 0; d < out_strides_.size(); ++d) {
    int64_t q = out_index / out_strides_[d];
    out_index -= q * out_strides_[d];
    idx += q * in_strides_[d];
  }
  return idx;
}

bool constant_ints(const InferContext& c, int i, std::vector<int64_t>& out) {
  const Tensor* t = c.value(i);
  if (!t) return false;
  out = t->to_int_vector();
  return true;
}

void check_same_dtype(const Node& n, const std::vector<const TensorType*>& ins) {
  DType d = DType::Undefined;
  for (const TensorType* t : ins) {
    if (!t || t->dtype == DType::Undefined) continue;
    if (d == DType::Undefined) d = t->dtype;
    TESSERA_CHECK(t->dtype == d, n.describe(), ": inputs have different element types (", dtype_name(d), " and ",
                  dtype_name(t->dtype), ")");
  }
}

}  // namespace tessera
