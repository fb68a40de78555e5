// The compiled runtime: runs a graph as a sequence of steps, each either a
// JIT-compiled kernel (the node's tensor expression, compiled for the node's
// concrete input types) or the op's reference kernel, over one statically
// planned activation arena.
//
// A Plan is compiled for the input types of a run (compile_plan, plan.cpp):
// the type of every value is inferred for them; each fusion block (a node
// alone is a one-node block) becomes a task, keyed by a hash of its program
// (compile/task.h); each distinct task gets a schedule (from the schedule
// providers in order, else the default rule) and a kernel, compiled in
// parallel (runtime/task_kernel.h); then every step is bound to slots.
// Nothing runs while compiling, except the weight-packing kernels and, where
// an output shape or a value baked into a kernel depends on values computed
// from the inputs, the reference kernels computing those (value_oracle.h).
// Intermediate values become slots with a size and a live range [producing
// step, last consuming step], placed in one arena by layout_arena
// (plan_arena.h). Graph inputs are read from the caller's tensors, constants
// from the graph, and graph outputs get fresh tensors every run.
//
// A plan is valid for its key: the input types, plus the values of the graph
// inputs that some step baked into its code or whose values decide an output
// shape (found by following those values back through their producers to the
// graph inputs; Shape/Size outputs depend on shapes only). A run whose key
// matches no cached plan compiles a new one, so models whose shapes depend on
// input values still run correctly.
//
// Memory: one copy of the weights. A plan's steps read packed weights
// (Slot::data) that plans of other input types share when they pack the same
// constants with the same program (PackKey); a constant that every cached
// plan reads only packed is released to the model's WeightStore
// (weight_store.h: its pages leave the process, and any later read, such as
// a new plan whose packing differs, save(), the reference interpreter or the
// tuner, faults them back in from a scratch file). Executor::report() says
// how many bytes of weights are held, released, packed and shared.
//
// Concurrency: a compiled plan is immutable (its kernels, packed weights and
// layout are shared, read-only, by every run); each run leases an arena of
// its own from the plan's ArenaPool. Executor::run may be called from many
// threads at once on one model: runs proceed in parallel; a plan for a new
// key is compiled once, by one thread, while the others that need a new plan
// wait for it (one compilation at a time per model); runs of plans already
// compiled go on meanwhile.
#pragma once

#include <cstdint>
#include <set>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "fusion/partition.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "opt/pass_manager.h"
#include "runtime/arena_layout.h"
#include "runtime/arena_pool.h"
#include "runtime/output_pool.h"
#include "runtime/task_kernel.h"
#include "runtime/weight_store.h"
#include "schedule/schedule.h"

