// Larger neural-network ops: attention, resize, recurrent nets, signal
// processing, losses and vision ops. Each family lives in its own file.
#include "ops/nn_extra.h"

namespace tessera {

void register_nn_extra_ops(OpRegistry& r) {
  register_resize_ops(r);
  register_attention_ops(r);
  register_rnn_ops(r);
  register_loss_ops(r);
  register_signal_ops(r);
  register_vision_ops(r);
}

}  // namespace tessera
