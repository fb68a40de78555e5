#include "runtime/graph_timer.h"

#include <chrono>
#include <random>

#include "runtime/fusion_profiler.h"
#include "runtime/latency_stats.h"
#include "support/error.h"

namespace tessera::runtime {

GraphTiming time_graph(const Graph& g, const ExecutorOptions& opts) {
  using Clock = std::chrono::steady_clock;
  std::mt19937_64 rng(11);
  std::vector<Tensor> inputs;
  for (const Value* v : g.inputs()) {
    TESSERA_CHECK(v->type.fully_known(), "time_graph: input '", v->name, "' of graph '", g.name,
                  "' has no static shape (", v->type.to_string(), ")");
    inputs.push_back(profile_tensor(v->type, rng));
  }
  GraphTiming t;
  const auto c0 = Clock::now();
  Executor ex(g.clone(), opts);
  ex.prepare(inputs);
  t.compile_seconds = std::chrono::duration<double>(Clock::now() - c0).count();
  for (int i = 0; i < 2; ++i) ex.run(inputs);
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 7 ||
         (times.size() < 31 && std::chrono::duration<double>(Clock::now() - start).count() < 0.05)) {
    const auto r0 = Clock::now();
    ex.run(inputs);
    times.push_back(std::chrono::duration<double>(Clock::now() - r0).count());
  }
  t.runs = static_cast<int>(times.size());
  t.seconds = percentile(std::move(times), 50);
  return t;
}

}  // namespace tessera::runtime
