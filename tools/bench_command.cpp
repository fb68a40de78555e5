// `tessera bench` (see bench_command.h).
#include "bench_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "driver/driver.h"
#include "interp/interpreter.h"
#include "runtime/arena_layout.h"
#include "runtime/latency_stats.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tessera::tools {

namespace {

// The per-step profile: the slowest steps and the time per op type.
void print_profile(const std::vector<StepProfile>& steps, int top) {
  double total = 0;
  for (const auto& s : steps) total += s.seconds;
  auto gflops = [](double flops, double sec) {
    return flops > 0 && sec > 0 ? std::to_string(static_cast<int>(flops / sec / 1e9 + 0.5)) : std::string("-");
  };
  std::printf("profile  medians per step, sum %.2f ms\n", total * 1000);
  std::map<std::string, std::tuple<double, double, int>> by_op;
  for (const auto& s : steps) {
    auto& [sec, fl, n] = by_op[s.op + (s.compiled ? "" : " (reference)")];
    sec += s.seconds;
    fl += s.flops;
    ++n;
  }
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [op, t] : by_op) ops.push_back({std::get<0>(t), op});
  std::sort(ops.rbegin(), ops.rend());
  std::printf("  %-32s %6s %10s %6s %8s\n", "op", "steps", "ms", "%", "GFLOP/s");
  for (const auto& [sec, op] : ops) {
    auto [s, fl, n] = by_op[op];
    std::printf("  %-32s %6d %10.3f %6.1f %8s\n", op.c_str(), n, s * 1000, total > 0 ? 100 * s / total : 0.0,
                gflops(fl, s).c_str());
  }
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a].seconds > steps[b].seconds; });
  if (order.size() > static_cast<size_t>(top)) order.resize(static_cast<size_t>(top));
  std::printf("  slowest %zu steps:\n  %-5s %-32s %-20s %10s %8s\n", order.size(), "step", "node", "op", "ms", "GFLOP/s");
  for (size_t i : order)
    std::printf("  %-5zu %-32s %-20s %10.3f %8s\n", i, steps[i].node.c_str(),
                (steps[i].op + (steps[i].compiled ? "" : "*")).c_str(), steps[i].seconds * 1000,
                gflops(steps[i].flops, steps[i].seconds).c_str());
}

// Largest |a - b| over every output, and the largest |b|.
std::pair<double, double> max_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double diff = 0, mag = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].dtype() == DType::String) continue;
    TESSERA_CHECK(a[i].dims() == b[i].dims(), "output ", i, " has different shapes");
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      double x = a[i].get_double(k), y = b[i].get_double(k);
      diff = std::max(diff, std::isnan(x) != std::isnan(y) ? INFINITY : std::isnan(y) ? 0.0 : std::fabs(x - y));
      mag = std::max(mag, std::fabs(y));
    }
  }
  return {diff, mag};
}

// Fusion on against fusion off: both compiled, timed round by round on the
// same inputs, outputs compared.
void bench_vs_no_fusion(const Common& c, const Exec& e, CompiledModel& fused, const std::vector<Tensor>& ins,
                        int runs, int warmup) {
  Exec off = e;
  off.no_fusion = true;
  CompiledModel unfused = open_compiled(c, off);
  unfused.prepare(ins);
  std::printf("unfused  %d compiled kernels, %d reference steps\n", unfused.compiled_steps(), unfused.reference_steps());
  for (int i = 0; i < warmup; ++i) unfused.run(ins);
  std::vector<double> on_s, off_s;
  std::vector<Tensor> on_out, off_out;
  for (int i = 0; i < runs; ++i) {
    auto a = Clock::now();
    on_out = fused.run(ins);
    auto b = Clock::now();
    off_out = unfused.run(ins);
    auto d = Clock::now();
    on_s.push_back(std::chrono::duration<double>(b - a).count());
    off_s.push_back(std::chrono::duration<double>(d - b).count());
  }
  runtime::LatencyStats on = runtime::latency_stats(on_s), offs = runtime::latency_stats(off_s);
  auto [diff, mag] = max_difference(on_out, off_out);
  std::printf("fusion on  %s\nfusion off %s\n", runtime::format_latency(on).c_str(), runtime::format_latency(offs).c_str());
  std::printf("fusion   %.2fx faster (median off / median on); outputs max |on - off| %.3g (largest |output| %.3g)\n",
              offs.median / on.median, diff, mag);
}

}  // namespace

