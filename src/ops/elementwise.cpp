// Elementwise op family: unary math, activations, binary arithmetic with
// broadcasting, variadic ops, comparisons and logic, casts and quantization.
// Each concept lives in its own file; this one registers them all.
#include "ops/elementwise_common.h"

namespace tessera {

void register_elementwise_ops(OpRegistry& r) {
  register_ew_unary_ops(r);
  register_ew_activation_ops(r);
  register_ew_binary_ops(r);
  register_ew_variadic_ops(r);
  register_ew_logic_ops(r);
  register_cast_ops(r);
  register_quantize_ops(r);
}

}  // namespace tessera
