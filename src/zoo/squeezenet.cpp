// torchvision SqueezeNet 1.1 with torchvision's names ("features.3.squeeze").
#include <string>

#include "zoo/builder.h"
#include "zoo/models.h"

namespace tessera::zoo {
namespace {

// Fire module: 1x1 squeeze, then parallel 1x1 and 3x3 expands concatenated.
Value* fire(ModelBuilder& b, const std::string& p, Value* x, int64_t in_ch, int64_t squeeze, int64_t expand1,
            int64_t expand3) {
  Value* s = b.relu(b.conv(p + ".squeeze", x, in_ch, squeeze, 1, 1, 0, 1, true), p + ".squeeze_activation");
  Value* e1 = b.relu(b.conv(p + ".expand1x1", s, squeeze, expand1, 1, 1, 0, 1, true), p + ".expand1x1_activation");
  Value* e3 = b.relu(b.conv(p + ".expand3x3", s, squeeze, expand3, 3, 1, 1, 1, true), p + ".expand3x3_activation");
  return b.op("Concat", {e1, e3}, {{"axis", Attribute::of_int(1)}}, p + ".concat");
}

Value* ceil_max_pool(ModelBuilder& b, const std::string& name, Value* x) {
  AttrMap a;
  a["kernel_shape"] = Attribute::of_ints({3, 3});
  a["strides"] = Attribute::of_ints({2, 2});
  a["ceil_mode"] = Attribute::of_int(1);
  return b.op("MaxPool", {x}, std::move(a), name);
}

}  // namespace

std::unique_ptr<Graph> build_squeezenet1_1() {
  ModelBuilder b("squeezenet1_1", 0x5c0eee11);
  Value* x = b.input("input", DType::F32, {1, 3, 224, 224});
  Value* y = b.relu(b.conv("features.0", x, 3, 64, 3, 2, 0, 1, true), "features.1");
  y = ceil_max_pool(b, "features.2", y);
  y = fire(b, "features.3", y, 64, 16, 64, 64);
  y = fire(b, "features.4", y, 128, 16, 64, 64);
  y = ceil_max_pool(b, "features.5", y);
  y = fire(b, "features.6", y, 128, 32, 128, 128);
  y = fire(b, "features.7", y, 256, 32, 128, 128);
  y = ceil_max_pool(b, "features.8", y);
  y = fire(b, "features.9", y, 256, 48, 192, 192);
  y = fire(b, "features.10", y, 384, 48, 192, 192);
  y = fire(b, "features.11", y, 384, 64, 256, 256);
  y = fire(b, "features.12", y, 512, 64, 256, 256);
  // classifier: Dropout (identity), final conv, ReLU, average pool.
  y = b.relu(b.conv("classifier.1", y, 512, 1000, 1, 1, 0, 1, true), "classifier.2");
  y = b.global_avg_pool(y, "classifier.3");
  b.output(b.flatten(y, 1, "logits"), DType::F32, {-1, 1000});
  return b.finish();
}

}  // namespace tessera::zoo
