// Activation arenas for the concurrent runs of one plan. A plan's layout
// (arena_layout.h) fixes where every intermediate lives inside an arena; a
// run needs an arena of its own while it runs, so that runs of one model on
// several threads never share activation memory. A run leases an idle arena
// (or allocates one when all are in use) and hands it back when it ends;
// the pool keeps up to `max_idle` idle arenas, so a steady load of k
// concurrent runs (k <= max_idle) allocates k arenas once and then none.
// While an ArenaSharing lives, arenas also pass between plans (below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tessera/tensor.h"

namespace tessera::runtime {

class ArenaPool {
 public:
  explicit ArenaPool(size_t max_idle = 16) : max_idle_(max_idle) {}
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // An arena held by one run; back to the pool when destroyed.
  class Lease {
   public:
    Lease(Lease&& o) noexcept : pool_(o.pool_), arena_(std::move(o.arena_)) { o.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    uint8_t* data() { return arena_.defined() ? arena_.data<uint8_t>() : nullptr; }

   private:
    friend class ArenaPool;
    Lease(ArenaPool* pool, Tensor arena) : pool_(pool), arena_(std::move(arena)) {}
    ArenaPool* pool_;
    Tensor arena_;  // u8[bytes]; undefined for a plan without intermediates
  };

  // An arena of `bytes` (the same for every lease of one plan); none when 0.
  // Thread-safe.
  Lease acquire(int64_t bytes);

  // The bound of idle arenas kept (set before the plan is shared).
  void set_max_idle(size_t n);

  // Arenas allocated so far (for tests and reports); arenas idle now.
  int64_t allocations() const;
  size_t idle() const;

 private:
  void release(Tensor arena);

  mutable std::mutex mu_;
  std::vector<Tensor> idle_;
  size_t max_idle_;
  int64_t allocations_ = 0;
};

// While one lives (on any thread), arenas pass between plans: an arena a run
// hands back, and those its plan's pool held idle when the plan is
// destroyed, go to a list of spares shared by the process (at most
// kMaxSpareArenas, the smallest dropped first), and a run whose pool has no
// idle arena takes the smallest spare large enough before it maps fresh
// memory. Compiling and timing many short-lived models in turn (PET's
// candidates and its whole-model check, the two models of which alternate)
// then reuses memory the system has already zeroed and mapped, instead of
// faulting in every model's arena on its first run (seconds for the
// gigabytes of a large batch). When the last one ends, the spares are freed.
// An arena holds no state between runs: every slot is written before it is
// read, as between two runs of one plan.
class ArenaSharing {
 public:
  ArenaSharing();
  ~ArenaSharing();
  ArenaSharing(const ArenaSharing&) = delete;
  ArenaSharing& operator=(const ArenaSharing&) = delete;
  static constexpr size_t kMaxSpareArenas = 4;
  static size_t spares();  // held now (for tests)
};

}  // namespace tessera::runtime
