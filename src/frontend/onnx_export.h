// ONNX model export: Graph -> ModelProto file.
#pragma once

#include <string>

#include "ir/graph.h"

namespace tessera {

// Serialized ModelProto of the graph (constants become initializers).
std::string export_onnx_bytes(const Graph& g);
void export_onnx_file(const Graph& g, const std::string& path);

}  // namespace tessera
