// Timing a standalone graph compiled as a model: PET's cost of a candidate
// subprogram (the sum of its kernels' times, measured as they run); and two
// executors (or two graphs) timed in turns, for comparisons a noisy machine
// must not decide: PET's whole-model check, the tuner's model guard.
#pragma once

#include "runtime/executor.h"

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
struct Interleaved {
  double a_ms = 0, b_ms = 0, ratio = 1;
  int rounds = 0;
};
Interleaved time_interleaved(Executor& a, Executor& b, const std::vector<Tensor>& inputs, int runs,
                             double max_seconds = 0);

// Compiles copies of `a` and `b` with `opts` and times them in turns
// (time_interleaved, at most kCompareRounds rounds) on the same seeded random
// inputs (profile_tensor); `max_seconds` bounds the rounds, counted from the
// call (the compiles are not bounded). The graphs must take the same inputs.
// Throws an Error (naming the graph) when one does not compile or run.
inline constexpr int kCompareRounds = 15;
Interleaved compare_graphs(const Graph& a, const Graph& b, const ExecutorOptions& opts, double max_seconds = 0);

}  // namespace tessera::runtime
