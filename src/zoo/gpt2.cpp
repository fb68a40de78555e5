// A small GPT-2-style decoder with Hugging Face GPT-2 naming
// ("transformer.h.2.mlp.c_fc"); Q/K/V are separate projections rather than
// GPT-2's fused c_attn (same parameter count).
#include <string>
#include <vector>

#include "zoo/builder.h"
#include "zoo/models.h"
#include "zoo/transformer.h"

namespace tessera::zoo {

std::unique_ptr<Graph> build_gpt2_tiny() {
  constexpr int64_t kVocab = 8192, kMaxPos = 256, kLayers = 4, kHidden = 256, kHeads = 4, kSeq = 64;
  constexpr float kEps = 1e-5f;
  constexpr double kStd = 0.02;
  ModelBuilder b("gpt2_tiny", 0x6e727402);
  Value* ids = b.input("input_ids", DType::I64, {1, kSeq});

  std::vector<int64_t> positions(kSeq);
  for (int64_t i = 0; i < kSeq; ++i) positions[static_cast<size_t>(i)] = i;
  Value* pos_ids = b.const_i64("transformer.position_ids", {1, kSeq}, positions);
  Value* wte = b.weight_normal("transformer.wte.weight", {kVocab, kHidden}, kStd);
  Value* wpe = b.weight_normal("transformer.wpe.weight", {kMaxPos, kHidden}, 0.01);
  Value* h = b.gather(wte, ids, 0, "transformer.wte");
  h = b.add(h, b.gather(wpe, pos_ids, 0, "transformer.wpe"), "transformer.add_pos");

  // Causal mask: position i attends to positions j <= i.
  Tensor causal(DType::Bool, {1, 1, kSeq, kSeq});
  for (int64_t i = 0; i < kSeq; ++i)
    for (int64_t j = 0; j < kSeq; ++j) causal.data<bool>()[i * kSeq + j] = j <= i;
  Value* mask = b.graph().add_constant("transformer.causal_mask", std::move(causal));

  const AttentionShape shape{1, kSeq, kHidden, kHeads};
  const AttentionNames names{"q_proj", "k_proj", "v_proj", "c_proj"};
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l);
    Value* a = b.layer_norm(p + ".ln_1", h, kHidden, kEps);
    a = self_attention(b, p + ".attn", a, shape, names, kStd, ScoreMask::Select, mask);
    h = b.add(h, a, p + ".attn.residual");
    Value* f = b.layer_norm(p + ".ln_2", h, kHidden, kEps);
    f = b.linear(p + ".mlp.c_fc", f, kHidden, 4 * kHidden, kStd);
    f = gelu_tanh(b, p + ".mlp.act", f);
    f = b.linear(p + ".mlp.c_proj", f, 4 * kHidden, kHidden, kStd);
    h = b.add(h, f, p + ".mlp.residual");
  }
  h = b.layer_norm("transformer.ln_f", h, kHidden, kEps);
  // The LM head shares the token embedding: logits = h @ wte^T.
  Value* wte_t = b.transpose(wte, {1, 0}, "lm_head.transpose");
  b.output(b.op("MatMul", {h, wte_t}, {}, "lm_head", "logits"), DType::F32, {1, kSeq, kVocab});
  return b.finish();
}

}  // namespace tessera::zoo
