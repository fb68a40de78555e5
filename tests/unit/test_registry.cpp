// The op registry's facts, pinned: every op's DNNFusion mapping type, the
// per-node refinement for broadcasting, multi-linear inputs, FLOP and byte
// counts computed by hand, and the completeness of every entry.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ops/registry.h"
#include "support/error.h"

namespace tessera {
namespace {

using M = MappingType;
constexpr M O2O = M::OneToOne, O2M = M::OneToMany, M2M = M::ManyToMany, REORG = M::Reorganize, SHUF = M::Shuffle;

// DNNFusion's classification (Niu et al., PLDI 2021, table 2) extended to every
// op Tessera runs. The test fails when an op is added without an entry here.
const std::map<std::string, M> kMapping = {
    // elementwise: one-to-one (a broadcast use is refined to one-to-many per node)
    {"Abs", O2O}, {"Acos", O2O}, {"Acosh", O2O}, {"Add", O2O}, {"And", O2O}, {"Asin", O2O}, {"Asinh", O2O},
    {"Atan", O2O}, {"Atanh", O2O}, {"BitShift", O2O}, {"BitwiseAnd", O2O}, {"BitwiseNot", O2O}, {"BitwiseOr", O2O},
    {"BitwiseXor", O2O}, {"Cast", O2O}, {"CastLike", O2O}, {"Ceil", O2O}, {"Celu", O2O}, {"Clip", O2O},
    {"Cos", O2O}, {"Cosh", O2O}, {"DequantizeLinear", O2O}, {"Div", O2O}, {"Elu", O2O}, {"Equal", O2O},
    {"Erf", O2O}, {"Exp", O2O}, {"Floor", O2O}, {"Gelu", O2O}, {"Greater", O2O}, {"GreaterOrEqual", O2O},
    {"HardSigmoid", O2O}, {"HardSwish", O2O}, {"IsInf", O2O}, {"IsNaN", O2O}, {"LeakyRelu", O2O}, {"Less", O2O},
    {"LessOrEqual", O2O}, {"Log", O2O}, {"Max", O2O}, {"Mean", O2O}, {"Min", O2O}, {"Mish", O2O}, {"Mod", O2O},
    {"Mul", O2O}, {"Neg", O2O}, {"Not", O2O}, {"Or", O2O}, {"PRelu", O2O}, {"Pow", O2O}, {"QuantizeLinear", O2O},
    {"Reciprocal", O2O}, {"Relu", O2O}, {"Round", O2O}, {"Selu", O2O}, {"Shrink", O2O}, {"Sigmoid", O2O},
    {"Sign", O2O}, {"Sin", O2O}, {"Sinh", O2O}, {"Softplus", O2O}, {"Softsign", O2O}, {"Sqrt", O2O}, {"Sub", O2O},
    {"Sum", O2O}, {"Swish", O2O}, {"Tan", O2O}, {"Tanh", O2O}, {"ThresholdedRelu", O2O}, {"Where", O2O},
    {"Xor", O2O}, {"DynamicQuantizeLinear", M2M},
    // data movement
    {"Concat", O2O}, {"Split", O2O}, {"Slice", O2O}, {"Identity", O2O}, {"Pad", O2O}, {"CenterCropPad", O2O},
    {"Trilu", O2O}, {"Constant", O2O}, {"EyeLike", O2O},
    {"Gather", O2M}, {"GatherElements", O2M}, {"GatherND", O2M}, {"Expand", O2M}, {"Tile", O2M}, {"OneHot", O2M},
    {"ConstantOfShape", O2M}, {"Range", O2M},
    {"Reshape", REORG}, {"Flatten", REORG}, {"Squeeze", REORG}, {"Unsqueeze", REORG}, {"Shape", REORG},
    {"Size", REORG},
    {"Transpose", SHUF}, {"DepthToSpace", SHUF}, {"SpaceToDepth", SHUF}, {"ReverseSequence", SHUF},
    {"Scatter", M2M}, {"ScatterElements", M2M}, {"ScatterND", M2M}, {"Compress", M2M}, {"NonZero", M2M},
    {"Unique", M2M},
    // reductions and scans
    {"ReduceL1", M2M}, {"ReduceL2", M2M}, {"ReduceLogSum", M2M}, {"ReduceLogSumExp", M2M}, {"ReduceMax", M2M},
    {"ReduceMean", M2M}, {"ReduceMin", M2M}, {"ReduceProd", M2M}, {"ReduceSum", M2M}, {"ReduceSumSquare", M2M},
    {"ArgMax", M2M}, {"ArgMin", M2M}, {"CumSum", M2M}, {"CumProd", M2M}, {"TopK", M2M}, {"Det", M2M},
    // control flow, random, detection
    {"If", M2M}, {"Loop", M2M}, {"Scan", M2M}, {"NonMaxSuppression", M2M},
    {"RandomNormal", O2O}, {"RandomNormalLike", O2O}, {"RandomUniform", O2O}, {"RandomUniformLike", O2O},
    {"Bernoulli", O2O}, {"Multinomial", O2O},
    // neural-network ops
    {"Conv", M2M}, {"ConvTranspose", M2M}, {"ConvInteger", M2M}, {"QLinearConv", M2M}, {"MatMul", M2M},
    {"MatMulInteger", M2M}, {"QLinearMatMul", M2M}, {"Gemm", M2M}, {"MaxPool", M2M}, {"AveragePool", M2M},
    {"LpPool", M2M}, {"GlobalAveragePool", M2M}, {"GlobalMaxPool", M2M}, {"GlobalLpPool", M2M},
    {"MaxUnpool", M2M}, {"BatchNormalization", O2O}, {"InstanceNormalization", M2M},
    {"LayerNormalization", M2M}, {"GroupNormalization", M2M}, {"RMSNormalization", M2M}, {"LRN", M2M},
    {"MeanVarianceNormalization", M2M}, {"LpNormalization", M2M}, {"Softmax", M2M}, {"LogSoftmax", M2M},
    {"Hardmax", M2M}, {"Dropout", O2O}, {"Einsum", M2M},
    {"Resize", O2M}, {"Upsample", O2M}, {"AffineGrid", O2M}, {"Attention", M2M}, {"RotaryEmbedding", M2M},
    {"RNN", M2M}, {"GRU", M2M}, {"LSTM", M2M}, {"NegativeLogLikelihoodLoss", M2M},
    {"SoftmaxCrossEntropyLoss", M2M}, {"GridSample", M2M}, {"RoiAlign", M2M}, {"Col2Im", M2M},
    {"DeformConv", M2M}, {"DFT", M2M}, {"STFT", M2M},
    {"HannWindow", O2O}, {"HammingWindow", O2O}, {"BlackmanWindow", O2O}, {"MelWeightMatrix", O2O},
    // newest opsets: SwiGLU reads A and B at the output's own index (two same-shape inputs)
    {"BitCast", O2O}, {"SwiGLU", O2O}, {"TensorScatter", M2M}, {"CausalConvWithState", M2M},
    {"LinearAttention", M2M}, {"FlexAttention", M2M},
    // strings and ai.onnx.ml
    {"StringNormalizer", O2O}, {"StringConcat", O2O}, {"StringSplit", O2M}, {"RegexFullMatch", O2O},
    {"TfIdfVectorizer", M2M}, {"Binarizer", O2O}, {"ArrayFeatureExtractor", O2M}, {"LabelEncoder", O2O},
    {"TreeEnsemble", M2M},
    // channel-blocked layout (domain tessera): reorders permute, convolutions contract
    {"ConvBlocked", M2M}, {"DepthwiseConvBlocked", M2M}, {"ReorderToBlocked", SHUF}, {"ReorderFromBlocked", SHUF},
    {"WinogradInput", M2M}, {"WinogradGemm", M2M}, {"WinogradOutput", M2M},
};

TEST(Registry, EveryOpHasAPinnedMappingType) {
  std::set<std::string> registered;
  for (const OpDef* d : op_registry().all()) {
    registered.insert(d->name);
    auto it = kMapping.find(d->name);
    if (it == kMapping.end()) {
      ADD_FAILURE() << d->name << " has no entry in the mapping table";
      continue;
    }
    EXPECT_EQ(mapping_type_name(d->mapping), mapping_type_name(it->second)) << d->name;
  }
  for (const auto& [name, m] : kMapping) EXPECT_TRUE(registered.count(name)) << name << " is not registered";
}

TEST(Registry, EntriesAreComplete) {
  for (const OpDef* d : op_registry().all()) {
    EXPECT_TRUE(d->infer) << d->name;
    EXPECT_TRUE(d->reference) << d->name;
    EXPECT_GE(d->min_opset, 1) << d->name;
    EXPECT_LE(d->min_opset, 28) << d->name;
    for (int i : d->linear_inputs) EXPECT_GE(i, 0) << d->name;
    // The attribute specs are checked by OpSchema.EverySchemaIsWellFormed.
  }
}

TEST(Registry, UnknownOpIsAClearError) {
  Node n;
  n.op_type = "Frobnicate";
  n.name = "f1";
  try {
    op_registry().get(n, 17);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Frobnicate node 'f1': op 'Frobnicate' (opset 17) is not supported by Tessera");
  }
  EXPECT_EQ(op_registry().find("Frobnicate"), nullptr);
  EXPECT_NE(op_registry().find("Add", "ai.onnx"), nullptr);
}

TEST(Registry, OpsetOlderThanTheKernelIsRejected) {
  Node n;
  n.op_type = "Gelu";  // introduced in opset 20
  n.name = "g";
  try {
    op_registry().get(n, 17);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opset 17 is older than the oldest supported (20)"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(op_registry().get(n, 20));
  n.op_type = "LabelEncoder";  // other domains version independently
  n.domain = "ai.onnx.ml";
  EXPECT_NO_THROW(op_registry().get(n, 0));
}

TEST(Registry, MultiLinearInputsForPet) {
  auto linear = [](const char* op) {
    auto v = op_registry().find(op)->linear_inputs;
    return std::set<int>(v.begin(), v.end());
  };
  EXPECT_EQ(linear("Conv"), (std::set<int>{0, 1}));
  EXPECT_EQ(linear("MatMul"), (std::set<int>{0, 1}));
  EXPECT_EQ(linear("Mul"), (std::set<int>{0, 1}));
  EXPECT_EQ(linear("Transpose"), (std::set<int>{0}));
  EXPECT_EQ(linear("Reshape"), (std::set<int>{0}));
  EXPECT_EQ(linear("Relu"), (std::set<int>{}));  // not linear
  EXPECT_EQ(linear("Add"), (std::set<int>{}));   // affine in each input, not linear
  EXPECT_EQ(linear("Exp"), (std::set<int>{}));
}

// A one-node graph with the given input types, inferred.
struct OneNode {
  Graph g;
  Node* n;
  OneNode(const std::string& op, std::vector<TensorType> ins, AttrMap attrs = {}, std::vector<Tensor> consts = {}) {
    std::vector<Value*> vs;
    for (size_t i = 0; i < ins.size(); ++i) vs.push_back(g.add_input("x" + std::to_string(i), ins[i]));
    for (size_t i = 0; i < consts.size(); ++i) vs.push_back(g.add_constant("c" + std::to_string(i), consts[i]));
    n = g.add_node(op, vs, {"y"}, std::move(attrs), "n");
    g.add_output(n->outputs[0]);
    infer_graph(g);
  }
};

TensorType f32(Dims d) { return {DType::F32, std::move(d), true}; }

TEST(Registry, BroadcastingUseIsOneToMany) {
  EXPECT_EQ(node_mapping_type(*OneNode("Add", {f32({2, 3}), f32({2, 3})}).n), O2O);
  EXPECT_EQ(node_mapping_type(*OneNode("Add", {f32({2, 3}), f32({3})}).n), O2M);
  EXPECT_EQ(node_mapping_type(*OneNode("Add", {f32({2, 3}), f32({})}).n), O2O);  // scalar operand
  EXPECT_EQ(node_mapping_type(*OneNode("Where", {{DType::Bool, {4, 1}, true}, f32({4, 5}), f32({4, 5})}).n), O2M);
  // Concat's inputs are smaller than its output but nothing is broadcast.
  EXPECT_EQ(node_mapping_type(*OneNode("Concat", {f32({1, 3}), f32({1, 3})}, {{"axis", Attribute::of_int(0)}}).n),
            O2O);
  EXPECT_EQ(node_mapping_type(*OneNode("Relu", {f32({8})}).n), O2O);
}

TEST(Registry, FlopsAndBytesByHand) {
  // Elementwise: one FLOP per output element; bytes = inputs + output.
  OneNode add("Add", {f32({2, 3}), f32({2, 3})});
  EXPECT_EQ(node_flops(*add.n), 6);
  EXPECT_EQ(node_bytes(*add.n), 3 * 6 * 4);
  // MatMul [2,3]x[3,4]: 2*3*4 multiply-adds = 48 FLOPs.
  OneNode mm("MatMul", {f32({2, 3}), f32({3, 4})});
  EXPECT_EQ(mm.n->outputs[0]->type.to_string(), "f32[2x4]");
  EXPECT_EQ(node_flops(*mm.n), 48);
  // Batched MatMul [5,2,3]x[3,4]: 5 times that.
  OneNode bmm("MatMul", {f32({5, 2, 3}), f32({3, 4})});
  EXPECT_EQ(node_flops(*bmm.n), 240);
  // ResNet's first conv: 64 filters 3x7x7 stride 2 pad 3 on 224x224 -> 112x112;
  // 2 * 64 * 3 * 49 * 112 * 112 = 236,027,904 (plus nothing for the absent bias).
  OneNode conv("Conv", {f32({1, 3, 224, 224}), f32({64, 3, 7, 7})},
               {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}});
  EXPECT_EQ(conv.n->outputs[0]->type.to_string(), "f32[1x64x112x112]");
  EXPECT_EQ(node_flops(*conv.n), 236027904.0);
  // Gemm [4,8]x[8,16] + C: 2*4*8*16 = 1024 for the product, plus alpha and
  // beta*C per output element: 2*4*16 = 128.
  OneNode gemm("Gemm", {f32({4, 8}), f32({8, 16}), f32({16})});
  EXPECT_EQ(node_flops(*gemm.n), 1152.0);
  // Unknown shapes give 0 rather than a guess.
  OneNode dyn("Relu", {f32({-1, 3})});
  EXPECT_EQ(node_flops(*dyn.n), 0);
  EXPECT_EQ(node_bytes(*dyn.n), 0);
}

}  // namespace
}  // namespace tessera