int cmd_bench(const Common& c, const Exec& e, int runs, int warmup, uint64_t seed, int profile, bool vs_reference,
              bool vs_no_fusion) {
  TESSERA_CHECK(runs >= 1, "--runs must be at least 1");
  TESSERA_CHECK(warmup >= 0, "--warmup must not be negative");
  if (e.threads > 0) ThreadPool::global().set_threads(e.threads);
  std::vector<double> samples;
  std::printf("model    %s\n", c.model.c_str());
  if (e.compiled()) {
    CompiledModel m = open_compiled(c, e);
    double compile_ms = m.last_compile_seconds() * 1000;  // kernels an artifact re-made on load
    std::vector<Tensor> ins = m.random_inputs(seed);
    m.prepare(ins);
    compile_ms += m.last_compile_seconds() * 1000;
    std::printf("compile  %.1f ms (%d compiled kernels, %d reference steps)\n", compile_ms, m.compiled_steps(),
                m.reference_steps());
    for (int i = 0; i < warmup; ++i) m.run(ins);
    for (int i = 0; i < runs; ++i) {
      auto a = Clock::now();
      m.run(ins);
      samples.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    }
    std::printf("backend  compiled, %d threads\n", ThreadPool::global().threads());
    std::printf("latency  %s\n", runtime::format_latency(runtime::latency_stats(samples)).c_str());
    std::printf("memory   peak activations %s\n", runtime::format_bytes(m.peak_activation_bytes()).c_str());
    if (vs_reference) {
      // The same inputs through the interpreter (one thread: it has no parallel kernels).
      std::vector<double> ref;
      for (int i = 0; i < std::min(warmup, 1); ++i) m.run_reference(ins);
      for (int i = 0; i < runs; ++i) {
        auto a = Clock::now();
        m.run_reference(ins);
        ref.push_back(std::chrono::duration<double>(Clock::now() - a).count());
      }
      runtime::LatencyStats rs = runtime::latency_stats(ref), cs = runtime::latency_stats(samples);
      std::printf("reference %s (interpreter, 1 thread)\n", runtime::format_latency(rs).c_str());
      std::printf("speedup  %.1fx over the reference interpreter (median / median)\n", rs.median / cs.median);
    }
    if (vs_no_fusion) bench_vs_no_fusion(c, e, m, ins, runs, warmup);
    if (profile > 0) print_profile(m.profile(ins, runs), profile);
  } else {
    TESSERA_CHECK(profile <= 0, "--profile needs the compiled backend (the reference interpreter is not profiled per step)");
    TESSERA_CHECK(!vs_reference, "--vs-reference needs the compiled backend");
    TESSERA_CHECK(!vs_no_fusion, "--vs-no-fusion needs the compiled backend");
    auto g = load_model(c.model, c.load_options());
    std::vector<Tensor> ins = random_inputs(*g, seed);
    for (int i = 0; i < warmup; ++i) interpret(*g, ins);
    for (int i = 0; i < runs; ++i) {
      auto a = Clock::now();
      interpret(*g, ins);
      samples.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    }
    std::printf("backend  reference interpreter\n");
    std::printf("latency  %s\n", runtime::format_latency(runtime::latency_stats(samples)).c_str());
    std::printf("memory   peak activations n/a (the interpreter allocates per node)\n");
  }
  auto rss = runtime::peak_resident_bytes();
  std::printf("memory   peak RSS %s\n", rss ? runtime::format_bytes(*rss).c_str() : "n/a");
  return 0;
}

}  // namespace tessera::tools
