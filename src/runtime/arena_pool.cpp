// Leasing activation arenas to concurrent runs (see arena_pool.h).
#include "runtime/arena_pool.h"

#include <algorithm>
#include <optional>

namespace tessera::runtime {

namespace {

// The arenas shared between plans while an ArenaSharing lives.
struct Spares {
  std::mutex mu;
  int scopes = 0;
  std::vector<Tensor> arenas;
};
Spares& shared_spares() {
  static Spares s;
  return s;
}

// Keeps `arena` as a spare when sharing is on; else hands it back.
std::optional<Tensor> to_spares(Tensor arena) {
  Spares& s = shared_spares();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.scopes == 0) return arena;
  s.arenas.push_back(std::move(arena));
  if (s.arenas.size() > ArenaSharing::kMaxSpareArenas) {
    auto smallest = std::min_element(s.arenas.begin(), s.arenas.end(),
                                     [](const Tensor& a, const Tensor& b) { return a.nbytes() < b.nbytes(); });
    Tensor dropped = std::move(*smallest);
    s.arenas.erase(smallest);
    (void)dropped;  // unmapped here; a few of them at most
  }
  return std::nullopt;
}

// The smallest spare of at least `bytes`, if sharing is on and one is.
std::optional<Tensor> from_spares(int64_t bytes) {
  Spares& s = shared_spares();
  std::lock_guard<std::mutex> lock(s.mu);
  auto best = s.arenas.end();
  for (auto it = s.arenas.begin(); it != s.arenas.end(); ++it)
    if (it->numel() >= bytes && (best == s.arenas.end() || it->numel() < best->numel())) best = it;
  if (best == s.arenas.end()) return std::nullopt;
  Tensor t = std::move(*best);
  s.arenas.erase(best);
  return t;
}

}  // namespace

ArenaSharing::ArenaSharing() {
  std::lock_guard<std::mutex> lock(shared_spares().mu);
  ++shared_spares().scopes;
}

ArenaSharing::~ArenaSharing() {
  std::vector<Tensor> freed;
  {
    std::lock_guard<std::mutex> lock(shared_spares().mu);
    if (--shared_spares().scopes == 0) freed.swap(shared_spares().arenas);
  }
}  // `freed` unmapped outside the lock

size_t ArenaSharing::spares() {
  std::lock_guard<std::mutex> lock(shared_spares().mu);
  return shared_spares().arenas.size();
}

ArenaPool::~ArenaPool() {
  for (Tensor& t : idle_) (void)to_spares(std::move(t));
}

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
  }
  if (std::optional<Tensor> t = from_spares(bytes)) return Lease(this, std::move(*t));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
  }
  // Allocated outside the lock: a large arena takes a while to map.
  return Lease(this, Tensor(DType::U8, {bytes}));
}

void ArenaPool::release(Tensor arena) {
  std::optional<Tensor> kept = to_spares(std::move(arena));
  if (!kept) return;
  arena = std::move(*kept);
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
