// A box: a dense region of a tensor, [lo, hi) per dimension. PET's verifier
// splits each output into boxes whose elements share one summation interval
// (pet/boxes.h), reports the boxes a mutant gets wrong, and the corrector
// recomputes exactly those (pet/corrector.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/tensor.h"

namespace tessera::pet {

struct Box {
  std::vector<int64_t> lo, hi;  // per dimension, lo <= hi

  int64_t rank() const { return static_cast<int64_t>(lo.size()); }
  int64_t extent(int64_t d) const { return hi[static_cast<size_t>(d)] - lo[static_cast<size_t>(d)]; }
  int64_t volume() const;  // elements; 0 when any extent is 0
  bool empty() const { return volume() == 0; }
  bool contains(const std::vector<int64_t>& index) const;
  // The intersection (empty when they do not overlap; ranks must match).
  Box intersect(const Box& other) const;
  std::string to_string() const;  // "[0:1, 0:64, 0:2, 30:32]"
  bool operator==(const Box&) const = default;
};

// The whole of a tensor with these dims.
Box whole_box(const Dims& dims);
// Elements covered by the boxes, counting overlaps once.
int64_t covered_volume(const std::vector<Box>& boxes);

}  // namespace tessera::pet
