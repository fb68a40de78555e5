// TensorScatter (opset 24): a functional KV-cache update. present_cache is
// past_cache with, for every batch entry b and every index prefix before
// `axis`, the update's sequence rows written at write_indices[b] + s along
// `axis` (s < sequence_length). In "circular" mode the position wraps modulo
// max_sequence_length; in "linear" mode it must stay inside the cache.
// write_indices defaults to zeros. Elements are moved as bytes (any dtype).
#include <cstring>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

bool circular_mode(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string mode = attrs.s("mode");
  TESSERA_CHECK(mode == "linear" || mode == "circular", n.describe(), ": mode must be 'linear' or 'circular', got '",
                mode, "'");
  return mode == "circular";
}

int64_t cache_axis(const OpAttrs& attrs, int64_t rank) {
  const Node& n = attrs.node();
  TESSERA_CHECK(rank >= 2, n.describe(), ": past_cache must have rank >= 2 (batch and sequence axes), got rank ",
                rank);
  int64_t axis = normalize_axis(n, attrs.i("axis"), rank);
  TESSERA_CHECK(axis != 0, n.describe(), ": axis must not be the batch axis 0");
  return axis;
}

void infer_tensor_scatter(InferContext& c) {
  circular_mode(op_attrs(c));
  const TensorType& past = c.in(0);
  const TensorType& upd = c.in(1);
  TESSERA_CHECK(past.dtype != DType::String, c.node.describe(), ": string caches are not supported");
  check_same_dtype(c.node, {&past, &upd});
  if (c.has_input(2)) {
    const TensorType& wi = c.in(2);
    TESSERA_CHECK(wi.dtype == DType::Undefined || wi.dtype == DType::I64, c.node.describe(),
                  ": write_indices must be int64, got ", dtype_name(wi.dtype));
    TESSERA_CHECK(!wi.rank_known || wi.rank() == 1, c.node.describe(), ": write_indices must be 1-D, got ",
                  wi.to_string());
    if (wi.rank_known && past.rank_known && past.rank() >= 1)
      TESSERA_CHECK(wi.dims[0] < 0 || past.dims[0] < 0 || wi.dims[0] == past.dims[0], c.node.describe(),
                    ": write_indices has ", wi.dims[0], " entries but the batch size is ", past.dims[0]);
  }
  TensorType t = past;
  if (t.dtype == DType::Undefined) t.dtype = upd.dtype;
  if (past.rank_known) {
    int64_t axis = cache_axis(op_attrs(c), past.rank());
    if (upd.rank_known) {
      TESSERA_CHECK(upd.rank() == past.rank(), c.node.describe(), ": update ", upd.to_string(),
                    " must have the rank of past_cache ", past.to_string());
      for (size_t i = 0; i < t.dims.size(); ++i) {
        int64_t p = past.dims[i], u = upd.dims[i];
        if (p < 0 || u < 0) {
          if (static_cast<int64_t>(i) != axis && p < 0) t.dims[i] = u;
          continue;
        }
        if (static_cast<int64_t>(i) == axis)
          TESSERA_CHECK(u <= p, c.node.describe(), ": the update's sequence length ", u,
                        " exceeds the cache's max_sequence_length ", p);
        else
          TESSERA_CHECK(u == p, c.node.describe(), ": update ", upd.to_string(), " and past_cache ",
                        past.to_string(), " differ in dimension ", i);
      }
    }
  }
  c.out(0) = t;
}

std::vector<Tensor> run_tensor_scatter(const KernelContext& c) {
  const Node& n = c.node;
  const bool circular = circular_mode(op_attrs(c));
  const Tensor& past = c.in(0);
  const Tensor& upd = c.in(1);
  TESSERA_CHECK(past.dtype() != DType::String, n.describe(), ": string caches are not supported");
  TESSERA_CHECK(past.dtype() == upd.dtype(), n.describe(), ": past_cache is ", dtype_name(past.dtype()),
                " but update is ", dtype_name(upd.dtype()));
  const int64_t rank = past.rank();
  const int64_t axis = cache_axis(op_attrs(c), rank);
  TESSERA_CHECK(upd.rank() == rank, n.describe(), ": update [", dims_to_string(upd.dims()),
                "] must have the rank of past_cache [", dims_to_string(past.dims()), "]");
  for (int64_t i = 0; i < rank; ++i)
    TESSERA_CHECK(i == axis ? upd.dim(i) <= past.dim(i) : upd.dim(i) == past.dim(i), n.describe(), ": update [",
                  dims_to_string(upd.dims()), "] does not fit past_cache [", dims_to_string(past.dims()),
                  "] (only the sequence axis ", axis, " may be shorter)");
  const int64_t batch = past.dim(0), max_seq = past.dim(axis), seq = upd.dim(axis);
  std::vector<int64_t> idx(static_cast<size_t>(batch), 0);
  if (c.has_input(2)) {
    const Tensor& wi = c.in(2);
    TESSERA_CHECK(wi.dtype() == DType::I64 && wi.rank() == 1 && wi.dim(0) == batch, n.describe(),
                  ": write_indices must be int64 of shape [", batch, "], got ", dtype_name(wi.dtype()), "[",
                  dims_to_string(wi.dims()), "]");
    idx = wi.to_int_vector();
  }
  for (int64_t b = 0; b < batch; ++b) {
    int64_t w = idx[static_cast<size_t>(b)];
    TESSERA_CHECK(w >= 0, n.describe(), ": write_indices[", b, "] = ", w, " is negative");
    if (!circular)
      TESSERA_CHECK(w + seq <= max_seq, n.describe(), ": write_indices[", b, "] = ", w, " plus the update length ",
                    seq, " exceeds max_sequence_length ", max_seq, " (use mode 'circular' to wrap)");
  }
  Tensor out = past.clone();
  // Row = the contiguous block after `axis`; prefix = the dims before it.
  size_t row = dtype_size(past.dtype());
  for (int64_t i = axis + 1; i < rank; ++i) row *= static_cast<size_t>(past.dim(i));
  int64_t per_batch = 1;  // prefixes per batch entry (dims 1 .. axis-1)
  for (int64_t i = 1; i < axis; ++i) per_batch *= past.dim(i);
  const char* src = static_cast<const char*>(upd.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < per_batch; ++p) {
      int64_t prefix = b * per_batch + p;
      for (int64_t s = 0; s < seq; ++s) {
        int64_t pos = idx[static_cast<size_t>(b)] + s;
        if (circular) pos %= max_seq;
        std::memcpy(dst + static_cast<size_t>(prefix * max_seq + pos) * row,
                    src + static_cast<size_t>(prefix * seq + s) * row, row);
      }
    }
  return {out};
}

}  // namespace

void register_tensor_scatter_cache_ops(OpRegistry& r) {
  r.add({.name = "TensorScatter", .min_opset = 24, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_tensor_scatter, .reference = run_tensor_scatter,
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return 0.0;
         },
         .attributes = {int_attr("axis", -2), string_attr("mode", "linear")}});
}

}  // namespace tessera
