// Larger neural-network ops: attention, resize, recurrent nets, signal
// processing, losses, vision ops and the ops of the newest opsets (BitCast,
// SwiGLU, TensorScatter, CausalConvWithState, LinearAttention, FlexAttention).
// Each family lives in its own file.
#include "ops/nn_extra.h"
#include "ops/recent_ops.h"

namespace tessera {

void register_nn_extra_ops(OpRegistry& r) {
  register_resize_ops(r);
  register_attention_ops(r);
  register_rnn_ops(r);
  register_loss_ops(r);
  register_signal_ops(r);
  register_vision_ops(r);
  register_bitcast_ops(r);
  register_swiglu_ops(r);
  register_tensor_scatter_cache_ops(r);
  register_causal_conv_ops(r);
  register_linear_attention_ops(r);
  register_flex_attention_ops(r);
}

}  // namespace tessera
