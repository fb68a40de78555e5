// Transformer building blocks shared by the zoo's BERT, GPT-2 and ViT.
#include "zoo/transformer.h"

#include <cmath>
#include <limits>

namespace tessera::zoo {

Value* self_attention(ModelBuilder& b, const std::string& p, Value* h, const AttentionShape& s,
                      const AttentionNames& names, double weight_std, ScoreMask mask_kind, Value* mask) {
  const int64_t d = s.head_dim();
  const std::vector<int64_t> split_heads = {s.batch, s.seq, s.heads, d};
  auto project = [&](const std::string& n, const std::vector<int64_t>& perm) {
    Value* y = b.linear(p + "." + n, h, s.hidden, s.hidden, weight_std);
    y = b.reshape(y, split_heads, p + "." + n + ".reshape");
    return b.transpose(y, perm, p + "." + n + ".transpose");
  };
  Value* q = project(names.q, {0, 2, 1, 3});  // [B, H, S, d]
  Value* k = project(names.k, {0, 2, 3, 1});  // [B, H, d, S]
  Value* v = project(names.v, {0, 2, 1, 3});  // [B, H, S, d]
  Value* scores = b.matmul(q, k, p + ".scores");
  scores = b.div(scores, b.scalar_f32(std::sqrt(static_cast<float>(d))), p + ".scale");
  if (mask_kind == ScoreMask::Additive) {
    scores = b.add(scores, mask, p + ".mask");
  } else if (mask_kind == ScoreMask::Select) {
    scores = b.op("Where", {mask, scores, b.scalar_f32(std::numeric_limits<float>::lowest())}, {}, p + ".mask");
  }
  Value* probs = b.softmax(scores, -1, p + ".softmax");
  Value* ctx = b.matmul(probs, v, p + ".context");               // [B, H, S, d]
  ctx = b.transpose(ctx, {0, 2, 1, 3}, p + ".context.transpose");  // [B, S, H, d]
  ctx = b.reshape(ctx, {s.batch, s.seq, s.hidden}, p + ".context.reshape");
  return b.linear(p + "." + names.out, ctx, s.hidden, s.hidden, weight_std);
}

Value* gelu_tanh(ModelBuilder& b, const std::string& name, Value* x) {
  Value* cube = b.op("Pow", {x, b.scalar_f32(3.0f)}, {}, name + ".pow");
  Value* inner = b.add(x, b.mul(cube, b.scalar_f32(0.044715f), name + ".mul1"), name + ".add1");
  inner = b.mul(inner, b.scalar_f32(0.7978845834732056f), name + ".mul2");  // sqrt(2/pi)
  Value* t = b.op("Tanh", {inner}, {}, name + ".tanh");
  Value* one_plus = b.add(t, b.scalar_f32(1.0f), name + ".add2");
  Value* half_x = b.mul(x, b.scalar_f32(0.5f), name + ".mul3");
  return b.mul(half_x, one_plus, name);
}

}  // namespace tessera::zoo
