// torchvision ViT-B/16 with torchvision's names
// ("encoder.layers.encoder_layer_3.mlp.0"); the fused in_proj of
// nn.MultiheadAttention is written as separate Q/K/V projections (same
// parameter count).
#include <cmath>
#include <string>

#include "zoo/builder.h"
#include "zoo/models.h"
#include "zoo/transformer.h"

namespace tessera::zoo {

std::unique_ptr<Graph> build_vit_b_16() {
  constexpr int64_t kImage = 224, kPatch = 16, kLayers = 12, kHidden = 768, kHeads = 12, kMlp = 3072;
  constexpr int64_t kGrid = kImage / kPatch, kSeq = kGrid * kGrid + 1;
  constexpr float kEps = 1e-6f;
  constexpr double kStd = 0.02;
  ModelBuilder b("vit_b_16", 0x0b17b016);
  Value* x = b.input("input", DType::F32, {1, 3, kImage, kImage});

  // Patch embedding: a 16x16 stride-16 conv, then [1, 768, 196] -> [1, 196, 768].
  Value* w = b.weight_normal("conv_proj.weight", {kHidden, 3, kPatch, kPatch},
                             std::sqrt(1.0 / static_cast<double>(3 * kPatch * kPatch)));
  Value* bias = b.weight_uniform("conv_proj.bias", {kHidden}, -0.02, 0.02);
  AttrMap ca;
  ca["kernel_shape"] = Attribute::of_ints({kPatch, kPatch});
  ca["strides"] = Attribute::of_ints({kPatch, kPatch});
  Value* h = b.op("Conv", {x, w, bias}, std::move(ca), "conv_proj");
  h = b.reshape(h, {1, kHidden, kGrid * kGrid}, "patches.reshape");
  h = b.transpose(h, {0, 2, 1}, "patches.transpose");
  Value* cls = b.weight_normal("class_token", {1, 1, kHidden}, kStd);
  h = b.op("Concat", {cls, h}, {{"axis", Attribute::of_int(1)}}, "concat_class_token");
  h = b.add(h, b.weight_normal("encoder.pos_embedding", {1, kSeq, kHidden}, kStd), "encoder.add_pos");

  const AttentionShape shape{1, kSeq, kHidden, kHeads};
  const AttentionNames names{"q_proj", "k_proj", "v_proj", "out_proj"};
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "encoder.layers.encoder_layer_" + std::to_string(l);
    Value* a = b.layer_norm(p + ".ln_1", h, kHidden, kEps);
    a = self_attention(b, p + ".self_attention", a, shape, names, kStd);
    h = b.add(h, a, p + ".attention.residual");
    Value* f = b.layer_norm(p + ".ln_2", h, kHidden, kEps);
    f = b.linear(p + ".mlp.0", f, kHidden, kMlp, kStd);
    f = b.gelu_erf(p + ".mlp.1", f);
    f = b.linear(p + ".mlp.3", f, kMlp, kHidden, kStd);
    h = b.add(h, f, p + ".mlp.residual");
  }
  h = b.layer_norm("encoder.ln", h, kHidden, kEps);
  // The class token's final state: [1, 197, 768] -> [1, 768].
  Value* first = b.graph().add_constant("class_token_index", Tensor::scalar<int64_t>(0));
  h = b.gather(h, first, 1, "class_token_state");
  b.output(b.gemm("heads.head", h, kHidden, 1000, 0.01, "logits"), DType::F32, {1, 1000});
  return b.finish();
}

}  // namespace tessera::zoo
