// The runtime thread pool: coverage of [0, n), chunk shape, exceptions,
// nesting, resizing, each thread's own run of chunks with stealing, pinned
// workers, and the C entry point used by JIT code.
#include "support/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "support/error.h"

namespace tessera {
namespace {

// Runs parallel_for and checks every index is visited exactly once by
// contiguous, disjoint, non-empty chunks.
void expect_covers(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    {
      std::lock_guard<std::mutex> lock(mu);
      chunks.emplace_back(begin, end);
    }
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
  std::sort(chunks.begin(), chunks.end());
  int64_t next = 0;
  for (auto [begin, end] : chunks) {
    EXPECT_EQ(begin, next) << "n=" << n;
    EXPECT_LT(begin, end) << "n=" << n;
    next = end;
  }
  EXPECT_EQ(next, std::max<int64_t>(n, 0));
}

TEST(ThreadPool, VisitsEveryIndexOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int64_t n : {-3, 0, 1, 2, 3, 4, 5, 7, 16, 17, 100, 1001, 65537}) expect_covers(pool, n);
}

TEST(ThreadPool, ManyLoopsInARow) {
  ThreadPool pool(3);
  for (int64_t n = 0; n < 300; ++n) expect_covers(pool, n);
}

TEST(ThreadPool, SetThreads) {
  ThreadPool pool(1);
  for (int t : {1, 2, 1, 5}) {
    pool.set_threads(t);
    EXPECT_EQ(pool.threads(), t);
    for (int64_t n : {0, 1, 2, 9, 1000}) expect_covers(pool, n);
  }
  pool.set_threads(0);
  EXPECT_EQ(pool.threads(), ThreadPool::default_threads());
  expect_covers(pool, 123);
}

TEST(ThreadPool, UsesSeveralThreads) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each chunk waits until a second thread has shown up (or gives up).
  std::atomic<int> arrived{0};
  pool.parallel_for(2, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    for (int spin = 0; spin < 2000 && arrived.load() < 2; ++spin)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_EQ(ids.size(), 2u);
}

// Each participant owns an equal run of consecutive chunks (2 threads, 8
// chunks: the caller 0-3, the worker 4-7) and a thread that runs out takes
// the others' from the back. The worker's first chunk (4) waits until its
// last (7) has run, which only a thief can do: without stealing the loop
// would not finish. And chunk 0, the caller's first, runs on the caller:
// the worker could only reach it after its own run, whose chunk 4 first
// waits for chunk 0 to have started.
TEST(ThreadPool, OwnRunFirstThenStealsFromTheBack) {
  ThreadPool pool(2);
  std::atomic<bool> started0{false}, done7{false};
  std::mutex mu;
  std::vector<std::thread::id> ran(8);
  const std::thread::id caller = std::this_thread::get_id();
  auto wait_for = [](const std::atomic<bool>& flag) {
    for (int spin = 0; spin < 10000 && !flag.load(); ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return flag.load();
  };
  bool waited = true;
  pool.parallel_for(8, [&](int64_t begin, int64_t end) {
    ASSERT_EQ(end, begin + 1);
    {
      std::lock_guard<std::mutex> lock(mu);
      ran[static_cast<size_t>(begin)] = std::this_thread::get_id();
    }
    if (begin == 0) started0 = true;
    if (begin == 4 && std::this_thread::get_id() != caller) waited = wait_for(started0) && wait_for(done7) && waited;
    if (begin == 7) done7 = true;
  });
  EXPECT_TRUE(waited) << "chunk 7 was not taken while the worker waited in chunk 4";
  EXPECT_EQ(ran[0], caller);
  for (const std::thread::id& id : ran) EXPECT_NE(id, std::thread::id());
}

// A long loop is cut into 16 chunks per thread, of sizes that differ by at
// most one: a thread that ends its run first steals at most a sixteenth of
// another's share at a time.
TEST(ThreadPool, LongLoopsTakeSixteenChunksPerThread) {
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<int64_t> sizes;
  int64_t covered = 0;
  pool.parallel_for(1000, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    sizes.push_back(end - begin);
    covered += end - begin;
  });
  EXPECT_EQ(covered, 1000);
  ASSERT_EQ(sizes.size(), 32u);
  for (int64_t s : sizes) EXPECT_TRUE(s == 1000 / 32 || s == 1000 / 32 + 1) << s;
}

// The CPUs in `set`, ascending.
std::vector<int> cpus_in(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The CPUs a worker of `pool` (2 threads) may run on, seen from inside a
// chunk it runs (each chunk waits until both threads have arrived).
std::vector<int> worker_cpus(ThreadPool& pool) {
  std::vector<int> cpus;
  std::atomic<int> arrived{0};
  std::mutex mu;
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallel_for(2, [&](int64_t, int64_t) {
    arrived.fetch_add(1);
    for (int spin = 0; spin < 2000 && arrived.load() < 2; ++spin)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (std::this_thread::get_id() == caller) return;
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    std::lock_guard<std::mutex> lock(mu);
    cpus = cpus_in(set);
  });
  return cpus;
}

// Worker 1 runs only on the second CPU the process may use; with
// TESSERA_PIN_THREADS=0 it may run on all of them.
TEST(ThreadPool, WorkersArePinnedUnlessAskedNotTo) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const std::vector<int> all = cpus_in(allowed);
  if (all.size() < 2) GTEST_SKIP() << "the process may use one CPU: a 2-thread pool is not pinned";
  {
    ThreadPool pool(2);
    EXPECT_EQ(worker_cpus(pool), std::vector<int>{all[1]});
  }
  ::setenv("TESSERA_PIN_THREADS", "0", 1);
  {
    ThreadPool pool(2);
    EXPECT_EQ(worker_cpus(pool), all);
  }
  ::unsetenv("TESSERA_PIN_THREADS");
}

// A caller on the CPU a worker is pinned to moves off it before running
// its chunks (the worker cannot): put there by narrowing its affinity, then
// given all CPUs back, it runs its chunk elsewhere.
TEST(ThreadPool, CallerLeavesAPinnedWorkersCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const std::vector<int> all = cpus_in(allowed);
  if (all.size() < 2) GTEST_SKIP() << "the process may use one CPU: a 2-thread pool is not pinned";
  ThreadPool pool(2);
  ASSERT_EQ(worker_cpus(pool), std::vector<int>{all[1]});
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(all[1], &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  ASSERT_EQ(sched_getcpu(), all[1]);
  ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
  // Chunk 0 is the caller's: the worker's chunk 1 waits until it has started,
  // so the worker cannot take it first.
  std::atomic<int> caller_cpu{-1};
  std::atomic<bool> started0{false};
  pool.parallel_for(2, [&](int64_t begin, int64_t) {
    if (begin == 0) {
      caller_cpu = sched_getcpu();
      started0 = true;
      return;
    }
    for (int spin = 0; spin < 2000 && !started0.load(); ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_NE(caller_cpu.load(), all[1]);
  EXPECT_NE(caller_cpu.load(), -1);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  for (int t : {1, 2, 4}) {
    ThreadPool pool(t);
    std::atomic<int64_t> ran{0};
    EXPECT_THROW(pool.parallel_for(1000,
                                   [&](int64_t begin, int64_t end) {
                                     ran += end - begin;
                                     if (begin <= 500 && 500 < end) TESSERA_FAIL("chunk holding 500 failed");
                                   }),
                 Error);
    EXPECT_GT(ran.load(), 0);
    expect_covers(pool, 100);  // still usable afterwards
  }
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(4);
  constexpr int64_t kOuter = 13, kInner = 29;
  std::vector<std::atomic<int>> hits(kOuter * kInner);
  pool.parallel_for(kOuter, [&](int64_t ob, int64_t oe) {
    EXPECT_TRUE(ThreadPool::in_parallel_region());
    for (int64_t o = ob; o < oe; ++o)
      pool.parallel_for(kInner, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) hits[static_cast<size_t>(o * kInner + i)].fetch_add(1);
      });
  });
  EXPECT_FALSE(ThreadPool::in_parallel_region());
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, CallersOnSeveralThreads) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int64_t n = 0; n < 50; ++n) expect_covers(pool, n * 7);
    });
  for (std::thread& t : callers) t.join();
}

