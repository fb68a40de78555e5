// The pipeline, in one place: loading a model (file or zoo), preparing
// inputs, and running it. The CLI and the public API call these.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opt/pass_manager.h"

namespace tessera {

struct LoadOptions {
  std::map<std::string, Dims> input_shapes;  // --shape name=1x3x224x224
  PassOptions passes;                        // passes off, graph dumps, verification
};

// "zoo:NAME" builds an embedded model; anything else is an ONNX file. Then
// the load pipeline (opt/pipeline.h) runs on it.
std::unique_ptr<Graph> load_model(const std::string& spec, const LoadOptions& opts = {});

// A tensor of random values: floats in [-1, 1), integers in [0, 10), bools fair.
Tensor random_tensor(DType dtype, const Dims& dims, std::mt19937_64& rng);

// Seeded random inputs matching the graph's signature (floats in [-1, 1),
// integers in [0, 10), bools fair). Throws naming an input with dynamic dims.
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed);

// Reads inputs from files (.pb TensorProto or .npy) or from a directory of
// input_0.pb ... in graph-input order.
std::vector<Tensor> read_inputs(const Graph& g, const std::vector<std::string>& paths);

// Order-independent summary of a tensor's values for quick comparison.
double checksum(const Tensor& t);

}  // namespace tessera
