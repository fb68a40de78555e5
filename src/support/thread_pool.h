// The runtime's persistent thread pool: a fixed set of worker threads, made
// once, that run parallel loops. The calling thread takes part in every loop
// and blocks until all of it is done.
//
// parallel_for(n, body) splits [0, n) into contiguous, disjoint chunks and
// calls body(begin, end) once per chunk, on the workers and the caller: each
// thread owns an equal run of consecutive chunks, the same run in every loop
// (the caller the first), and takes the others' from the back when its own
// is done. Worker t is pinned to the t-th CPU the process may use, unless
// TESSERA_PIN_THREADS=0 or there are fewer CPUs than threads; the caller is
// free, and moves off a pinned worker's CPU when it finds itself there. An
// exception thrown by a chunk is rethrown on the caller once every chunk has
// finished or been skipped (chunks not yet started when a chunk throws are
// skipped). A parallel_for called from inside a chunk (a nested loop) runs
// serially on that thread, so nesting cannot deadlock. Calls from several
// outside threads at once (concurrent runs of models, whose kernels all use
// the global pool) are served one after another, each loop whole, with its
// own body and chunks: a caller waits only for the loop running now, which
// depends on nothing the waiting caller holds, so concurrent runs cannot
// deadlock; while the pool runs one loop the other callers sleep (the pool
// already keeps every core busy), and their serial work between loops goes
// on in parallel.
//
// JIT code reaches the pool through the C-ABI tessera_parallel_for below.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  using Body = std::function<void(int64_t begin, int64_t end)>;

  // The process-wide pool, sized by default_threads() on first use (never
  // destroyed: JIT kernels may run during static destruction).
  static ThreadPool& global();
  // std::thread::hardware_concurrency(), at least 1.
  static int default_threads();
  // The most threads a pool may have: 4x default_threads(), at least 64 and
  // at most 1024. More only oversubscribe the cores; the bound keeps a crafted
  // artifact or a typo (--threads 100000) from starting a storm of threads.
  static int max_threads();
  // True on a thread that is running a chunk of some pool's parallel_for.
  static bool in_parallel_region();

  // `threads` counts the caller too (threads - 1 workers); <= 0 means
  // default_threads().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const;
  // Resizes the pool (<= 0: default_threads()), waiting for a running loop
  // to finish first. Must not be called from inside a chunk.
  void set_threads(int threads);

  // Runs body over [0, n) in contiguous chunks; nothing when n <= 0.
  void parallel_for(int64_t n, const Body& body);

 private:
  struct Job;
  void start_workers(int threads);
  void stop_workers();
  void worker_main(int me);  // me: the worker's participant number (1 ...)

  std::mutex dispatch_mu_;  // one loop (or resize) at a time
  std::mutex mu_;           // guards the fields below
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  std::shared_ptr<Job> job_;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, read by spinning workers without the lock
  bool stop_ = false;
  std::atomic<int> threads_{1};  // read without the locks by parallel_for
  std::atomic<uint64_t> pinned_cpus_{0};  // CPUs (below 64) a worker is pinned to
};

}  // namespace tessera

// For JIT code: runs body(begin, end, closure) over chunks covering [0, n)
// on the global pool (serially, one chunk, when called from inside a
// parallel loop). body must not throw.
extern "C" void tessera_parallel_for(int64_t n, void (*body)(int64_t begin, int64_t end, void* closure),
                                     void* closure) noexcept;
