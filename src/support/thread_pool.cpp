#include "support/thread_pool.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "support/error.h"

namespace tessera {

namespace {
// More chunks than threads, so uneven chunks still balance: a thread that
// ends its run first steals the others' chunks one at a time from the back,
// and the last one it takes may end after the thread it took it from; a
// sixteenth of each thread's share bounds that tail (a loop of a kernel's
// output tiles runs a few hundred iterations, so its chunks stay several
// tiles long).
constexpr int64_t kChunksPerThread = 16;

// Workers spin this long for the next loop before sleeping, and the caller
// this long for the last chunks: a model runs its kernels back to back, and
// waking a sleeping thread costs tens of microseconds per kernel (more in a
// VM, whose idle vCPU is halted); a shorter spin let the workers fall asleep
// inside a run (bench/MEASUREMENTS.md, "Thread pool").
constexpr auto kSpin = std::chrono::microseconds(2000);

// After this long a spinning thread yields its core between checks: when
// another process holds the other core, the pool's threads share one, and
// a spinning thread would otherwise keep the one it waits for from running.
constexpr auto kSpinBeforeYield = std::chrono::microseconds(50);

// Spins until ready() or kSpin has passed; returns ready().
template <class Ready>
bool spin_until(Ready ready) {
  auto start = std::chrono::steady_clock::now();
  bool yielding = false;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if (yielding) std::this_thread::yield();
    else _mm_pause();
    if ((i & 63) == 63 || yielding) {
      auto waited = std::chrono::steady_clock::now() - start;
      if (waited > kSpin) return ready();
      yielding = waited > kSpinBeforeYield;
    }
  }
}

// The scheduler may wake a worker onto the CPU of the thread that dispatched
// the loop while another CPU idles, and its balancing leaves busy threads
// where they are: after ONNX Runtime had run on both cores, both of the
// pool's threads stayed on one. Such a worker moves itself to another CPU it
// may run on (its affinity narrowed for the move, then restored).
void leave_cpu(int cpu) {
  if (cpu < 0 || sched_getcpu() != cpu) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2)
    return;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof others, &others) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
}

// Worker t is pinned to the t-th CPU the process may run on (the caller is
// left free), when there are at least as many as threads and
// TESSERA_PIN_THREADS is not 0. In its own session — its own scheduler
// autogroup, as a benchmark harness starts each runtime — the pool's two
// threads were otherwise often left on one CPU, waiting on each other's
// run queue (bench/MEASUREMENTS.md, "Thread pool"). Returns the CPU, or -1.
int pin_worker(int me, int threads) {
  if (const char* e = std::getenv("TESSERA_PIN_THREADS"); e && std::string(e) == "0") return -1;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < threads) return -1;
  for (int c = 0, k = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed) || k++ != me) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? c : -1;  // a failure leaves the worker free
  }
  return -1;
}

thread_local bool t_in_region = false;

// Marks the current thread as running chunks for the guard's lifetime.
class RegionGuard {
 public:
  RegionGuard() : saved_(t_in_region) { t_in_region = true; }
  ~RegionGuard() { t_in_region = saved_; }

 private:
  bool saved_;
};
}  // namespace

// One parallel_for. Each participant (the caller 0, worker t) owns an equal
// run of consecutive chunks and takes them front first; one that runs out
// takes the others' from the back. So when consecutive kernels split their
// loops alike (a blocked convolution's pixel rows), a thread reads what it
// wrote itself, from its own cache, and only a late or slow thread's work
// moves. Shared with the workers through a shared_ptr, so a worker that
// wakes late only finds no chunk left.
struct ThreadPool::Job {
  // A participant's chunks [front, back), packed in one word so the owner
  // (front) and a thief (back) claim by compare-and-swap.
  struct alignas(64) Run {
    std::atomic<uint64_t> bounds{0};
  };
  const Body* body = nullptr;
  int64_t n = 0, chunks = 0;
  int participants = 1;
  int dispatch_cpu = -1;  // where the dispatching thread ran
  std::unique_ptr<Run[]> runs;
  std::atomic<int64_t> finished{0};
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards error; with done for the caller's wait
  std::condition_variable done;
  std::exception_ptr error;

  static uint64_t pack(uint64_t front, uint64_t back) { return front << 32 | back; }

  void split(int threads) {
    participants = threads;
    runs = std::make_unique<Run[]>(static_cast<size_t>(threads));
    for (int p = 0; p < threads; ++p)
      runs[p].bounds = pack(static_cast<uint64_t>(chunks * p / threads), static_cast<uint64_t>(chunks * (p + 1) / threads));
  }