// A pool refuses more threads than max_threads() (a crafted artifact asked
// for 100,000) and keeps the ones it has.
TEST(ThreadPool, ThreadCountIsBounded) {
  EXPECT_GE(ThreadPool::max_threads(), 64);
  EXPECT_LE(ThreadPool::max_threads(), 1024);
  EXPECT_GE(ThreadPool::max_threads(), 4 * ThreadPool::default_threads() > 1024 ? 1024 : 4 * ThreadPool::default_threads());
  ThreadPool pool(2);
  EXPECT_THROW(pool.set_threads(ThreadPool::max_threads() + 1), Error);
  EXPECT_THROW(ThreadPool(100000), Error);
  EXPECT_EQ(pool.threads(), 2);
  expect_covers(pool, 100);
}

TEST(ThreadPool, CEntryPoint) {
  ThreadPool& global = ThreadPool::global();
  const int saved = global.threads();
  for (int t : {1, 2, 4}) {
    global.set_threads(t);
    std::vector<std::atomic<int>> hits(777);
    tessera_parallel_for(
        777,
        [](int64_t begin, int64_t end, void* closure) {
          if (begin >= end) ADD_FAILURE() << "empty chunk [" << begin << ", " << end << ")";
          for (int64_t i = begin; i < end; ++i) (*static_cast<std::vector<std::atomic<int>>*>(closure))[i] += 1;
        },
        &hits);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    tessera_parallel_for(0, [](int64_t, int64_t, void*) { ADD_FAILURE() << "ran for n = 0"; }, nullptr);
  }
  global.set_threads(saved);
}

}  // namespace
}  // namespace tessera
