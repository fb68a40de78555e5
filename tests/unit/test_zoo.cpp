// The embedded model zoo: structure (op histograms, parameter counts,
// signatures) checked against numbers derived by hand from each architecture,
// determinism of the weights, type inference, ONNX round trip, and one small
// reference run.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "interp/interpreter.h"
#include "ops/op_attrs.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "support/error.h"
#include "zoo/builder.h"
#include "zoo/zoo.h"

namespace tessera {
namespace {

// Each model is built once per test binary (the big ones take a while).
const Graph& zoo_graph(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Graph>> cache;
  auto& g = cache[name];
  if (!g) g = build_zoo_model(name);
  return *g;
}

std::map<std::string, int> histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const auto& n : g.nodes()) ++h[n->op_type];
  return h;
}

// Trainable parameters, as torch counts them: every float constant of rank
// >= 1 except BatchNormalization's running mean and variance (buffers). Scalar
// constants (Clip bounds, Gelu's 0.5...) and integer/bool constants (shapes,
// position ids, masks) are not parameters.
int64_t parameter_count(const Graph& g) {
  std::set<const Value*> buffers;
  for (const auto& n : g.nodes())
    if (n->op_type == "BatchNormalization") {
      buffers.insert(n->inputs.at(3));
      buffers.insert(n->inputs.at(4));
    }
  int64_t total = 0;
  for (const auto& v : g.values())
    if (v->is_constant() && v->constant->dtype() == DType::F32 && v->constant->rank() >= 1 && !buffers.count(v.get()))
      total += v->constant->numel();
  return total;
}

int count_depthwise_convs(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes()) {
    if (node->op_type != "Conv") continue;
    const Value* w = node->inputs.at(1);
    int64_t group = OpAttrs(*node, g.opset).i("group");
    // Depthwise: one group per input channel (weight [C, 1, k, k]).
    if (group > 1 && w->type.dims.at(1) == 1 && w->type.dims.at(0) == group) ++n;
  }
  return n;
}

struct ModelFacts {
  std::string name;
  int64_t params;
  Dims output_dims;
  size_t num_inputs;
};

const ModelFacts kFacts[] = {
    {"resnet18", 11689512, {1, 1000}, 1},
    {"resnet50", 25557032, {1, 1000}, 1},
    {"mobilenet_v2", 3504872, {1, 1000}, 1},
    {"squeezenet1_1", 1235496, {1, 1000}, 1},
    {"bert_base", 108891648, {1, 128, 768}, 2},
    {"gpt2_tiny", 5322240, {1, 64, 8192}, 1},
    {"vit_b_16", 86567656, {1, 1000}, 1},
};

// ---------------------------------------------------------------- table

TEST(Zoo, TableListsEveryModelOnce) {
  std::set<std::string> names;
  for (const auto& e : zoo_models()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_FALSE(e.description.empty()) << e.name;
  }
  for (const auto& f : kFacts) EXPECT_TRUE(names.count(f.name)) << f.name;
  EXPECT_EQ(names.size(), std::size(kFacts));
}

