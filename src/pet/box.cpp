#include "pet/box.h"

#include <algorithm>
#include <set>

#include "support/error.h"

namespace tessera::pet {

int64_t Box::volume() const {
  int64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d) v *= std::max<int64_t>(0, hi[d] - lo[d]);
  return v;
}

bool Box::contains(const std::vector<int64_t>& index) const {
  if (index.size() != lo.size()) return false;
  for (size_t d = 0; d < lo.size(); ++d)
    if (index[d] < lo[d] || index[d] >= hi[d]) return false;
  return true;
}

Box Box::intersect(const Box& other) const {
  TESSERA_CHECK(other.lo.size() == lo.size(), "pet: intersecting boxes of rank ", lo.size(), " and ",
                other.lo.size());
  Box r = *this;
  for (size_t d = 0; d < lo.size(); ++d) {
    r.lo[d] = std::max(lo[d], other.lo[d]);
    r.hi[d] = std::max(r.lo[d], std::min(hi[d], other.hi[d]));
  }
  return r;
}

std::string Box::to_string() const {
  std::string s = "[";
  for (size_t d = 0; d < lo.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(lo[d]) + ":" + std::to_string(hi[d]);
  }
  return s + "]";
}

Box whole_box(const Dims& dims) {
  Box b;
  b.lo.assign(dims.size(), 0);
  b.hi.assign(dims.begin(), dims.end());
  return b;
}

int64_t covered_volume(const std::vector<Box>& boxes) {
  // Exact union by coordinate compression per dimension: cells of the grid
  // the boxes' bounds make are either inside some box or not.
  if (boxes.empty()) return 0;
  const size_t rank = boxes[0].lo.size();
  std::vector<std::vector<int64_t>> cuts(rank);
  for (const Box& b : boxes) {
    TESSERA_CHECK(b.lo.size() == rank, "pet: boxes of different ranks");
    for (size_t d = 0; d < rank; ++d) {
      cuts[d].push_back(b.lo[d]);
      cuts[d].push_back(b.hi[d]);
    }
  }
  for (auto& c : cuts) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  int64_t total = 0;
  std::vector<size_t> cell(rank, 0);
  if (rank == 0) return 1;
  for (;;) {
    Box c;
    c.lo.resize(rank);
    c.hi.resize(rank);
    bool valid = true;
    for (size_t d = 0; d < rank; ++d) {
      if (cell[d] + 1 >= cuts[d].size()) valid = false;
      else {
        c.lo[d] = cuts[d][cell[d]];
        c.hi[d] = cuts[d][cell[d] + 1];
      }
    }
    if (valid && !c.empty())
      for (const Box& b : boxes)
        if (b.intersect(c).volume() == c.volume()) {
          total += c.volume();
          break;
        }
    size_t d = 0;
    while (d < rank && ++cell[d] + 1 >= cuts[d].size()) cell[d++] = 0;
    if (d == rank) break;
  }
  return total;
}

}  // namespace tessera::pet
