// ONNX model import: ModelProto -> Graph, verified, with types inferred.
// Folding and every other graph pass belong to load_model's pipeline.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace tessera {

struct ImportOptions {
  // Fixes graph-input shapes at load ("input" -> 1x3x224x224); overrides
  // dynamic (and must agree with static) dims.
  std::map<std::string, Dims> input_shapes;
  // false: types stay as the file declares them (load_model's pass pipeline
  // infers them as its first pass).
  bool infer_types = true;
  // Top-level initializers whose data the caller holds (an artifact's
  // weights, in its mapped file): their protos give type and dims only, and
  // each becomes a tensor viewing these bytes (tensor_over_bytes), which
  // keeps `data_owner` alive.
  std::map<std::string, std::string_view> initializer_data;
  std::shared_ptr<void> data_owner;
};

// Reads a model file; external data is resolved relative to its folder.
std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& opts = {});
// Parses serialized ModelProto bytes.
std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& base_dir,
                                         const ImportOptions& opts = {});

// Parses "1x3x224x224" into dims; throws on a malformed spec.
Dims parse_dims(const std::string& spec);

}  // namespace tessera
