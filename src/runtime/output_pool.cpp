// Output buffers reused across runs (see output_pool.h).
#include "runtime/output_pool.h"

namespace tessera::runtime {

Tensor OutputPool::take(int slot, DType dtype, const Dims& dims) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Tensor>& kept = kept_[slot];
    for (size_t i = 0; i < kept.size(); ++i) {
      // Only the pool holds it (and the pool's lock is held): no one can copy it meanwhile.
      if (kept[i].sole_owner() && kept[i].dtype() == dtype && kept[i].dims() == dims) {
        Tensor t = std::move(kept[i]);
        kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
        return t;
      }
    }
    ++allocations_;
  }
  return Tensor(dtype, dims);  // outside the lock: a large buffer takes a while to map
}

void OutputPool::keep(int slot, const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::String) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Tensor>& kept = kept_[slot];
  kept.push_back(t);
  if (kept.size() > kKeptPerSlot) kept.erase(kept.begin());
}

int64_t OutputPool::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

}  // namespace tessera::runtime
