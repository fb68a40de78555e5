// Tessera's public runtime API: compile a model (an ONNX file or an embedded
// zoo model) to native code, run it, and save/load the compiled artifact.
//
//   tessera::CompiledModel m = tessera::CompiledModel::compile("model.onnx");
//   std::vector<tessera::Tensor> outs = m.run(inputs);
//   m.save("model.tsr");
//   auto m2 = tessera::CompiledModel::load("model.tsr");
//
// Kernels are compiled for the concrete input shapes of a run (and the values
// of inputs that decide shapes) the first time such inputs are seen; later
// runs with the same shapes reuse them. Every failure throws an exception
// (tessera::Error, a std::runtime_error) with a one-line message.
//
// Thread safety: one CompiledModel may be shared by many threads. run(),
// profile(), prepare(), save(), report(), fusion_report() and the accessors
// may be called concurrently. Runs proceed in parallel: each runs in an
// activation arena of its own, leased from a pool per input signature and
// returned when the run ends (up to 16 idle arenas are kept, so a steady
// load of concurrent runs allocates none), while the compiled kernels and
// the packed weights are shared read-only. The first run with a new input
// signature compiles its kernels once: other threads needing a new plan wait
// for that compilation (one at a time per model), and runs of signatures
// already compiled go on meanwhile. Parallel loops inside kernels run on the
// process-wide thread pool (CompileOptions::threads), which serves one loop
// at a time: a run whose loop finds the pool busy waits for the running loop
// to finish (never for a whole run, so concurrent runs cannot deadlock), and
// the serial parts of runs overlap. Accessors about "the last run" describe
// the most recent run or prepare on any thread. Moving, assigning or
// destroying a CompiledModel while another thread uses it is not allowed.
//
// Memory: the weights are held once. Plans for different input signatures
// share packed weights that are packed alike, and a weight that every plan
// reads only packed leaves the process's memory (its pages are backed by a
// private scratch file, in place: reading it still works and gives the same
// bytes, from any thread). report() says how many bytes are held.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/tensor.h"

namespace tessera {

struct CompileOptions {
  // Instruction set: "host" (the best this CPU has), "avx2", "avx512" or
  // "generic". Empty means "host" for compile() and the saved ISA for load().
  std::string isa;
  // Threads for parallel kernels (the process-wide pool, shared by every
  // model and run: models given different counts resize it back and forth
  // as they run); 0: all cores (or, for load(), what the artifact was
  // compiled with).
  int threads = 0;
  // Fixes (dynamic) input shapes when compiling: "input" -> {1, 3, 224, 224}.
  std::map<std::string, Dims> input_shapes;
  // Print each kernel's loop IR / LLVM IR / assembly to stderr when it is
  // compiled; only kernels whose node name contains dump_kernel, if set.
  bool dump_ir = false, dump_llvm = false, dump_asm = false;
  std::string dump_kernel;
  // Progress on stderr for every kernel compiled.
  bool verbose = false;
  // DNNFusion's fusion planner: blocks of ops compiled as one kernel each.
  bool fusion = true;
  // Batch-1 channel concats done in place: each input's producer writes into
  // its slice of the concat's buffer, and the concat copies nothing.
  bool concat_in_place = true;
  // A tuning records file (`tessera tune`): each kernel gets the schedule of
  // its task's best record measured on this machine; others the default.
  // Its graph choices (direct or which Winograd tile per convolution
  // geometry) are applied too; geometries without one take the estimate's.
  std::string records;
  // Graph passes (`tessera passes` lists them with what they do): names of
  // passes not to run, of passes after which the graph is printed to stderr,
  // and whether to verify the graph after every pass (unknown names throw).
  std::vector<std::string> disabled_passes;
  std::vector<std::string> dump_after;
  bool verify_each = false;
  // PET (partially equivalent transformations, the pet pass): multi-linear
  // subprograms replaced by mutants measured faster on this machine, wrong
  // regions of partially equivalent ones recomputed. The first compile of a
  // model spends up to pet_budget_seconds searching; what it measured is kept
  // in the cache directory, so later compiles take well under a second.
  // pet_mutants: "all", "equivalent" (fully equivalent only) or "partial"
  // (partially equivalent only); dump_pet prints the search's report.
  bool pet = false;
  double pet_budget_seconds = 60;
  std::string pet_mutants = "all";
  bool dump_pet = false;
  // Shorthands kept for existing code; false adds the passes of the CLI flag
  // of the same name to disabled_passes:
  //  rewrite: --no-rewrite, the exact simplifications (Pow(x, 2) -> x * x,
  //    Transposes of size-1 axes -> Reshape, Slices tiling an axis -> Split)
  //    and DNNFusion's mathematical-property rules;
  //  blocked_layout: --no-blocked-layout, convolutions in the channel-blocked
  //    layout NCHWc (one vector register of channels per block);
  //  winograd: --no-winograd, 3x3 stride-1 convolutions as Winograd F(4x4, 3x3)
  //    where it pays (results differ from the direct form by ~1e-6 relative).
  bool rewrite = true;
  bool blocked_layout = true;
  bool winograd = true;
};

// A model input or output: name and static type (-1 for a dynamic dim).
struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  Dims dims;  // -1 for a dynamic dimension
  bool rank_known = true;
  // One per dimension: a dynamic dimension's name in the model (ONNX's
  // dim_param, kept by a saved artifact), "" for a static or unnamed one.
  std::vector<std::string> dim_names;
};

