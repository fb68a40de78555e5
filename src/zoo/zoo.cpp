// The zoo's table of models.
#include "zoo/zoo.h"

#include "support/error.h"
#include "zoo/models.h"

namespace tessera {

const std::vector<ZooEntry>& zoo_models() {
  static const std::vector<ZooEntry> models = {
      {"resnet18", "torchvision ResNet-18: input f32[1x3x224x224], logits f32[1x1000] (11.7M params)",
       zoo::build_resnet18},
      {"resnet50", "torchvision ResNet-50 v1.5: input f32[1x3x224x224], logits f32[1x1000] (25.6M params)",
       zoo::build_resnet50},
      {"mobilenet_v2", "torchvision MobileNetV2: input f32[1x3x224x224], logits f32[1x1000] (3.5M params)",
       zoo::build_mobilenet_v2},
      {"squeezenet1_1", "torchvision SqueezeNet 1.1: input f32[1x3x224x224], logits f32[1x1000] (1.2M params)",
       zoo::build_squeezenet1_1},
      {"bert_base",
       "BERT-base encoder, 12 layers, seq 128: input_ids/attention_mask i64[1x128], "
       "last_hidden_state f32[1x128x768] (108.9M params)",
       zoo::build_bert_base},
      {"gpt2_tiny",
       "GPT-2-style decoder, 4 layers, hidden 256, vocab 8192: input_ids i64[1x64], logits f32[1x64x8192] "
       "(5.3M params)",
       zoo::build_gpt2_tiny},
      {"vit_b_16", "torchvision ViT-B/16: input f32[1x3x224x224], logits f32[1x1000] (86.6M params)",
       zoo::build_vit_b_16},
  };
  return models;
}

std::unique_ptr<Graph> build_zoo_model(const std::string& name) {
  std::string known;
  for (const auto& e : zoo_models()) {
    if (e.name == name) return e.build();
    known += (known.empty() ? "" : ", ") + e.name;
  }
  TESSERA_FAIL("unknown zoo model '", name, "' (known: ", known, ")");
}

}  // namespace tessera
