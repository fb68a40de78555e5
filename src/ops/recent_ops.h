// Registration hooks of the ops added in the newest ONNX opsets (24 to 28 and
// the ai.onnx.preview domain), one file each, called from register_nn_extra_ops.
#pragma once

#include "ops/registry.h"

namespace tessera {

void register_bitcast_ops(OpRegistry& r);           // BitCast (26)
void register_swiglu_ops(OpRegistry& r);            // SwiGLU (28)
void register_tensor_scatter_cache_ops(OpRegistry& r);    // TensorScatter (24)
void register_causal_conv_ops(OpRegistry& r);       // CausalConvWithState (27)
void register_linear_attention_ops(OpRegistry& r);  // LinearAttention (27)
void register_flex_attention_ops(OpRegistry& r);    // ai.onnx.preview FlexAttention (1)

}  // namespace tessera
