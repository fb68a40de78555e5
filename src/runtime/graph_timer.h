// Timing a standalone graph compiled as a model: PET's cost of a candidate
// subprogram (the sum of its kernels' times, measured as they run); and two
// executors (or two graphs) timed in turns, for comparisons a noisy machine
// must not decide: PET's whole-model check, the tuner's model guard.
#pragma once

#include "runtime/executor.h"
#include "support/stopwatch.h"

namespace tessera::runtime {

struct GraphTiming {
  double seconds = 0;          // median of the timed runs
  double compile_seconds = 0;  // target passes, fusion plan, JIT
  int runs = 0;
};

// Compiles a copy of `g` with `opts` (its target pipeline, fusion and JIT as
// for any model) and runs it on seeded random inputs (profile_tensor): two
// warm-up runs, then at least 7 runs and 50 ms, at most 31; the median. A
// graph whose first run takes 25 ms or more gets one warm-up and at least 3
// timed runs: its median is as steady (the noise of a shared machine is a
// smaller share of a long run), and PET measures such candidates in seconds,
// not tens of them (a 64x64x512 3x3 conv: 4 runs instead of 9).
// `max_seconds` > 0 bounds the runs (PET's whole-model check within its
// budget): once that long has passed since the call began, compiling
// included, no further run starts, and one warm-up and one timed run are the
// least it takes. The compile itself is not bounded.
// Throws an Error (naming the graph) when it does not compile or run.
GraphTiming time_graph(const Graph& g, const ExecutorOptions& opts, double max_seconds = 0);

// Two executors timed in turns (a, b, b, a, a, b, ...) after one warm-up
// run of each: the median milliseconds of each, and the median over rounds
// of b's time over a's in the same round (what a slow phase of the machine
// does to both cancels in the ratio). `runs` rounds; `max_seconds` > 0 ends
// them early: after the first two (a median of two rounds is their mean), no
// round starts that would end past that long since the call began, judged
// by the last round's time.
// `ratio_high`: the rounds' ratios' upper quartile (below 1: three rounds in
// four or more had b faster).
struct Interleaved {
  double a_ms = 0, b_ms = 0, ratio = 1, ratio_high = 1;
  int rounds = 0;
};
Interleaved time_interleaved(Executor& a, Executor& b, const std::vector<Tensor>& inputs, int runs,
                             double max_seconds = 0);

inline constexpr int kCompareRounds = 15;

// What is left of a bound of `max_seconds` counted from `since`, at least
// 1 ns (a bound already passed still bounds); 0, no bound, when
// `max_seconds` is not positive.
double bound_left(double max_seconds, const Stopwatch& since);

// A graph compiled with `opts` and run once on seeded random inputs
// (profile_tensor), kept to time others against it in turns: PET's
// whole-model check compiles the model as it came once, when its search
// first measures, and sizes the check's share of the budget from what that
// took. Throws an Error (naming the graph) when it does not compile or run.
class Baseline {
 public:
  Baseline(const Graph& g, const ExecutorOptions& opts);
  ~Baseline();
  double compile_seconds() const { return compile_seconds_; }
  double first_run_seconds() const { return first_run_seconds_; }  // its arena's memory faulted in, e.g.
  double run_seconds() const { return run_seconds_; }              // a second, warm run
  uint64_t hash() const { return hash_; }                      // the graph's structural hash
  // `other` (taking the same inputs) compiled with the same options and
  // timed against this graph in turns (time_interleaved, at most `rounds`);
  // `max_seconds` bounds the rounds, counted from the call (other's compile
  // is not bounded). Throws an Error naming `other` when it does not compile
  // or run, or takes other inputs.
  Interleaved compare(const Graph& other, double max_seconds = 0, int rounds = kCompareRounds);

 private:
  ExecutorOptions opts_;
  std::string name_;
  uint64_t hash_ = 0;
  std::vector<Tensor> inputs_;
  std::unique_ptr<Executor> ex_;
  double compile_seconds_ = 0, first_run_seconds_ = 0, run_seconds_ = 0;
};

// Compiles copies of `a` and `b` with `opts` and times them in turns
// (Baseline(a).compare(b), at most kCompareRounds rounds); `max_seconds`
// bounds the rounds, counted from the call (the compiles are not bounded).
Interleaved compare_graphs(const Graph& a, const Graph& b, const ExecutorOptions& opts, double max_seconds = 0);

}  // namespace tessera::runtime
