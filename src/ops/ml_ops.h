// Registration hooks of the ai.onnx.ml family (called from register_ml_ops).
//
// These ops have domain "ai.onnx.ml"; their min_opset is checked against the
// model's default-domain opset, so it is 1 (ai.onnx.ml versions are handled
// inside each op by the attributes present).
#pragma once

#include "ops/registry.h"

namespace tessera {

void register_ml_label_encoder_ops(OpRegistry& r);  // LabelEncoder
void register_ml_tree_ops(OpRegistry& r);           // TreeEnsemble

}  // namespace tessera
