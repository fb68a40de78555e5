// Helpers for per-op tests: run one node through inference and the reference
// interpreter, and compare against hand-computed expectations.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "support/error.h"

namespace tessera::testing {

struct OpCase {
  std::string op;
  std::vector<Tensor> inputs;    // an undefined Tensor = absent optional input
  AttrMap attrs;
  int num_outputs = 1;
  int64_t opset = 17;
  std::vector<int> constant_inputs;  // these inputs become constants (seen by inference)
};

// The one-node graph of a case ("node" with inputs in0.., outputs out0..), types inferred.
std::unique_ptr<Graph> build_op_graph(const OpCase& c);
// Builds a one-node graph, infers types, runs the interpreter (which checks
// the kernel's output types against inference) and returns the outputs.
std::vector<Tensor> run_op(const OpCase& c);
// Just the inferred output types (inputs as in run_op).
std::vector<TensorType> infer_op(const OpCase& c);

// Output types of a one-node graph whose inputs have the given (possibly
// unknown) static types: for inference tests with -1 dims.
std::vector<TensorType> infer_types(const std::string& op, const std::vector<TensorType>& ins, AttrMap attrs = {},
                                    int outputs = 1, int64_t opset = 17);

// EXPECTs equal dtype, dims, and values within atol + rtol*|expected|.
void expect_near(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6);

inline Tensor f32(Dims d, std::vector<float> v) { return Tensor::from<float>(std::move(d), v); }
inline Tensor i64(Dims d, std::vector<int64_t> v) { return Tensor::from<int64_t>(std::move(d), v); }

}  // namespace tessera::testing
