// `tessera serve`: a compiled model kept loaded and driven line by line from
// stdin, so a benchmark harness can interleave it with other runtimes round
// by round (bench/perf_harness.py).
#pragma once

#include <cstdio>
#include <istream>
#include <vector>

#include "tessera/runtime.h"

namespace tessera::tools {

// Protocol (one request per line, one reply line each, replies flushed):
//   run N      -> "times T1 ... TN"   (milliseconds, one m.run() each)
//   callers K N -> "elapsed MS"       (K threads sharing the model, N runs each: wall time)
//   profile N  -> "steps S1 ... SK"   (each plan step's median ms over N runs, plan order)
//   save DIR   -> "saved K"           (DIR/output_0.npy ... output_{K-1}.npy)
//   quit / EOF -> exit 0
// A bad request replies "error MESSAGE" and the loop goes on; a run that
// throws replies "error MESSAGE" too. Before the loop the caller prints
// "ready ...". Returns the process exit code.
int serve_loop(CompiledModel& m, const std::vector<Tensor>& inputs, std::istream& in, std::FILE* out);

}  // namespace tessera::tools