  // The next chunk of run `r`, from the front (its owner) or the back; -1 when empty.
  int64_t claim(Run& r, bool owner) {
    uint64_t b = r.bounds.load(std::memory_order_relaxed);
    for (;;) {
      uint64_t front = b >> 32, back = b & 0xffffffffu;
      if (front >= back) return -1;
      uint64_t next = owner ? pack(front + 1, back) : pack(front, back - 1);
      if (r.bounds.compare_exchange_weak(b, next, std::memory_order_relaxed))
        return static_cast<int64_t>(owner ? front : back - 1);
    }
  }

  // Chunk c covers [c * q + min(c, r), ...) with q, r = divmod(n, chunks).
  int64_t chunk_begin(int64_t c) const { return c * (n / chunks) + std::min(c, n % chunks); }

  void run_chunk(int64_t c) {
    if (!failed.load(std::memory_order_relaxed)) {
      try {
        (*body)(chunk_begin(c), chunk_begin(c + 1));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
    if (finished.fetch_add(1) + 1 == chunks) {
      std::lock_guard<std::mutex> lock(mu);
      done.notify_all();
    }
  }

  // Participant `me`'s own run, then the others' from the back.
  void run_chunks(int me) {
    RegionGuard region;
    if (me >= participants) me = participants - 1;  // a worker of a pool since shrunk: a thief only
    for (int i = 0; i < participants; ++i) {
      Run& r = runs[(me + i) % participants];
      for (int64_t c; (c = claim(r, i == 0)) >= 0;) run_chunk(c);
    }
  }
};

ThreadPool& ThreadPool::global() {
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

int ThreadPool::default_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

bool ThreadPool::in_parallel_region() { return t_in_region; }

namespace {
void check_thread_count(int threads) {
  TESSERA_CHECK(threads <= ThreadPool::max_threads(), "cannot run ", threads, " threads: at most ",
                ThreadPool::max_threads(), " (4x the ", ThreadPool::default_threads(),
                " cores, at least 64, at most 1024)");
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  check_thread_count(threads);
  start_workers(threads);
}

ThreadPool::~ThreadPool() {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  stop_workers();
}

int ThreadPool::threads() const { return threads_; }

void ThreadPool::set_threads(int threads) {
  TESSERA_CHECK(!t_in_region, "ThreadPool::set_threads: called from inside a parallel loop");
  check_thread_count(threads);
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  stop_workers();
  start_workers(threads);
}

int ThreadPool::max_threads() { return std::clamp(4 * default_threads(), 64, 1024); }

void ThreadPool::start_workers(int threads) {
  threads_ = threads > 0 ? threads : default_threads();
  pinned_cpus_ = 0;
  stop_ = false;
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int t = 1; t < threads_; ++t)
    workers_.emplace_back([this, t, n = threads_.load()] {
      const int cpu = pin_worker(t, n);
      if (cpu >= 0 && cpu < 64) pinned_cpus_.fetch_or(uint64_t{1} << cpu);
      worker_main(t);
    });
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
}

void ThreadPool::worker_main(int me) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    lock.unlock();
    spin_until([&] { return published_.load(std::memory_order_acquire) != seen; });
    lock.lock();
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    std::shared_ptr<Job> job = job_;
    lock.unlock();
    if (job) {
      leave_cpu(job->dispatch_cpu);
      job->run_chunks(me);
    }
    lock.lock();
  }
}

void ThreadPool::parallel_for(int64_t n, const Body& body) {
  if (n <= 0) return;
  if (t_in_region || n == 1 || threads_ <= 1) {  // nested, trivial or single-threaded: run here
    body(0, n);
    return;
  }
  std::lock_guard<std::mutex> dispatch(dispatch_mu_);
  if (threads_ <= 1) {  // resized while we waited
    body(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->body = &body;
  job->n = n;
  // A caller the scheduler put on a pinned worker's CPU leaves it: the
  // worker cannot, and the two would share one core.
  int cpu = sched_getcpu();
  if (cpu >= 0 && cpu < 64 && (pinned_cpus_.load(std::memory_order_relaxed) >> cpu & 1)) {
    leave_cpu(cpu);
    cpu = sched_getcpu();
  }
  job->dispatch_cpu = cpu;
  job->chunks = std::min<int64_t>(n, kChunksPerThread * threads_);
  job->split(threads_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();
  job->run_chunks(0);
  if (!spin_until([&] { return job->finished.load(std::memory_order_acquire) == job->chunks; })) {
    std::unique_lock<std::mutex> lock(job->mu);
    job->done.wait(lock, [&] { return job->finished.load() == job->chunks; });
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_.reset();
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace tessera

extern "C" void tessera_parallel_for(int64_t n, void (*body)(int64_t begin, int64_t end, void* closure),
                                     void* closure) noexcept {
  tessera::ThreadPool::global().parallel_for(n, [&](int64_t begin, int64_t end) { body(begin, end, closure); });
}
