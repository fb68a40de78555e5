// Build functions of the zoo's models (one file per architecture family).
#pragma once

#include <memory>

#include "ir/graph.h"

namespace tessera::zoo {

// torchvision ResNet-18 / ResNet-50 (v1.5: stride on the 3x3 conv).
// Input "input" f32[1x3x224x224], output "logits" f32[1x1000].
std::unique_ptr<Graph> build_resnet18();
std::unique_ptr<Graph> build_resnet50();

// torchvision MobileNetV2 (width 1.0). Input "input" f32[1x3x224x224],
// output "logits" f32[1x1000].
std::unique_ptr<Graph> build_mobilenet_v2();

// torchvision SqueezeNet 1.1. Input "input" f32[1x3x224x224], output
// "logits" f32[1x1000].
std::unique_ptr<Graph> build_squeezenet1_1();

// BERT-base encoder (12 layers, hidden 768, 12 heads, sequence 128).
// Inputs "input_ids" i64[1x128] and "attention_mask" i64[1x128]; output
// "last_hidden_state" f32[1x128x768].
std::unique_ptr<Graph> build_bert_base();

// A small GPT-2-style decoder (4 layers, hidden 256, 4 heads, sequence 64,
// vocabulary 8192, pre-LayerNorm, causal attention, tanh Gelu, LM head tied
// to the token embedding). Input "input_ids" i64[1x64], output "logits"
// f32[1x64x8192].
std::unique_ptr<Graph> build_gpt2_tiny();

// torchvision ViT-B/16. Input "input" f32[1x3x224x224], output "logits"
// f32[1x1000].
std::unique_ptr<Graph> build_vit_b_16();

}  // namespace tessera::zoo
