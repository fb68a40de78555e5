// BERT-base encoder (Hugging Face BertModel without the pooler), with the
// Hugging Face state-dict names ("encoder.layer.3.attention.self.query").
#include <string>
#include <vector>

#include "zoo/builder.h"
#include "zoo/models.h"
#include "zoo/transformer.h"

namespace tessera::zoo {

std::unique_ptr<Graph> build_bert_base() {
  constexpr int64_t kVocab = 30522, kMaxPos = 512, kTypes = 2;
  constexpr int64_t kLayers = 12, kHidden = 768, kHeads = 12, kInter = 3072, kSeq = 128;
  constexpr float kEps = 1e-12f;
  constexpr double kStd = 0.02;  // BERT's initializer_range
  ModelBuilder b("bert_base", 0xbe27ba5e);
  Value* ids = b.input("input_ids", DType::I64, {1, kSeq});
  Value* mask = b.input("attention_mask", DType::I64, {1, kSeq});

  // Embeddings: word + position + token type (all type 0), then LayerNorm.
  std::vector<int64_t> positions(kSeq);
  for (int64_t i = 0; i < kSeq; ++i) positions[static_cast<size_t>(i)] = i;
  Value* pos_ids = b.const_i64("embeddings.position_ids", {1, kSeq}, positions);
  Value* type_ids = b.const_i64("embeddings.token_type_ids", {1, kSeq}, std::vector<int64_t>(kSeq, 0));
  Value* word_tab = b.weight_normal("embeddings.word_embeddings.weight", {kVocab, kHidden}, kStd);
  Value* pos_tab = b.weight_normal("embeddings.position_embeddings.weight", {kMaxPos, kHidden}, kStd);
  Value* type_tab = b.weight_normal("embeddings.token_type_embeddings.weight", {kTypes, kHidden}, kStd);
  Value* h = b.gather(word_tab, ids, 0, "embeddings.word_embeddings");
  h = b.add(h, b.gather(type_tab, type_ids, 0, "embeddings.token_type_embeddings"), "embeddings.add_type");
  h = b.add(h, b.gather(pos_tab, pos_ids, 0, "embeddings.position_embeddings"), "embeddings.add_pos");
  h = b.layer_norm("embeddings.LayerNorm", h, kHidden, kEps);

  // Extended attention mask: (1 - mask) * -10000, shaped [1, 1, 1, S].
  Value* m = b.op("Unsqueeze", {mask, b.ints({1, 2})}, {}, "mask.unsqueeze");
  m = b.op("Cast", {m}, {{"to", Attribute::of_int(static_cast<int64_t>(DType::F32))}}, "mask.cast");
  m = b.sub(b.scalar_f32(1.0f), m, "mask.invert");
  m = b.mul(m, b.scalar_f32(-10000.0f), "mask.scale");

  const AttentionShape shape{1, kSeq, kHidden, kHeads};
  const AttentionNames names{"self.query", "self.key", "self.value", "output.dense"};
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l);
    Value* a = self_attention(b, p + ".attention", h, shape, names, kStd, ScoreMask::Additive, m);
    a = b.add(a, h, p + ".attention.output.residual");
    h = b.layer_norm(p + ".attention.output.LayerNorm", a, kHidden, kEps);
    Value* f = b.linear(p + ".intermediate.dense", h, kHidden, kInter, kStd);
    f = b.gelu_erf(p + ".intermediate.gelu", f);
    f = b.linear(p + ".output.dense", f, kInter, kHidden, kStd);
    f = b.add(f, h, p + ".output.residual");
    h = b.layer_norm(p + ".output.LayerNorm", f, kHidden, kEps, l + 1 == kLayers ? "last_hidden_state" : "");
  }
  b.output(h, DType::F32, {1, kSeq, kHidden});
  return b.finish();
}

}  // namespace tessera::zoo
