// Output buffers reused across the runs of one plan. A compiled step writes a
// graph output into a tensor of its own (the caller keeps it), and a fresh
// buffer of megabytes is a fresh mapping whose pages fault in, zeroed, as the
// kernel first writes them, and at 2 threads the two fault on the same
// pages, which can cost a cheap output step several times its warm time. The
// pool keeps the output tensors of the
// last runs and hands one back when nobody else holds its buffer any more
// (the caller dropped or replaced that run's result), so a loop of runs
// writes into buffers already resident; a result the caller still holds is
// never written.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "tessera/tensor.h"

namespace tessera::runtime {

class OutputPool {
 public:
  // Tensors kept per output slot: 2 lets a loop `out = run()` alternate
  // between two buffers (the previous result is alive while the next run writes).
  static constexpr size_t kKeptPerSlot = 2;

  // A tensor of dtype[dims] for output slot `slot`: a kept one nobody else
  // holds, or a new one. Thread-safe.
  Tensor take(int slot, DType dtype, const Dims& dims);

  // Remembers `t` (a copy sharing its buffer) as slot's latest output.
  void keep(int slot, const Tensor& t);

  // Tensors allocated by take (for tests).
  int64_t allocations() const;

 private:
  mutable std::mutex mu_;
  std::map<int, std::vector<Tensor>> kept_;  // oldest first
  int64_t allocations_ = 0;
};

}  // namespace tessera::runtime
