// torchvision ResNet-18 and ResNet-50 (v1.5), with the torchvision state-dict
// names for weights ("layer2.0.downsample.0.weight") and nodes.
#include <string>

#include "zoo/builder.h"
#include "zoo/models.h"

namespace tessera::zoo {
namespace {

// The last BatchNormalization of each residual branch gets a small gamma, as
// in trained ResNets (torchvision's zero_init_residual even starts it at 0):
// with gamma ~1 every block would add a full-size branch to its shortcut and
// activations would grow ~1.5x per block (std ~1000 after ResNet-50's 16).
constexpr double kBranchGammaLo = 0.2, kBranchGammaHi = 0.4;

// conv -> bn, named like torchvision's convN / bnN pair.
Value* conv_bn(ModelBuilder& b, const std::string& conv_name, const std::string& bn_name, Value* x,
               int64_t in_ch, int64_t out_ch, int64_t kernel, int64_t stride, int64_t pad,
               bool branch_end = false) {
  Value* y = b.conv(conv_name, x, in_ch, out_ch, kernel, stride, pad);
  if (branch_end) return b.batch_norm(bn_name, y, out_ch, 1e-5f, kBranchGammaLo, kBranchGammaHi);
  return b.batch_norm(bn_name, y, out_ch);
}

// BasicBlock: 3x3 -> 3x3, expansion 1.
Value* basic_block(ModelBuilder& b, const std::string& p, Value* x, int64_t in_ch, int64_t planes, int64_t stride) {
  Value* y = conv_bn(b, p + ".conv1", p + ".bn1", x, in_ch, planes, 3, stride, 1);
  y = b.relu(y, p + ".relu1");
  y = conv_bn(b, p + ".conv2", p + ".bn2", y, planes, planes, 3, 1, 1, true);
  Value* shortcut = x;
  if (stride != 1 || in_ch != planes)
    shortcut = conv_bn(b, p + ".downsample.0", p + ".downsample.1", x, in_ch, planes, 1, stride, 0);
  y = b.add(y, shortcut, p + ".add");
  return b.relu(y, p + ".relu2");
}

// Bottleneck (v1.5): 1x1 -> 3x3 (strided) -> 1x1, expansion 4.
Value* bottleneck(ModelBuilder& b, const std::string& p, Value* x, int64_t in_ch, int64_t planes, int64_t stride) {
  const int64_t out_ch = planes * 4;
  Value* y = conv_bn(b, p + ".conv1", p + ".bn1", x, in_ch, planes, 1, 1, 0);
  y = b.relu(y, p + ".relu1");
  y = conv_bn(b, p + ".conv2", p + ".bn2", y, planes, planes, 3, stride, 1);
  y = b.relu(y, p + ".relu2");
  y = conv_bn(b, p + ".conv3", p + ".bn3", y, planes, out_ch, 1, 1, 0, true);
  Value* shortcut = x;
  if (stride != 1 || in_ch != out_ch)
    shortcut = conv_bn(b, p + ".downsample.0", p + ".downsample.1", x, in_ch, out_ch, 1, stride, 0);
  y = b.add(y, shortcut, p + ".add");
  return b.relu(y, p + ".relu3");
}

std::unique_ptr<Graph> build_resnet(const std::string& name, uint64_t seed, bool use_bottleneck,
                                    const int (&blocks)[4]) {
  ModelBuilder b(name, seed);
  Value* x = b.input("input", DType::F32, {1, 3, 224, 224});
  Value* y = conv_bn(b, "conv1", "bn1", x, 3, 64, 7, 2, 3);
  y = b.relu(y, "relu");
  y = b.max_pool("maxpool", y, 3, 2, 1);
  const int64_t expansion = use_bottleneck ? 4 : 1;
  int64_t in_ch = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    for (int i = 0; i < blocks[layer]; ++i) {
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      y = use_bottleneck ? bottleneck(b, p, y, in_ch, planes, stride) : basic_block(b, p, y, in_ch, planes, stride);
      in_ch = planes * expansion;
    }
  }
  y = b.global_avg_pool(y, "avgpool");
  y = b.flatten(y, 1, "flatten");
  b.output(b.gemm("fc", y, in_ch, 1000, 0.01, "logits"), DType::F32, {-1, 1000});
  return b.finish();
}

}  // namespace

std::unique_ptr<Graph> build_resnet18() {
  static const int blocks[4] = {2, 2, 2, 2};
  return build_resnet("resnet18", 0x5e5e7018, false, blocks);
}

std::unique_ptr<Graph> build_resnet50() {
  static const int blocks[4] = {3, 4, 6, 3};
  return build_resnet("resnet50", 0x5e5e7050, true, blocks);
}

}  // namespace tessera::zoo
