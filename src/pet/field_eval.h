// A demand-driven exact evaluator of a multi-linear Graph over Z_p
// (pet/field.h). `at(output, index)` computes one output element, pulling
// only the elements of each value it reads. Values computed by sums of
// products (Conv, ConvTranspose, MatMul, Gemm, pools, reductions, elementwise
// ops) are memoized per (value, flat index), so the m+1 positions of many
// boxes share their work (PET §5.2); seeded inputs and ops that only move
// elements (Reshape, Transpose, Slice, Pad, Concat, Split, DepthToSpace ...)
// are cheaper to recompute than a memo of their whole size is to clear. A
// convolution element is a direct sum over its taps, never a whole tensor.
//
// Inputs are either explicit field tensors or drawn lazily from a seed
// (field::random_element(seed, input number, flat index)): two evaluators of
// two programs with the same graph inputs and the same seed see the same
// inputs, which is how the verifier compares them.
//
// The ops are those of pet/linear_plan.h, with their ONNX semantics; any other
// op is refused when the evaluator is built ("pet: Relu 'r1' is not
// multi-linear"). AveragePool and ReduceMean divide by multiplying with the
// inverse of the count mod p.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pet/linear_plan.h"

namespace tessera::pet {

// A tensor of field elements, row-major.
struct FieldTensor {
  Dims dims;
  std::vector<uint32_t> data;
};

class FieldEvaluator {
 public:
  // Inputs given explicitly, one per graph input with its dims.
  FieldEvaluator(const Graph& g, std::vector<FieldTensor> inputs);
  // Inputs drawn from `seed`.
  FieldEvaluator(const Graph& g, uint64_t seed);
  // The same on a plan built once (the verifier reuses it across tests); the
  // plan must outlive the evaluator.
  FieldEvaluator(const LinearPlan& plan, uint64_t seed);

  int num_outputs() const { return static_cast<int>(plan_->outputs.size()); }
  const Dims& output_dims(int output) const;
  // One element of graph output `output`, by flat (row-major) index or by
  // multi-index; throws an Error when out of range.
  uint32_t at(int output, int64_t flat);
  uint32_t at(int output, const std::vector<int64_t>& index);
  // The whole output (for tests: every element, memoized).
  FieldTensor output(int output);
  // Elements computed so far over all values (a measure of work).
  int64_t computed() const { return computed_; }

 private:
  void init();
  uint32_t get(int id, int64_t flat) {
    const uint32_t* m = dense_[static_cast<size_t>(id)];
    if (m) {
      const uint32_t v = m[flat];
      if (v != 0xFFFFFFFFu) return v;
    }
    return slow(id, flat);
  }
  uint32_t slow(int id, int64_t flat);
  uint32_t compute(int id, int64_t flat);
  // sum over c of `channels` and the taps (pairs of offsets into x and w) of
  // x[xb(c) + tap.x] * w[wb(c) + tap.w], plus `acc`, reduced mod p.
  template <class XBase, class WBase>
  uint32_t sum_taps(int x, int w, const std::vector<int64_t>& taps, int64_t c0, int64_t c1, uint64_t acc,
                    XBase xb, WBase wb);
  uint32_t eval_conv(const LinNode& n, const int64_t* idx);
  uint32_t eval_conv_transpose(const LinNode& n, const int64_t* idx);
  uint32_t eval_avg_pool(const LinNode& n, const int64_t* idx);
  uint32_t eval_matmul(const LinNode& n, const int64_t* idx);
  uint32_t eval_gemm(const LinNode& n, const int64_t* idx);
  uint32_t eval_reduce(const LinNode& n, const int64_t* idx);

  std::unique_ptr<LinearPlan> owned_;
  const LinearPlan* plan_ = nullptr;
  uint64_t seed_ = 0;
  std::vector<FieldTensor> inputs_;                      // explicit inputs (empty when seeded)
  std::vector<std::vector<uint32_t>> memo_;              // by value id, dense
  std::vector<std::unordered_map<int64_t, uint32_t>> sparse_;  // by value id, for very large values
  std::vector<const uint32_t*> dense_;                   // by value id: memo or explicit data, or null
  std::vector<Dims> strides_;                            // by value id
  std::vector<char> memoize_;                            // by value id
  std::vector<uint64_t> input_keys_;                     // per graph input: its random stream
  int64_t computed_ = 0;
};

}  // namespace tessera::pet
