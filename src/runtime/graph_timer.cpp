#include "runtime/graph_timer.h"

#include <algorithm>
#include <random>

#include "runtime/fusion_profiler.h"
#include "runtime/latency_stats.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera::runtime {

namespace {
// A run at least this long is timed fewer times (see graph_timer.h).
constexpr double kLongRun = 0.025;

// Seeded random inputs for `g`'s inputs, which must have static shapes.
std::vector<Tensor> timing_inputs(const Graph& g, const char* who) {
  std::mt19937_64 rng(11);
  std::vector<Tensor> inputs;
  for (const Value* v : g.inputs()) {
    TESSERA_CHECK(v->type.fully_known(), who, ": input '", v->name, "' of graph '", g.name,
                  "' has no static shape (", v->type.to_string(), ")");
    inputs.push_back(profile_tensor(v->type, rng));
  }
  return inputs;
}

}  // namespace

GraphTiming time_graph(const Graph& g, const ExecutorOptions& opts, double max_seconds) {
  const Stopwatch since_call;
  const auto past_bound = [&] { return max_seconds > 0 && since_call.seconds() >= max_seconds; };
  const std::vector<Tensor> inputs = timing_inputs(g, "time_graph");
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

Interleaved time_interleaved(Executor& a, Executor& b, const std::vector<Tensor>& inputs, int runs,
                             double max_seconds) {
  const Stopwatch since_call;
  a.run(inputs);
  b.run(inputs);
  std::vector<double> ta, tb, ratios;
  for (int i = 0; i < runs; ++i) {
    // A round that would end past the bound, judged by the last one, is not started.
    const double last_round = i > 0 ? (ta.back() + tb.back()) * 1e-3 : 0;
    if (i >= 2 && max_seconds > 0 && since_call.seconds() + last_round >= max_seconds) break;
    for (int which = 0; which < 2; ++which) {
      const bool first = (i + which) % 2 == 0;
      Executor& e = first ? a : b;
      const Stopwatch run;
      e.run(inputs);
      (first ? ta : tb).push_back(run.seconds() * 1e3);
    }
    ratios.push_back(ta.back() > 0 ? tb.back() / ta.back() : 1.0);
  }
  Interleaved r;
  r.rounds = static_cast<int>(ratios.size());
  if (r.rounds == 0) return r;
  r.a_ms = percentile(std::move(ta), 50);
  r.b_ms = percentile(std::move(tb), 50);
  r.ratio = percentile(ratios, 50);
  r.ratio_high = percentile(std::move(ratios), 75);
  return r;
}

double bound_left(double max_seconds, const Stopwatch& since) {
  return max_seconds > 0 ? std::max(1e-9, max_seconds - since.seconds()) : 0;
}

Baseline::Baseline(const Graph& g, const ExecutorOptions& opts)
    : opts_(opts), name_(g.name), hash_(structural_hash(g)), inputs_(timing_inputs(g, "Baseline")) {
  const Stopwatch compile;
  ex_ = std::make_unique<Executor>(g.clone(), opts_);
  ex_->prepare(inputs_);
  compile_seconds_ = compile.seconds();
  const Stopwatch first;
  ex_->run(inputs_);
  first_run_seconds_ = first.seconds();
  const Stopwatch run;
  ex_->run(inputs_);
  run_seconds_ = run.seconds();
}

Baseline::~Baseline() = default;

Interleaved Baseline::compare(const Graph& other, double max_seconds, int rounds) {
  const Stopwatch since_call;
  TESSERA_CHECK(other.inputs().size() == inputs_.size(), "compare_graphs: graph '", other.name, "' takes ",
                other.inputs().size(), " inputs, graph '", name_, "' ", inputs_.size());
  Executor eb(other.clone(), opts_);
  eb.prepare(inputs_);
  return time_interleaved(*ex_, eb, inputs_, rounds, bound_left(max_seconds, since_call));
}

Interleaved compare_graphs(const Graph& a, const Graph& b, const ExecutorOptions& opts, double max_seconds) {
  const Stopwatch since_call;
  Baseline base(a, opts);
  return base.compare(b, bound_left(max_seconds, since_call));
}

}  // namespace tessera::runtime
