// Registration hooks of the larger neural-network op families (one file each),
// called from register_nn_extra_ops.
#pragma once

#include "ops/registry.h"

namespace tessera {

void register_resize_ops(OpRegistry& r);     // Resize, Upsample
void register_attention_ops(OpRegistry& r);  // Attention, RotaryEmbedding
void register_rnn_ops(OpRegistry& r);        // LSTM, GRU, RNN
void register_loss_ops(OpRegistry& r);       // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_signal_ops(OpRegistry& r);     // windows, DFT, STFT, MelWeightMatrix
void register_vision_ops(OpRegistry& r);     // GridSample, AffineGrid (+ the two below)
void register_roi_align_ops(OpRegistry& r);  // RoiAlign
void register_col2im_ops(OpRegistry& r);     // Col2Im, DeformConv

}  // namespace tessera