namespace tessera::runtime {

struct ExecutorOptions {
  codegen::Isa isa = codegen::Isa::Host;
  int threads = 0;  // size of the global thread pool; <= 0: leave it as it is
  // Print every kernel's loop IR / LLVM IR / assembly to stderr when it is
  // compiled (only kernels whose node name contains dump_kernel, if set).
  bool dump_ir = false, dump_llvm = false, dump_asm = false;
  std::string dump_kernel;
  // Progress on stderr for every compiled kernel (otherwise only once
  // compiling has taken a few seconds).
  bool verbose = false;
  // Threads compiling kernels (<= 0: as many as `threads`, else one per core).
  int compile_threads = 0;
  // Where schedules come from before the default rule (an artifact's saved
  // schedules come first; then these, in order: records, a tuner).
  std::vector<std::shared_ptr<const ScheduleProvider>> schedule_providers;
  size_t max_plans = 8;  // plans kept (least recently used dropped first; runs using one keep it alive)
  // Idle activation arenas each plan keeps for later runs (concurrent runs
  // beyond this many allocate an arena that is freed when they end).
  size_t max_idle_arenas = 16;
  // DNNFusion: nodes planned into blocks (src/fusion), each block one kernel.
  bool fusion = true;
  // Concats whose inputs are contiguous slices of their output (batch 1
  // channel concats) are done in place: the producers write into the
  // concat's buffer, and the concat is a view step (fusion/concat_in_place.h).
  bool concat_in_place = true;
  // Profile cells of the fusion table are decided by measuring the fused
  // kernel against its parts (false: they are not fused).
  bool fusion_profile = true;
  // The profiling database file; "" = fusion::ProfileDb::default_path().
  std::string fusion_db;
  // Constants every plan reads only packed leave memory (weight_store.h);
  // false: they stay resident.
  bool release_weights = true;
  // The weight store's scratch directory ("": WeightStore::default_directory()).
  std::string weight_dir;
  // PET's search runs in the target pipeline (the pet pass, opt/pet_pass.cpp),
  // its candidates compiled and timed with these options (runtime/
  // graph_timer.h), fusion profiling off (the static table's decisions). Off in the library by default (a first compile can spend
  // up to PassOptions::pet.budget_seconds in it); the CLI turns it on.
  bool pet = false;
  // The target pipeline's passes (opt/pipeline.h: blocked layout, Winograd,
  // channel-scale fold) run by the constructor for the ISA's vector width:
  // which are off, graph dumps, verification.
  PassOptions passes;
};

enum class SlotKind {
  Input,     // a graph input: the caller's tensor
  Constant,  // a constant of the graph
  Arena,     // an intermediate value at a fixed arena offset
  Owned,     // an intermediate kept as its own tensor (strings)
  Packed,    // constants re-laid out once when compiled (packed weights), held in `data`
  Output,    // a graph output: a fresh tensor every run
};

struct Slot {
  SlotKind kind = SlotKind::Arena;
  const Value* value = nullptr;  // null for an absent optional output a kernel still writes
  int index = -1;                // graph-input index for Input
  DType dtype = DType::Undefined;
  Dims dims;
  int64_t bytes = 0;
  int64_t first_step = 0, last_step = 0;  // live range (steps reading or writing it)
  int64_t offset = 0;                     // Arena: offset into the arena
  // Arena slots inside another's bytes (an input of a concat done in place):
  // the parent slot and the byte offset within it; the arena places roots only.
  int parent = -1;
  int64_t parent_offset = 0;
  Tensor data;                            // Packed: the packed values
};

// What decides a step's packed weights: the packing program and the
// constants it reads. Steps of any plan of one model with equal keys pack the
// same bytes, so they hold one copy.
struct PackKey {
  std::string program;                  // TaskKernel::prepack_program ("": the step packs nothing)
  std::vector<const Value*> constants;  // the constants the packing reads, in order
  auto operator<=>(const PackKey&) const = default;
};

struct Step {
  const Node* node = nullptr;        // the (first) node of the step
  std::vector<const Node*> nodes;    // every node the step computes (a fused block: several)
  bool compiled = false;
  // A concat done in place: its inputs (slots inside its output's) are
  // already in place, so running it does nothing.
  bool view = false;
  std::shared_ptr<codegen::JitKernel> kernel;  // compiled steps
  std::vector<int> args;     // compiled: the slot of every kernel parameter
  std::vector<int> inputs;   // per node input (fused: per block input): its slot, -1 when absent
  std::vector<bool> in_place;  // compiled steps, per entry of `inputs`: the output may overwrite it
  std::vector<int> outputs;  // per node output (fused: per block output): its slot, -1 when absent
  schedule::Schedule schedule;  // compiled steps: the schedule the kernel was lowered with
  std::shared_ptr<codegen::JitKernel> prepack;  // compiled steps that packed constants: the kernel run once
  std::shared_ptr<const TaskKernel> task_kernel;  // compiled steps: the task's kernel (what an artifact saves)
  uint64_t task_key = 0;        // compiled steps: the key of the task (compile/task.h)
  std::vector<int> packed;      // compiled steps: the Packed slots the kernel reads
  PackKey pack_key;             // compiled steps that read packed slots: what decides their bytes
  const OpDef* def = nullptr;   // the node's op (a compiled step runs its value_check before the kernel)
  std::vector<std::string> captures;  // reference steps with subgraphs: names read by the bodies
  std::string reason;        // reference steps: why the node is not compiled
};

struct Plan {
  // The key.
  std::vector<DType> input_dtypes;
  std::vector<Dims> input_dims;
  std::vector<int> value_inputs;  // graph inputs whose values the plan depends on (sorted)
  std::vector<Tensor> values;     // their values when compiled

  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<int> output_slots;          // per graph output
  std::map<std::string, int> slot_by_name;  // value name -> slot (subgraph captures)
  ArenaLayout arena_layout;
  int compiled_steps = 0, reference_steps = 0;
  int64_t packed_bytes = 0;  // constants packed when compiled (held besides the graph's constants)
  int64_t shared_packed_bytes = 0;  // of those, taken from plans compiled earlier (one copy)
  // Constants its runs read as they are (not packed): a reference step's
  // inputs, a compiled kernel's unpacked params, constant outputs.
  std::vector<const Value*> original_reads;
  int fused_steps = 0;       // steps computing a block of several nodes
  int concat_views = 0;      // concats done in place (view steps)
  int64_t internal_bytes = 0;  // intermediates fused kernels materialize inside themselves
  std::vector<std::string> fusion_fallbacks;  // blocks that could not be one kernel, and why
  double compile_seconds = 0;
  double kernel_seconds = 0;  // of compile_seconds: making the kernels (compiling, or linking saved ones)
  int64_t nodes_run_when_compiling = 0;  // reference kernels run for values that decide shapes
  // Arenas of arena_layout.arena_bytes, one per concurrent run (the only
  // part of a plan a run changes; thread-safe).
  mutable ArenaPool arenas;
  // The buffers of compiled steps' graph outputs, reused once the caller lets go (thread-safe).
  mutable OutputPool outputs;

