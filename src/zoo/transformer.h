// Transformer building blocks shared by the zoo's BERT, GPT-2 and ViT.
#pragma once

#include <string>

#include "zoo/builder.h"

namespace tessera::zoo {

struct AttentionShape {
  int64_t batch = 1;
  int64_t seq = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t head_dim() const { return hidden / heads; }
};

// Weight names of one attention layer's projections ("<prefix>.<q>.weight").
struct AttentionNames {
  std::string q, k, v, out;
};

enum class ScoreMask {
  None,      // plain softmax over the scores
  Additive,  // scores + mask (mask broadcastable to [B, H, S, S])
  Select,    // Where(mask, scores, float-min) with a bool mask
};

// Multi-head self-attention on h [B, S, hidden]: Q/K/V MatMul+Add, Reshape and
// Transpose into heads, MatMul, Div by sqrt(head_dim), optional mask,
// Softmax, MatMul, Transpose/Reshape back, output projection MatMul+Add.
// Weights ~ N(0, weight_std^2). Returns [B, S, hidden].
Value* self_attention(ModelBuilder& b, const std::string& prefix, Value* h, const AttentionShape& s,
                      const AttentionNames& names, double weight_std, ScoreMask mask_kind = ScoreMask::None,
                      Value* mask = nullptr);

// x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))): GPT-2's Gelu.
Value* gelu_tanh(ModelBuilder& b, const std::string& name, Value* x);

}  // namespace tessera::zoo
