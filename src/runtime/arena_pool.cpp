// Leasing activation arenas to concurrent runs (see arena_pool.h).
#include "runtime/arena_pool.h"

namespace tessera::runtime {

ArenaPool::Lease::~Lease() {
  if (pool_ && arena_.defined()) pool_->release(std::move(arena_));
}

ArenaPool::Lease ArenaPool::acquire(int64_t bytes) {
  if (bytes <= 0) return Lease(this, Tensor());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Tensor t = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(t));
    }
    ++allocations_;
  }
  // Allocated outside the lock: a large arena takes a while to map.
  return Lease(this, Tensor(DType::U8, {bytes}));
}

void ArenaPool::release(Tensor arena) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(arena));
  // else: past the bound of idle arenas, freed when `arena` goes
}

void ArenaPool::set_max_idle(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  max_idle_ = n;
  while (idle_.size() > max_idle_) idle_.pop_back();
}

int64_t ArenaPool::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

size_t ArenaPool::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

}  // namespace tessera::runtime