// One step of a compiled model's plan, timed by CompiledModel::profile.
struct StepProfile {
  std::string node;      // node name (or "#index" when unnamed); a fused step: its first node's
  std::string op;        // op type; a fused step: its ops joined by '+' ("Conv+Add+Relu")
  bool compiled = true;  // false: the op's reference kernel ran
  double seconds = 0;    // median wall time over the profiled runs
  double flops = 0;      // arithmetic of the node (multiply-add = 2), 0 when not counted
};

class CompiledModel {
 public:
  // Loads (and constant-folds) a model: an ONNX file or "zoo:NAME".
  static CompiledModel compile(const std::string& model, const CompileOptions& options = {});
  // Loads an artifact written by save(): links its kernels' saved machine
  // code, or compiles them again from the saved schedules where that code
  // cannot run (another --isa, a host lacking its CPU features; said once on
  // stderr). The code runs as is: load only artifacts you would trust as a
  // shared library.
  static CompiledModel load(const std::string& path, const CompileOptions& options = {});
  // True when the file starts like a Tessera artifact.
  static bool is_artifact(const std::string& path);

  CompiledModel(CompiledModel&&) noexcept;
  CompiledModel& operator=(CompiledModel&&) noexcept;
  ~CompiledModel();

  // Runs the model; inputs in model-input order, checked against the
  // signature (errors name the input, the expected and the given type).
  // Safe to call from several threads at once (see above).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Runs `runs` times and returns every step's median time, in plan order.
  std::vector<StepProfile> profile(const std::vector<Tensor>& inputs, int runs);
  // Compiles for these inputs without running the plan.
  void prepare(const std::vector<Tensor>& inputs);
  // The same model through the reference interpreter (for checking).
  std::vector<Tensor> run_reference(const std::vector<Tensor>& inputs) const;
  // Writes the compiled model: graph, options and compiled signatures.
  void save(const std::string& path) const;
  // Compiled / reference steps, reasons, activation memory per signature.
  std::string report() const;
  // The fusion plan as text: every block with its ops and mapping types, the
  // profile decisions and the totals (made on the first compile of a signature).
  std::string fusion_report();

  std::string name() const;
  size_t node_count() const;
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  // Seeded random inputs for the signature (needs static input shapes).
  std::vector<Tensor> random_inputs(uint64_t seed) const;
  // Inputs from .pb / .npy files or a directory of input_0.pb ...
  std::vector<Tensor> read_inputs(const std::vector<std::string>& paths) const;

  // Seconds spent compiling in the last run() or prepare() on any thread (0
  // when the kernels for those inputs existed), or in load().
  double last_compile_seconds() const;
  // Of the plan used last, on any thread (-1 / 0 before any run): the bytes
  // of one activation arena (each concurrent run has its own), steps run as
  // compiled kernels and through reference kernels.
  int64_t peak_activation_bytes() const;
  int compiled_steps() const;
  int reference_steps() const;
  // Where the time of load() went, in milliseconds ("" for a model not
  // loaded from an artifact): "read R graph G plans P link L (N kernels
  // linked, M compiled)".
  std::string load_split() const;

 private:
  struct Impl;
  explicit CompiledModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
