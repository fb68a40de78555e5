// BitCast (opset 26): reinterprets each element's bytes as another element
// type of the same width (little-endian, as the host). The shape is kept.
// Reinterpreting a byte as bool is only defined for the bytes 0 and 1; any
// other byte is an error rather than an invalid C++ bool.
#include <cstring>

#include "ops/op_helpers.h"
#include "ops/op_attrs.h"
#include "ops/recent_ops.h"

namespace tessera {
namespace {

DType bitcast_target(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  int64_t to = attrs.i("to");
  TESSERA_CHECK(to >= 0 && to <= 0x7fffffff && dtype_supported(static_cast<int32_t>(to)), n.describe(),
                ": target type ", onnx_type_name(static_cast<int32_t>(to)), " (", to,
                ") is not supported by Tessera");
  DType t = static_cast<DType>(to);
  TESSERA_CHECK(t != DType::String && t != DType::Undefined, n.describe(), ": cannot bitcast to ", dtype_name(t));
  return t;
}

void check_widths(const Node& n, DType from, DType to) {
  TESSERA_CHECK(from != DType::String, n.describe(), ": cannot bitcast a string tensor");
  if (from == DType::Undefined) return;
  TESSERA_CHECK(dtype_size(from) == dtype_size(to), n.describe(), ": cannot bitcast ", dtype_name(from), " (",
                8 * dtype_size(from), " bits) to ", dtype_name(to), " (", 8 * dtype_size(to),
                " bits): the widths must be equal");
}

void infer_bitcast(InferContext& c) {
  DType to = bitcast_target(op_attrs(c));
  const TensorType& x = c.in(0);
  check_widths(c.node, x.dtype, to);
  TensorType t = x;
  t.dtype = to;
  c.out(0) = t;
}

std::vector<Tensor> run_bitcast(const KernelContext& c) {
  DType to = bitcast_target(op_attrs(c));
  const Tensor& x = c.in(0);
  check_widths(c.node, x.dtype(), to);
  Tensor y(to, x.dims());
  if (to == DType::Bool) {
    const auto* src = static_cast<const uint8_t*>(x.raw());
    bool* dst = y.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      TESSERA_CHECK(src[i] <= 1, c.node.describe(), ": element ", i, " has byte value ", static_cast<int>(src[i]),
                    " which is not a valid bool (only 0 and 1 are)");
      dst[i] = src[i] != 0;
    }
  } else if (x.nbytes() > 0) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
  }
  return {y};
}

}  // namespace

void register_bitcast_ops(OpRegistry& r) {
  r.add({.name = "BitCast", .min_opset = 26, .mapping = MappingType::OneToOne, .infer = infer_bitcast,
         .reference = run_bitcast,
         .flops = [](const Node&, const std::vector<const TensorType*>&, const std::vector<TensorType>&) {
           return 0.0;
         },
         .attributes = {int_attr("to").required()}});
}

}  // namespace tessera
