// The options of the commands that load, compile and run a model (run,
// compile, bench, serve, viz, info, print, tune): which model and how it is
// loaded (Common), how it is compiled and executed (Exec), and the model
// opened from both.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "opt/pass_manager.h"
#include "tessera/runtime.h"

namespace tessera::tools {

struct Common {
  std::string model;
  std::vector<std::string> shapes;
  std::map<std::string, bool> no_pass_flag;  // --no-FLAG of the pass table, by FLAG
  std::vector<std::string> dump_after;
  bool verify_each = false;
  // The pass switches given; throws naming an unknown pass.
  PassOptions pass_options() const;
  // The load options: the passes and --shape's input shapes (throws on a bad --shape).
  LoadOptions load_options() const;
};

// Options of run, compile and bench that shape compilation and execution.
struct Exec {
  std::string backend = "compiled";
  std::string isa;
  int threads = 0;
  bool dump_ir = false, dump_llvm = false, dump_asm = false, verbose = false;
  bool no_fusion = false;
  bool no_concat_in_place = false;
  std::string kernel;
  std::string records;
  bool pet = false;
  double pet_budget = 60;
  std::string pet_mutants = "all";
  bool dump_pet = false;

  // True for the compiled backend, false for the reference interpreter;
  // throws for an unknown backend or dumps asked of the interpreter.
  bool compiled() const;
  CompileOptions compile_options(const Common& c) const;
};

// Compiles (or loads an artifact of) the model.
CompiledModel open_compiled(const Common& c, const Exec& e);

using Clock = std::chrono::steady_clock;
inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace tessera::tools
