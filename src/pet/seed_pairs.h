// Hand-written (original, mutant) pairs of PET's families with a known
// verdict, at small random shapes with real padding, stride and dilation:
// the correct mutants the mutation test (pet/mutation_test.h) corrupts, and
// the known-equivalent and known-partial cases the verifier's tests check
// against brute force. Weights are graph inputs after the activations; a
// mutant reads them only through ops on weights alone (Reshape, Concat, Pad,
// Slice, Transpose), as PET's mutants do.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/verifier.h"

namespace tessera::pet {

struct SeedPair {
  std::string family;  // "D2H", "conv1x1-to-matmul", "N2W" ...
  Verdict expected = Verdict::Equivalent;
  std::unique_ptr<Graph> original, mutant;
};

// The families seed_pair() builds, in a fixed order.
const std::vector<std::string>& seed_families();
// One pair of `family` at shapes drawn from `rng`; throws an Error for an
// unknown family.
SeedPair seed_pair(const std::string& family, std::mt19937_64& rng);

// Graph-building shorthand shared with the mutation test and the tests.
class GraphBuilder {
 public:
  GraphBuilder();
  Value* input(const Dims& dims);
  Value* ints(const std::vector<int64_t>& v);        // an int64 constant of shape [n]
  Value* floats(const Dims& dims, std::vector<float> v);  // an f32 constant
  Value* op(const std::string& type, std::vector<Value*> inputs, AttrMap attrs = {});
  std::vector<Value*> ops(const std::string& type, std::vector<Value*> inputs, int outputs, AttrMap attrs = {});
  // Marks the outputs, runs inference and hands the graph over.
  std::unique_ptr<Graph> finish(const std::vector<Value*>& outputs);
  Graph& graph() { return *g_; }

 private:
  std::unique_ptr<Graph> g_;
};

}  // namespace tessera::pet