  // True when the plan was made for inputs like these.
  bool matches(const std::vector<Tensor>& inputs) const;
};

// What an artifact keeps of a plan, so compiling it again reuses it: the
// nodes of every step, the schedule of every task (by task key), and every
// step's packed constants (the packing kernel is then not run).
struct SavedSteps {
  std::vector<std::vector<int>> blocks;  // the nodes of every step (empty: plan the fusion again)
  std::map<uint64_t, schedule::Schedule> schedules;  // by task key
  std::map<int64_t, std::vector<Tensor>> packed;     // by step index
  // The machine code of every task, by task key (checked; only when it runs
  // here for the ISA asked): linked instead of compiled.
  std::map<uint64_t, std::shared_ptr<const SavedKernel>> kernels;
};

// Where the time of Executor::load went (seconds): reading and checking the
// file, importing the saved graph, building the plans (types, tasks, binding,
// packed weights, arena) and making their kernels (linking the saved machine
// code, or compiling when it cannot be used).
struct LoadTimes {
  double read = 0, graph = 0, plans = 0, kernels = 0;
  int linked = 0, compiled = 0;  // kernels linked from saved code / compiled again
  double total() const { return read + graph + plans + kernels; }
};

// What a plan compiled for a model shares with the model's other plans: their
// packed weights by key, and the store the originals are released to once
// packed (null: none).
struct PlanWeights {
  std::map<PackKey, std::vector<Tensor>> packed;
  WeightStore* store = nullptr;
};
// The packed weights of `plans` by key (one entry per distinct key).
PlanWeights packed_weights_of(const std::vector<std::shared_ptr<const Plan>>& plans);

// Compiles a plan for `inputs` (already checked against the signature). Steps
// follow `blocks` (node indices per step, in a valid order; null or empty:
// one step per node); a block that cannot be one kernel falls back to one
// step per node, recorded in Plan::fusion_fallbacks. A step whose PackKey is
// in `weights` takes those packed tensors (before an artifact's saved ones);
// a constant packed here is released to weights->store.
std::unique_ptr<Plan> compile_plan(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts,
                                 const SavedSteps* saved = nullptr,
                                 const std::vector<std::vector<int>>* blocks = nullptr,
                                 const PlanWeights* weights = nullptr);

// A distinct task of a plan and the number of its steps that run it.
struct TaskUse {
  std::shared_ptr<const compile::Task> task;
  int weight = 0;
};
// The distinct tasks a plan for `inputs` would compile (in step order, one
// per key), without compiling anything: what a tuner tunes. Fused blocks are
// listed as blocks even where lowering one would fail (the plan then runs
// its nodes apart).
std::vector<TaskUse> plan_tasks(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts,
                                const std::vector<std::vector<int>>* blocks = nullptr);

// Runs a plan on inputs matching it; returns the graph outputs. With
// step_seconds (resized to the plan's steps), adds each step's wall time.
// With `end_step` below the plan's step count, runs only the steps before it
// and returns no outputs: a timing run of an early kernel needs no more.
// Thread-safe: concurrent runs of one plan each lease their own arena.
std::vector<Tensor> run_plan(const Graph& g, const Plan& plan, const std::vector<Tensor>& inputs,
                             std::vector<double>* step_seconds = nullptr, size_t end_step = SIZE_MAX);

// One model's compiled runtime. Every member may be called from several
// threads at once (see "Concurrency" above); plans are handed out as
// shared_ptr, so one dropped from the cache stays valid while it is used.
class Executor {
 public:
  Executor(std::unique_ptr<Graph> graph, ExecutorOptions opts);
  ~Executor();

  const Graph& graph() const { return *graph_; }
  const ExecutorOptions& options() const { return opts_; }
  // Checks the inputs against the signature (count, dtype, rank, static dims;
  // errors name the input), finds or compiles the plan and runs it. Runs on
  // several threads proceed in parallel, each in an arena of its own.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Runs like run() and adds every step's wall time to step_seconds (sized
  // to the plan's steps); the plan used is returned in *used when given.
  std::vector<Tensor> run_timed(const std::vector<Tensor>& inputs, std::vector<double>& step_seconds,
                                std::shared_ptr<const Plan>* used = nullptr);
  // The plan for these inputs, compiling it when none matches (checks them).
  std::shared_ptr<const Plan> prepare(const std::vector<Tensor>& inputs);

