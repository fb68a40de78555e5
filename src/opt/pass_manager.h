// The pass manager: graph passes registered by name in one table (the pass,
// its stage, the CLI flag that turns it off, its conditions), run in the
// order a pipeline lists them (opt/pipeline.h). Each run is timed and
// counted; the graph can be printed after named passes and verified after
// each one. LoadOptions, ExecutorOptions, the public CompileOptions and the
// CLI all carry one PassOptions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/search.h"

namespace tessera {

// When a pass runs: while loading a model, or when compiling it for a target
// (those passes need the target's vector width).
enum class PassStage { Load, Target };
const char* stage_name(PassStage s);

// Two models timed in turns (PassContext::compare_models): each one's median
// seconds, and the median and upper quartile over rounds of after's time
// over before's.
struct ModelComparison {
  double before = 0, after = 0, ratio = 1, ratio_high = 1;
};

// A model compiled for PET's whole-model check (PassContext::model_cost):
// the seconds of its compile, of its first run and of a warm run.
struct ModelCost {
  double compile_seconds = 0, first_run_seconds = 0, run_seconds = 0;
};

// What a pass may know besides the graph.
struct PassOptions;
struct PassContext {
  int64_t lanes = 0;  // f32 lanes of the target's vector register (Target stage; 0 at load)
  // PET (Target stage): seconds a standalone graph takes compiled for this
  // target, measured; the runtime supplies it when PET is on (empty: the pet
  // pass is skipped), and `target_key` names the target in PET's database.
  std::function<double(const Graph&)> measure;
  // A whole model before and after PET's choices, each compiled for the
  // target as `measure` compiles candidates, timed in turns for PET's
  // whole-model check; its rounds end once the third
  // argument's seconds have passed (> 0; the compiles are not bounded;
  // pet_pass.cpp passes what is left of PET's budget). Empty: `measure`
  // times each model, one after the other.
  std::function<ModelComparison(const Graph& before, const Graph& after, double max_seconds)> compare_models;
  // Compiles `before` as compare_models will (kept for its calls with that
  // model) and says what it cost: the pet pass sizes the whole-model check's
  // share of its budget from it. Empty: the check has a fixed share.
  std::function<ModelCost(const Graph& before)> model_cost;
  std::string target_key;
  const PassOptions* options = nullptr;  // the run's options (run_passes sets it)
};

struct Pass {
  std::string name;  // "fold-batchnorm": what --dump-after and PassOptions::disabled say
  PassStage stage = PassStage::Load;
  // The CLI flag that turns it off, without "--no-"; several passes may share
  // one ("rewrite" covers simplify and math-rewrite).
  std::string flag;
  std::string description;  // one line
  int (*run)(Graph&, const PassContext&) = nullptr;  // returns the rewrites it made
  // Conditions: when one fails the pass is skipped and the record says why.
  bool (*applies)(const PassContext&) = nullptr;  // null: always
  std::string applies_text;  // what `applies` asks, in words ("8+ f32 lanes")
  std::string needs;         // a pass that must have run before it in the pipeline ("": none)
  // Runs instead whenever the pass does not (fold-constants: types are still inferred).
  void (*otherwise)(Graph&) = nullptr;
};

// The passes by name. global() holds the built-in table (pass_manager.cpp);
// tests copy it and add passes of their own.
class PassRegistry {
 public:
  static const PassRegistry& global();
  // Throws when the name is taken or the pass has no function.
  void add(Pass p);
  const Pass* find(const std::string& name) const;
  // Throws naming the pass and listing the registered ones.
  const Pass& get(const std::string& name) const;
  const std::vector<Pass>& passes() const { return passes_; }
  std::string names() const;  // "fold-constants, fold-batchnorm, ..."

 private:
  std::vector<Pass> passes_;
};

// The one table of pass switches; every option struct embeds it.
struct PassOptions {
  std::set<std::string> disabled;    // passes not to run
  std::set<std::string> dump_after;  // print the graph to stderr after these passes
  bool verify_each = false;          // verify the graph after every pass (always: after every pipeline)
  bool verbose = false;              // one line per pass on stderr: rewrites and time, or why skipped
  // PET's search (opt/pet_pass.cpp): budget, beam, ablation switches; its
  // report printed to stderr (--dump-pet); its database ("": the default).
  pet::SearchOptions pet;
  bool dump_pet = false;
  std::string pet_db;
  // The Winograd pass's tile per convolution geometry (opt/winograd.h: 0
  // direct, 2, 4), overriding its estimate: a tuner's choices, from its
  // records. Empty: the estimate decides.
  std::map<std::string, int> winograd_tiles;

  bool enabled(const std::string& pass) const { return !disabled.count(pass); }
  // Turns off a pass by name; throws listing the passes when it is unknown.
  void disable(const std::string& pass, const PassRegistry& r = PassRegistry::global());
  // Turns off the passes of CLI flag --no-FLAG ("rewrite": simplify and
  // math-rewrite); throws listing the flags when no pass has it.
  void disable_flag(const std::string& flag, const PassRegistry& r = PassRegistry::global());
};

// Throws naming the first unknown pass in opts' sets and listing the passes.
void check_pass_names(const PassOptions& opts, const PassRegistry& r = PassRegistry::global());

// A CLI flag --no-FLAG and the passes it turns off (table order).
struct PassFlag {
  std::string flag;
  PassStage stage = PassStage::Load;  // its first pass's
  std::vector<std::string> passes;
};
std::vector<PassFlag> pass_flags(const PassRegistry& r = PassRegistry::global());

// What happened to one pass of a pipeline.
struct PassRecord {
  std::string name;
  bool ran = false;
  std::string skipped;  // why it did not run: "disabled (--no-rewrite)", "blocked-layout did not run", "needs 8+ f32 lanes"
  int rewrites = 0;     // what the pass returned
  double seconds = 0;   // wall time
};

// Runs the pipeline's passes in order with their conditions; prints, verifies
// and logs as opts asks. A pass that breaks the graph throws naming it (with
// verify_each; otherwise the check after the pipeline names the passes run).
std::vector<PassRecord> run_passes(Graph& g, const std::vector<std::string>& pipeline, const PassOptions& opts,
                                   const PassContext& ctx = {}, const PassRegistry& r = PassRegistry::global());

// The table as text, a pass a line: name, stage, flag, conditions, description.
std::string print_pass_table(const PassRegistry& r = PassRegistry::global());

}  // namespace tessera