TEST(Zoo, UnknownModelNamesTheKnownOnes) {
  try {
    build_zoo_model("resnet51");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- weights

TEST(ZooBuilder, WeightsFollowTheStandardGenerator) {
  // mt19937_64 seeded with 5489 first yields 14514284786278117030 (fixed by the
  // C++ standard). Uniform: top 53 bits / 2^53 = 0.7868209548678019. Normal:
  // its four 16-bit parts sum to 165925; (165925 - 131070) / sqrt((2^32-1)/3)
  // = 0.9211827225470166.
  zoo::ModelBuilder a("t", 5489);
  Value* u = a.weight_uniform("u", {1}, 0.0, 1.0);
  EXPECT_EQ(u->constant->data<float>()[0], 0.7868209548678019f);
  zoo::ModelBuilder b("t", 5489);
  Value* n = b.weight_normal("n", {1}, 1.0);
  EXPECT_EQ(n->constant->data<float>()[0], 0.9211827225470166f);
  // Scaling: the same draw times the std.
  zoo::ModelBuilder c("t", 5489);
  Value* m = c.weight_normal("n", {1}, 0.5);
  EXPECT_EQ(m->constant->data<float>()[0], static_cast<float>(0.9211827225470166 * 0.5));
}

TEST(ZooBuilder, NormalWeightsHaveTheRequestedSpread) {
  zoo::ModelBuilder b("t", 42);
  Value* w = b.weight_normal("w", {100000}, 0.1);
  double sum = 0, sq = 0, mx = 0;
  for (float x : w->constant->span<float>()) {
    sum += x;
    sq += double{x} * x;
    mx = std::max(mx, std::abs(double{x}));
  }
  const double mean = sum / 1e5, std = std::sqrt(sq / 1e5 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(std, 0.1, 0.002);
  EXPECT_LE(mx, 0.1 * 3.47);  // Irwin-Hall(4) is bounded by sqrt(12) std
  EXPECT_GE(mx, 0.1 * 2.5);
}

TEST(Zoo, ResNet50ConvWeightsAreHeScaled) {
  const Graph& g = zoo_graph("resnet50");
  const Value* w = g.find_value("conv1.weight");
  ASSERT_TRUE(w && w->is_constant());
  EXPECT_EQ(w->type.dims, (Dims{64, 3, 7, 7}));
  double sq = 0;
  for (float x : w->constant->span<float>()) sq += double{x} * x;
  // fan_in = 3*7*7 = 147, std = sqrt(2/147) = 0.1166.
  EXPECT_NEAR(std::sqrt(sq / 9408.0), std::sqrt(2.0 / 147.0), 0.005);
}

TEST(Zoo, BuildsAreDeterministic) {
  // BERT and ViT share all their code paths with these (the builder, the
  // transformer blocks of gpt2_tiny) and take seconds to build twice.
  for (const char* name : {"resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "gpt2_tiny"}) {
    auto again = build_zoo_model(name);
    EXPECT_EQ(structural_hash(*again), structural_hash(zoo_graph(name))) << name;
  }
}

TEST(Zoo, DifferentModelsGetDifferentWeights) {
  const Value* a = zoo_graph("resnet18").find_value("conv1.weight");
  const Value* b = zoo_graph("resnet50").find_value("conv1.weight");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->constant->data<float>()[0], b->constant->data<float>()[0]);
}

// ---------------------------------------------------------------- structure

TEST(Zoo, GraphsAreWellFormedWithTheRightSignature) {
  for (const auto& f : kFacts) {
    SCOPED_TRACE(f.name);
    const Graph& g = zoo_graph(f.name);
    EXPECT_NO_THROW(verify_graph(g));
    EXPECT_EQ(g.opset, 17);
    ASSERT_EQ(g.inputs().size(), f.num_inputs);
    ASSERT_EQ(g.outputs().size(), 1u);
    for (const Value* in : g.inputs()) EXPECT_TRUE(in->type.fully_known()) << in->name;
    std::set<std::string> node_names;
    for (const auto& n : g.nodes()) EXPECT_TRUE(node_names.insert(n->name).second) << n->name;
  }
  EXPECT_EQ(zoo_graph("resnet50").inputs()[0]->name, "input");
  EXPECT_EQ(zoo_graph("resnet50").inputs()[0]->type.to_string(), "f32[1x3x224x224]");
  EXPECT_EQ(zoo_graph("resnet50").outputs()[0]->name, "logits");
  EXPECT_EQ(zoo_graph("bert_base").inputs()[0]->name, "input_ids");
  EXPECT_EQ(zoo_graph("bert_base").inputs()[0]->type.to_string(), "i64[1x128]");
  EXPECT_EQ(zoo_graph("bert_base").inputs()[1]->name, "attention_mask");
  EXPECT_EQ(zoo_graph("bert_base").outputs()[0]->name, "last_hidden_state");
}

TEST(Zoo, ParameterCountsMatchTheReferenceModels) {
  // ResNet-50 by hand (conv weights, BN gamma+beta, fc weight+bias):
  //   stem 3*64*49 + 128 = 9,536
  //   layer1 75,008 + 2*70,400 = 215,808
  //   layer2 379,392 + 3*280,064 = 1,219,584
  //   layer3 1,512,448 + 5*1,117,184 = 7,098,368
  //   layer4 6,039,552 + 2*4,462,592 = 14,964,736
  //   fc 2048*1000 + 1000 = 2,049,000            total 25,557,032
  // BERT-base without the pooler: embeddings 30522*768 + 512*768 + 2*768 +
  // LN 1,536 = 23,837,184; per layer Q/K/V/O 4*(768*768+768) = 2,362,368,
  // FFN 768*3072+3072 + 3072*768+768 = 4,722,432, two LNs 3,072 -> 7,087,872;
  // 23,837,184 + 12*7,087,872 = 108,891,648.
  // ViT-B/16: patch conv 590,592 + class token 768 + positions 197*768 +
  // 12*7,087,872 + LN 1,536 + head 769,000 = 86,567,656.
  // GPT-2 tiny: wte 8192*256 + wpe 256*256 + 4*(2*512 + 4*(256*256+256) +
  // 256*1024+1024 + 1024*256+256) + 512 = 5,322,240.
  // The torchvision numbers: ResNet-18 11,689,512, MobileNetV2 3,504,872,
  // SqueezeNet 1.1 1,235,496.
  for (const auto& f : kFacts) EXPECT_EQ(parameter_count(zoo_graph(f.name)), f.params) << f.name;
}

TEST(Zoo, ResNet50Histogram) {
  auto h = histogram(zoo_graph("resnet50"));
  // 1 stem + 16 bottlenecks * 3 + 4 downsample shortcuts.
  EXPECT_EQ(h["Conv"], 53);
  EXPECT_EQ(h["BatchNormalization"], 53);
  EXPECT_EQ(h["Relu"], 1 + 16 * 3);
  EXPECT_EQ(h["Add"], 16);
  EXPECT_EQ(h["MaxPool"], 1);
  EXPECT_EQ(h["GlobalAveragePool"], 1);
  EXPECT_EQ(h["Flatten"], 1);
  EXPECT_EQ(h["Gemm"], 1);
  EXPECT_EQ(zoo_graph("resnet50").nodes().size(), 175u);
  // v1.5: the first block of layer2 strides on its 3x3 conv, not the 1x1.
  const Graph& g = zoo_graph("resnet50");
  for (const auto& n : g.nodes()) {
    if (n->name == "layer2.0.conv1") {
      EXPECT_EQ(OpAttrs(*n, g.opset).ints("strides"), (std::vector<int64_t>{1, 1}));
    }
    if (n->name == "layer2.0.conv2") {
      EXPECT_EQ(OpAttrs(*n, g.opset).ints("strides"), (std::vector<int64_t>{2, 2}));
    }
  }
}

TEST(Zoo, ResNet18Histogram) {
  auto h = histogram(zoo_graph("resnet18"));
  EXPECT_EQ(h["Conv"], 1 + 8 * 2 + 3);
  EXPECT_EQ(h["BatchNormalization"], 20);
  EXPECT_EQ(h["Relu"], 1 + 8 * 2);
  EXPECT_EQ(h["Add"], 8);
  EXPECT_EQ(zoo_graph("resnet18").nodes().size(), 69u);
}

TEST(Zoo, MobileNetV2Histogram) {
  const Graph& g = zoo_graph("mobilenet_v2");
  auto h = histogram(g);
  // stem + first block (dw, project) + 16 blocks * (expand, dw, project) + last 1x1.
  EXPECT_EQ(h["Conv"], 52);
  EXPECT_EQ(count_depthwise_convs(g), 17);
  EXPECT_EQ(h["BatchNormalization"], 52);
  EXPECT_EQ(h["Clip"], 1 + 1 + 16 * 2 + 1);
  // Residuals where stride 1 and channels kept: 24:1, 32:2, 64:3, 96:2, 160:2.
  EXPECT_EQ(h["Add"], 10);
  EXPECT_EQ(h["GlobalAveragePool"], 1);
  EXPECT_EQ(h["Gemm"], 1);
  EXPECT_EQ(g.nodes().size(), 152u);
  for (const auto& n : g.nodes())
    if (n->op_type == "Clip") {
      ASSERT_EQ(n->num_inputs(), 3);
      EXPECT_EQ(n->inputs[1]->constant->get_double(0), 0.0);
      EXPECT_EQ(n->inputs[2]->constant->get_double(0), 6.0);
    }
}

TEST(Zoo, SqueezeNetHistogram) {
  auto h = histogram(zoo_graph("squeezenet1_1"));
  EXPECT_EQ(h["Conv"], 1 + 8 * 3 + 1);
  EXPECT_EQ(h["Relu"], 26);
  EXPECT_EQ(h["Concat"], 8);
  EXPECT_EQ(h["MaxPool"], 3);
  EXPECT_EQ(zoo_graph("squeezenet1_1").nodes().size(), 65u);
}

TEST(Zoo, BertHistogram) {
  auto h = histogram(zoo_graph("bert_base"));
  EXPECT_EQ(h["Gather"], 3);
  EXPECT_EQ(h["LayerNormalization"], 12 * 2 + 1);
  EXPECT_EQ(h["MatMul"], 12 * 8);  // Q, K, V, O, scores, context, 2 FFN
  EXPECT_EQ(h["Softmax"], 12);
  EXPECT_EQ(h["Erf"], 12);
  EXPECT_EQ(h["Div"], 12 * 2);  // score scale, Gelu's x/sqrt(2)
  EXPECT_EQ(h["Transpose"], 12 * 4);
  EXPECT_EQ(h["Reshape"], 12 * 4);
  EXPECT_EQ(h["Add"], 2 + 12 * 10);
  EXPECT_EQ(h["Mul"], 1 + 12 * 2);
  EXPECT_EQ(h["Gelu"], 0);
  // The score scale divides by sqrt(64) = 8.
  for (const auto& n : zoo_graph("bert_base").nodes())
    if (n->name == "encoder.layer.0.attention.scale") {
      EXPECT_EQ(n->inputs[1]->constant->get_double(0), 8.0);
    }
}

TEST(Zoo, Gpt2AndVitHistograms) {
  auto g = histogram(zoo_graph("gpt2_tiny"));
  EXPECT_EQ(g["LayerNormalization"], 4 * 2 + 1);
  EXPECT_EQ(g["MatMul"], 4 * 8 + 1);
  EXPECT_EQ(g["Where"], 4);
  EXPECT_EQ(g["Tanh"], 4);
  EXPECT_EQ(g["Softmax"], 4);
  auto v = histogram(zoo_graph("vit_b_16"));
  EXPECT_EQ(v["Conv"], 1);
  EXPECT_EQ(v["Concat"], 1);
  EXPECT_EQ(v["LayerNormalization"], 12 * 2 + 1);
  EXPECT_EQ(v["MatMul"], 12 * 8);
  EXPECT_EQ(v["Erf"], 12);
  EXPECT_EQ(v["Gemm"], 1);
}

// ---------------------------------------------------------------- inference

TEST(Zoo, InferenceGivesTheDocumentedOutputShapes) {
  for (const auto& f : kFacts) {
    SCOPED_TRACE(f.name);
    auto g = zoo_graph(f.name).clone();
    ASSERT_NO_THROW(infer_graph(*g));
    const TensorType& t = g->outputs()[0]->type;
    EXPECT_EQ(t.dtype, DType::F32);
    EXPECT_EQ(t.dims, f.output_dims);
    for (const auto& n : g->nodes())
      for (const Value* o : n->outputs) EXPECT_TRUE(o->type.fully_known()) << n->describe();
  }
}

TEST(Zoo, ResNet50InferredIntermediateShapes) {
  auto g = zoo_graph("resnet50").clone();
  infer_graph(*g);
  auto dims = [&](const char* name) { return g->find_value(name)->type.dims; };
  EXPECT_EQ(dims("maxpool"), (Dims{1, 64, 56, 56}));
  EXPECT_EQ(dims("layer1.2.relu3"), (Dims{1, 256, 56, 56}));
  EXPECT_EQ(dims("layer2.3.relu3"), (Dims{1, 512, 28, 28}));
  EXPECT_EQ(dims("layer3.5.relu3"), (Dims{1, 1024, 14, 14}));
  EXPECT_EQ(dims("layer4.2.relu3"), (Dims{1, 2048, 7, 7}));
  EXPECT_EQ(dims("avgpool"), (Dims{1, 2048, 1, 1}));
}

TEST(Zoo, ExportImportRoundTripKeepsTheGraph) {
  for (const char* name : {"resnet50", "mobilenet_v2", "squeezenet1_1", "gpt2_tiny"}) {
    SCOPED_TRACE(name);
    const Graph& g = zoo_graph(name);
    auto back = import_onnx_bytes(export_onnx_bytes(g), "");
    EXPECT_EQ(back->nodes().size(), g.nodes().size());
    EXPECT_EQ(histogram(*back), histogram(g));
    EXPECT_EQ(parameter_count(*back), parameter_count(g));
    EXPECT_EQ(back->opset, 17);
  }
}

TEST(Zoo, LoadModelFoldsTheConstantEmbeddingLookups) {
  // The position lookup reads constant ids, and the tied LM head transposes a
  // constant: load_model folds both.
  auto g = load_model("zoo:gpt2_tiny");
  auto h = histogram(*g);
  EXPECT_EQ(h["Gather"], 1);
  EXPECT_EQ(h["Transpose"], 4 * 4);
  EXPECT_EQ(g->outputs()[0]->type.dims, (Dims{1, 64, 8192}));
}

// The one full reference run: ResNet-18 on a 32x32 image (GlobalAveragePool
// makes the network size-agnostic), via load_model's --shape override.
TEST(Zoo, ResNet18RunsOnASmallImage) {
  LoadOptions lo;
  lo.input_shapes["input"] = {1, 3, 32, 32};
  auto g = load_model("zoo:resnet18", lo);
  auto out = interpret(*g, random_inputs(*g, 7));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dims(), (Dims{1, 1000}));
  double sum = 0, sq = 0;
  for (float x : out[0].span<float>()) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double{x} * x;
  }
  const double mean = sum / 1000, std = std::sqrt(sq / 1000 - mean * mean);
  EXPECT_GT(std, 1e-3);  // not a constant output
  EXPECT_LT(std, 1e3);   // activations stayed in a sane range
}

}  // namespace
}  // namespace tessera