  // The distinct tasks of the plan for these inputs (checks them), with
  // their weights; nothing is compiled.
  std::vector<TaskUse> tasks(const std::vector<Tensor>& inputs);

  // The fusion plan (made on the first compile; every node alone when fusion
  // is off). Made once; the reference stays valid.
  const fusion::Partition& partition();

  // Seconds spent compiling by the latest run or prepare (on any thread) to
  // find its plan; 0 when a cached plan was found.
  double last_compile_seconds() const;
  // The plan the latest run or prepare (on any thread) used; null before any.
  std::shared_ptr<const Plan> last_plan() const;
  // The cached plans, least recently used first (a snapshot).
  std::vector<std::shared_ptr<const Plan>> plans() const;
  // Plans compiled so far (including dropped ones).
  int64_t plans_compiled() const;
  // A summary: steps compiled / by reference (with reasons), memory per plan,
  // and the weights' bytes (held as they are, released, packed, shared).
  std::string report() const;

  // Releases every constant no cached plan reads as it is (only packed) to
  // the weight store (a no-op without one): done after each compile and
  // save; call it after reading the graph's constants otherwise (running the
  // reference interpreter on graph(), say) to give their pages back. A
  // loaded artifact's constants are views of its mapping: theirs are dropped
  // from the process (madvise), to be read from the file again if ever
  // needed — the artifact holds every weight twice, original and packed.
  void release_packed_weights() const;
  // The weight store (null when ExecutorOptions::release_weights is false).
  const WeightStore* weight_store() const { return store_.get(); }

  // Saves the graph (ONNX), options and planned signatures to an artifact.
  void save(const std::string& path) const;
  // Loads an artifact (model_artifact.cpp); opts (threads, dumps, progress)
  // apply, and the saved ISA unless use_saved_isa is false. The file is
  // mapped and its weights used in place; plans for the saved signatures are
  // built again, their kernels linked from the saved machine code (or, where
  // it cannot run here, compiled from the saved schedules, said once on
  // stderr); a plan that fails is left to the first run. The code runs as
  // is: an artifact is as trusted as a shared library.
  static std::unique_ptr<Executor> load(const std::string& path, ExecutorOptions opts, bool use_saved_isa);
  // Where the time of load went (zeros for an executor not loaded).
  const LoadTimes& load_times() const { return load_times_; }

 private:
  std::shared_ptr<const Plan> find_or_compile(const std::vector<Tensor>& inputs, const SavedSteps* saved = nullptr);
  // The cached plan matching the inputs, made most recently used and the
  // latest (no compile time); null if none. Needs mu_.
  std::shared_ptr<const Plan> find_locked(const std::vector<Tensor>& inputs);
  const std::vector<std::vector<int>>& block_lists();  // the fusion plan's node lists; needs compile_mu_
  // Brings in the pages of a loaded artifact's original weights that the
  // cached plans read as they are (checking the file dropped every original's
  // pages; the packed weights' stayed), so that the first run does not fault
  // them in page by page; those read only packed stay out. Called by load.
  void populate_artifact_pages() const;
  // report()'s lines on the weights' bytes over `plans`.
  std::string weights_summary(const std::vector<std::shared_ptr<const Plan>>& plans) const;

  std::unique_ptr<Graph> graph_;  // read-only once constructed
  ExecutorOptions opts_;          // read-only once constructed
  std::unique_ptr<WeightStore> store_;  // thread-safe itself
  // Held by the one thread compiling (a plan, the fusion plan, the task
  // list); taken before mu_, never while holding it.
  std::mutex compile_mu_;
  std::unique_ptr<fusion::Partition> fusion_;  // guarded by compile_mu_ until made
  std::vector<std::vector<int>> block_nodes_;  // guarded by compile_mu_
  // Guards the plan cache and the "latest" fields; held only briefly, never
  // while compiling or running.
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const Plan>> plans_;  // most recently used last
  std::shared_ptr<const Plan> last_plan_;
  double last_compile_seconds_ = 0;
  int64_t plans_compiled_ = 0;
  LoadTimes load_times_;  // set by load
  // A loaded artifact's mapping (set by load before any plan): constants in
  // it are file pages, dropped rather than written to the weight store.
  const char* artifact_begin_ = nullptr;
  size_t artifact_bytes_ = 0;
  mutable std::mutex dropped_mu_;
  mutable std::set<const void*> dropped_;  // constants' buffers dropped from the mapping
};

}  // namespace tessera::runtime
