// Ops of the ai.onnx.ml domain (classic machine learning).
#include "ops/op_helpers.h"

namespace tessera {

void register_ml_ops(OpRegistry& r) {}

}  // namespace tessera
