// torchvision MobileNetV2 (width multiplier 1.0), with torchvision's
// state-dict names ("features.2.conv.1.0.weight").
#include <string>

#include "zoo/builder.h"
#include "zoo/models.h"

namespace tessera::zoo {
namespace {

// Conv -> BatchNormalization -> Clip(0, 6) (torchvision's Conv2dNormActivation
// with ReLU6), named "<p>.0" / "<p>.1" / "<p>.2".
Value* conv_bn_relu6(ModelBuilder& b, const std::string& p, Value* x, int64_t in_ch, int64_t out_ch,
                     int64_t kernel, int64_t stride, int64_t group) {
  Value* y = b.conv(p + ".0", x, in_ch, out_ch, kernel, stride, (kernel - 1) / 2, group);
  y = b.batch_norm(p + ".1", y, out_ch);
  return b.clip(y, 0.0f, 6.0f, p + ".2");
}

Value* inverted_residual(ModelBuilder& b, const std::string& p, Value* x, int64_t in_ch, int64_t out_ch,
                         int64_t stride, int64_t expand_ratio) {
  const int64_t hidden = in_ch * expand_ratio;
  Value* y = x;
  int idx = 0;
  if (expand_ratio != 1) {
    y = conv_bn_relu6(b, p + ".conv.0", y, in_ch, hidden, 1, 1, 1);
    ++idx;
  }
  // Depthwise 3x3: one group per channel.
  y = conv_bn_relu6(b, p + ".conv." + std::to_string(idx), y, hidden, hidden, 3, stride, hidden);
  // Linear 1x1 projection (no activation).
  y = b.conv(p + ".conv." + std::to_string(idx + 1), y, hidden, out_ch, 1, 1, 0);
  y = b.batch_norm(p + ".conv." + std::to_string(idx + 2), y, out_ch);
  if (stride == 1 && in_ch == out_ch) y = b.add(x, y, p + ".add");
  return y;
}

}  // namespace

std::unique_ptr<Graph> build_mobilenet_v2() {
  ModelBuilder b("mobilenet_v2", 0x30b11e02);
  Value* x = b.input("input", DType::F32, {1, 3, 224, 224});
  Value* y = conv_bn_relu6(b, "features.0", x, 3, 32, 3, 2, 1);
  // (expand ratio t, output channels c, repeats n, first stride s)
  static const int64_t settings[7][4] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                         {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t in_ch = 32;
  int feature = 1;
  for (const auto& s : settings) {
    for (int64_t i = 0; i < s[2]; ++i) {
      const int64_t stride = i == 0 ? s[3] : 1;
      y = inverted_residual(b, "features." + std::to_string(feature++), y, in_ch, s[1], stride, s[0]);
      in_ch = s[1];
    }
  }
  y = conv_bn_relu6(b, "features." + std::to_string(feature), y, in_ch, 1280, 1, 1, 1);
  y = b.global_avg_pool(y, "avgpool");
  y = b.flatten(y, 1, "flatten");
  // classifier.0 is Dropout, an identity at inference.
  b.output(b.gemm("classifier.1", y, 1280, 1000, 0.01, "logits"), DType::F32, {-1, 1000});
  return b.finish();
}

}  // namespace tessera::zoo
