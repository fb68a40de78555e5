// Arenas passed between plans while an ArenaSharing lives (runtime/arena_pool.h):
// a pool with none idle takes the smallest spare large enough, spares are
// bounded and freed with the last scope, nothing is shared outside one, and
// two models alternating on shared arenas compute bit for bit what each
// computes alone.
#include <gtest/gtest.h>

#include <cstring>

#include "driver/driver.h"
#include "runtime/arena_pool.h"
#include "runtime/executor.h"

namespace tessera::runtime {
namespace {

TEST(ArenaSharing, PoolsShareArenasOnlyWhileAScopeLives) {
  {
    ArenaPool a, b;
    { ArenaPool::Lease l = a.acquire(1000); }
    EXPECT_EQ(a.idle(), 1u) << "outside a scope an arena goes back to its own pool";
    EXPECT_EQ(ArenaSharing::spares(), 0u);
    { ArenaPool::Lease l = b.acquire(1000); }
    EXPECT_EQ(b.allocations(), 1);
  }
  ArenaPool kept;
  { ArenaPool::Lease l = kept.acquire(512); }
  ASSERT_EQ(kept.idle(), 1u);
  {
    ArenaSharing scope;
    ArenaPool c, d, e;
    uint8_t* small = nullptr;
    uint8_t* large = nullptr;
    {
      ArenaPool::Lease l4 = c.acquire(4096);
      ArenaPool::Lease l8 = e.acquire(8192);
      small = l4.data();
      large = l8.data();
    }
    EXPECT_EQ(c.idle(), 0u);
    EXPECT_EQ(ArenaSharing::spares(), 2u);
    {
      ArenaPool::Lease l = d.acquire(3000);
      EXPECT_EQ(l.data(), small) << "the smallest spare large enough";
      EXPECT_EQ(d.allocations(), 0);
      ArenaPool::Lease m = d.acquire(6000);
      EXPECT_EQ(m.data(), large);
      ArenaPool::Lease n = d.acquire(9000);
      EXPECT_EQ(d.allocations(), 1) << "no spare large enough: a fresh arena";
    }
    EXPECT_EQ(ArenaSharing::spares(), 3u);
    {
      ArenaPool f;
      std::vector<ArenaPool::Lease> leases;
      for (int64_t bytes : {10000, 11000, 12000}) leases.push_back(f.acquire(bytes));  // none spare: fresh
    }
    EXPECT_EQ(ArenaSharing::spares(), ArenaSharing::kMaxSpareArenas) << "bounded, the smallest dropped (4096, 8192)";
    {
      ArenaPool::Lease l = d.acquire(9000);
      EXPECT_EQ(d.allocations(), 1) << "the largest were kept";
    }
  }
  EXPECT_EQ(ArenaSharing::spares(), 0u) << "freed with the last scope";
  EXPECT_EQ(kept.idle(), 1u) << "a pool's own idle arenas stay its own";
}

TEST(ArenaSharing, ADestroyedPoolsIdleArenasBecomeSpares) {
  auto pool = std::make_unique<ArenaPool>();
  { ArenaPool::Lease l = pool->acquire(2048); }
  ArenaSharing scope;
  pool.reset();
  EXPECT_EQ(ArenaSharing::spares(), 1u);
  ArenaPool other;
  { ArenaPool::Lease l = other.acquire(2048); }
  EXPECT_EQ(other.allocations(), 0);
}

bool bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dims() != b[i].dims() || std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0) return false;
  return true;
}

// Two models run in turns, as PET's whole-model check runs them, each on the
// arena the other just handed back (garbage from another plan), compute
// what each computes alone.
TEST(ArenaSharing, ModelsAlternatingOnSharedArenasComputeWhatTheyDoAlone) {
  ExecutorOptions o;
  Executor a(load_model("zoo:gpt2_tiny"), o), b(load_model("zoo:mobilenet_v2"), o);
  const std::vector<Tensor> ia = random_inputs(a.graph(), 1), ib = random_inputs(b.graph(), 2);
  const std::vector<Tensor> alone_a = a.run(ia), alone_b = b.run(ib);
  ArenaSharing scope;
  Executor a2(load_model("zoo:gpt2_tiny"), o), b2(load_model("zoo:mobilenet_v2"), o);
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(bit_identical(b2.run(ib), alone_b)) << "round " << round;
    EXPECT_TRUE(bit_identical(a2.run(ia), alone_a)) << "round " << round;
  }
  int64_t fresh = 0;
  for (const Executor* e : {&a2, &b2})
    for (const auto& p : e->plans()) fresh += p->arenas.allocations();
  EXPECT_LE(fresh, 2) << "after their first runs, the two take each other's arenas or their own";
  EXPECT_GE(ArenaSharing::spares(), 1u);
}

}  // namespace
}  // namespace tessera::runtime
