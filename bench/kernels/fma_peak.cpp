// fma_peak: the machine's single-precision FMA peak in GFLOP/s, measured for
// one ISA (avx512: zmm registers, 16 floats; avx2: ymm, 8 floats) and one
// thread count.
//
// Each thread runs CHAINS independent accumulator chains (acc = acc * m + a),
// enough to cover the FMA latency times the number of FMA pipes, so the loop
// is bound by FMA throughput alone. Threads are left to the scheduler unless
// --pin (one CPU each: on a machine that other processes share, a pinned
// thread cannot move off a busy core, so the default is not to pin). A repeat
// starts all threads together and takes the wall time until the last one
// finishes; the result is the median of --repeats repeats (the
// maximum is printed too: interference from other processes only lowers it).
//
// Usage: fma_peak --isa avx512|avx2 [--threads N] [--seconds S] [--repeats R] [--pin]
// Prints one line:
//   fma_peak isa=avx512 threads=1 gflops=... max_gflops=... min_gflops=... chains=24 lanes=16 ...
// Exit status 2 if the CPU lacks the ISA.
//
// Built by bench/kernel_bench.py with plain g++ (-O2 -pthread); the kernels
// carry target attributes, so the file builds without -mavx512f and the ISA is
// chosen at run time.
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains512 = 24;  // of 32 zmm registers; 2 more hold the operands
constexpr int kChains256 = 12;  // of 16 ymm registers

// Runs `iters` iterations of kChains512 independent zmm FMA chains; returns a
// value that depends on every chain so nothing is optimized away.
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(int64_t iters, float seed) {
  __m512 acc[kChains512];
#pragma GCC unroll 24
  for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_set1_ps(seed + 0.001f * static_cast<float>(i));
  // m slightly below 1 and a small: values stay bounded, never denormal
  const __m512 m = _mm512_set1_ps(0.999999f);
  const __m512 a = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains512; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 24
  for (int i = 1; i < kChains512; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(int64_t iters, float seed) {
  __m256 acc[kChains256];
#pragma GCC unroll 12
  for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_set1_ps(seed + 0.001f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f);
  const __m256 a = _mm256_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains256; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  }
  __m256 sum = acc[0];
#pragma GCC unroll 12
  for (int i = 1; i < kChains256; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

struct Isa {
  std::string name;
  int chains, lanes;
  float (*loop)(int64_t, float);
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One repeat: `threads` threads, each running `iters` iterations; wall seconds.
double run_once(const Isa& isa, int threads, int64_t iters, bool pin, float* sink) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<float> results(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  int ncpu = static_cast<int>(std::thread::hardware_concurrency());
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (pin && ncpu > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t % ncpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      results[static_cast<size_t>(t)] = isa.loop(iters, 1.0f + static_cast<float>(t));
    });
  }
  while (ready.load() < threads) {
  }
  auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  double sec = seconds_since(t0);
  for (float r : results) *sink += r;
  return sec;
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: fma_peak --isa avx512|avx2 [--threads N] [--seconds S] [--repeats R] [--pin]\n", msg);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string isa_name = "avx512";
  int threads = 1, repeats = 7;
  double seconds = 0.3;
  bool pin = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--isa") isa_name = value();
    else if (a == "--threads") threads = std::atoi(value().c_str());
    else if (a == "--seconds") seconds = std::atof(value().c_str());
    else if (a == "--repeats") repeats = std::atoi(value().c_str());
    else if (a == "--pin") pin = true;
    else if (a == "-h" || a == "--help") usage("fma_peak: single-precision FMA peak for one ISA and thread count");
    else usage(("unknown argument " + a).c_str());
  }
  if (threads < 1 || repeats < 1 || seconds <= 0) usage("--threads, --repeats and --seconds must be positive");

  __builtin_cpu_init();
  Isa isa;
  if (isa_name == "avx512") {
    if (!__builtin_cpu_supports("avx512f")) {
      std::printf("fma_peak isa=avx512 error=unsupported\n");
      return 2;
    }
    isa = {"avx512", kChains512, 16, fma_loop_avx512};
  } else if (isa_name == "avx2") {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
      std::printf("fma_peak isa=avx2 error=unsupported\n");
      return 2;
    }
    isa = {"avx2", kChains256, 8, fma_loop_avx2};
  } else {
    usage(("unknown --isa " + isa_name).c_str());
  }

  float sink = 0;
  // Calibrate on one thread: grow the iteration count until a run takes ~50 ms
  // (this also warms the core up to its working frequency), then scale to
  // --seconds per repeat.
  int64_t iters = 1 << 16;
  double sec = 0;
  for (;;) {
    sec = run_once(isa, 1, iters, pin, &sink);
    if (sec > 0.05) break;
    iters *= 2;
  }
  iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * seconds / sec));

  const double flops_per_thread = 2.0 * isa.chains * isa.lanes * static_cast<double>(iters);
  std::vector<double> gflops;
  for (int r = 0; r < repeats; ++r) {
    double s = run_once(isa, threads, iters, pin, &sink);
    gflops.push_back(flops_per_thread * threads / s / 1e9);
  }
  std::vector<double> sorted = gflops;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  std::printf(
      "fma_peak isa=%s threads=%d gflops=%.1f max_gflops=%.1f min_gflops=%.1f per_thread_gflops=%.1f chains=%d "
      "lanes=%d iters=%lld repeats=%d pinned=%d checksum=%g\n",
      isa.name.c_str(), threads, median, sorted.back(), sorted.front(), median / threads, isa.chains, isa.lanes,
      static_cast<long long>(iters), repeats, pin ? 1 : 0, static_cast<double>(sink));
  return 0;
}
