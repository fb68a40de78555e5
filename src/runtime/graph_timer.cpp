#include "runtime/graph_timer.h"

#include <random>

#include "runtime/fusion_profiler.h"
#include "runtime/latency_stats.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera::runtime {

namespace {
// A run at least this long is timed fewer times (see graph_timer.h).
constexpr double kLongRun = 0.025;
}  // namespace

GraphTiming time_graph(const Graph& g, const ExecutorOptions& opts, double max_seconds) {
  const Stopwatch since_call;
  const auto past_bound = [&] { return max_seconds > 0 && since_call.seconds() >= max_seconds; };
  std::mt19937_64 rng(11);
  std::vector<Tensor> inputs;
  for (const Value* v : g.inputs()) {
    TESSERA_CHECK(v->type.fully_known(), "time_graph: input '", v->name, "' of graph '", g.name,
                  "' has no static shape (", v->type.to_string(), ")");
    inputs.push_back(profile_tensor(v->type, rng));
  }
  GraphTiming t;
  const Stopwatch compile;
  Executor ex(g.clone(), opts);
  ex.prepare(inputs);
  t.compile_seconds = compile.seconds();
  // Warm-up: two runs, one when a run is long (its caches and pages are warm
  // after one, and the next runs dwarf any residue).
  const Stopwatch warm;
  ex.run(inputs);
  const bool long_runs = warm.seconds() >= kLongRun;
  if (!long_runs && !past_bound()) ex.run(inputs);
  std::vector<double> times;
  const Stopwatch all;
  const size_t min_runs = long_runs ? 3 : 7;
  while (times.empty() || (!past_bound() && (times.size() < min_runs || (times.size() < 31 && all.seconds() < 0.05)))) {
    const Stopwatch run;
    ex.run(inputs);
    times.push_back(run.seconds());
  }
  t.runs = static_cast<int>(times.size());
  t.seconds = percentile(std::move(times), 50);
  return t;
}

}  // namespace tessera::runtime
