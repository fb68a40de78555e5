// Running plans: compiled steps call their kernel on slot addresses,
// reference steps run the op's reference kernel on views of their slots and
// copy the results into their slots. The model keeps a few plans, one per key.
#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <set>
#include <sstream>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "opt/pipeline.h"
#include "runtime/fusion_profiler.h"
#include "runtime/graph_timer.h"
#include "support/thread_pool.h"
#include "support/error.h"
#include "support/file_pages.h"
#include "support/memory_trace.h"
#include "support/stopwatch.h"

namespace tessera::runtime {

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.dtype() == DType::String) return a.strings() == b.strings();
  return a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

bool inside(const void* p, const void* begin, size_t bytes) {
  auto q = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(begin);
  return bytes > 0 && q >= b && q < b + bytes;
}

std::string signature_text(const Plan& p) {
  std::string s;
  for (size_t i = 0; i < p.input_dtypes.size(); ++i) {
    if (i) s += ", ";
    s += std::string(dtype_name(p.input_dtypes[i])) + "[" + dims_to_string(p.input_dims[i]) + "]";
  }
  return s;
}

}  // namespace

bool Plan::matches(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != input_dtypes.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].dtype() != input_dtypes[i] || inputs[i].dims() != input_dims[i]) return false;
  for (size_t k = 0; k < value_inputs.size(); ++k)
    if (!same_values(values[k], inputs[static_cast<size_t>(value_inputs[k])])) return false;
  return true;
}

std::vector<Tensor> run_plan(const Graph& g, const Plan& plan, const std::vector<Tensor>& inputs,
                             std::vector<double>* step_seconds, size_t end_step) {
  using Clock = std::chrono::steady_clock;
  if (step_seconds) step_seconds->resize(plan.steps.size(), 0.0);
  Clock::time_point step_start;
  ArenaPool::Lease arena = plan.arenas.acquire(plan.arena_layout.arena_bytes);  // this run's alone
  uint8_t* base = arena.data();
  size_t arena_bytes = static_cast<size_t>(plan.arena_layout.arena_bytes);
  std::vector<Tensor> owned(plan.slots.size());

  auto ptr = [&](int s) -> void* {
    const Slot& sl = plan.slots[static_cast<size_t>(s)];
    switch (sl.kind) {
      case SlotKind::Input: return const_cast<void*>(inputs[static_cast<size_t>(sl.index)].raw());
      case SlotKind::Constant: return const_cast<void*>(sl.value->constant->raw());
      case SlotKind::Arena: return base + sl.offset;
      case SlotKind::Packed: return const_cast<void*>(sl.data.raw());
      default: return owned[static_cast<size_t>(s)].raw();
    }
  };
  // A tensor for a slot's current value; arena slots become views kept in `views`.
  auto tensor_of = [&](int s, std::deque<Tensor>& views) -> const Tensor* {
    const Slot& sl = plan.slots[static_cast<size_t>(s)];
    switch (sl.kind) {
      case SlotKind::Input: return &inputs[static_cast<size_t>(sl.index)];
      case SlotKind::Constant: return &*sl.value->constant;
      case SlotKind::Arena: views.push_back(Tensor::view(sl.dtype, sl.dims, base + sl.offset)); return &views.back();
      default: return &owned[static_cast<size_t>(s)];
    }
  };

  // The step's node inputs as tensors (null where absent).
  auto inputs_of = [&](const Step& st, std::deque<Tensor>& views) {
    std::vector<const Tensor*> ins;
    for (int s : st.inputs) ins.push_back(s < 0 ? nullptr : tensor_of(s, views));
    return ins;
  };

  const size_t steps_run = std::min(end_step, plan.steps.size());
  std::vector<void*> args;
  for (size_t si = 0; si < steps_run; ++si) {
    const Step& st = plan.steps[si];
    if (step_seconds) {
      if (si > 0) (*step_seconds)[si - 1] += std::chrono::duration<double>(Clock::now() - step_start).count();
      step_start = Clock::now();
    }
    if (st.view) continue;  // a concat done in place: its inputs were written into its output
    if (st.compiled) {
      for (int o : st.outputs) {
        const Slot& sl = plan.slots[static_cast<size_t>(o)];
        if (sl.kind == SlotKind::Output) owned[static_cast<size_t>(o)] = plan.outputs.take(o, sl.dtype, sl.dims);
      }
      if (st.def && st.def->value_check) {  // index ranges, division by zero: what the kernel cannot report
        std::deque<Tensor> views;
        st.def->value_check(*st.node, inputs_of(st, views));
      }
      args.clear();
      for (int a : st.args) args.push_back(ptr(a));
      st.kernel->run(args);
      continue;
    }
    const Node& n = *st.node;
    std::deque<Tensor> views;
    std::vector<const Tensor*> ins = inputs_of(st, views);
    auto resolve = [&](const std::string& name) -> const Tensor* {
      auto it = plan.slot_by_name.find(name);
      return it == plan.slot_by_name.end() ? nullptr : tensor_of(it->second, views);
    };
    std::vector<Tensor> outs = run_reference(n, g.opset, ins, resolve);
    for (size_t k = 0; k < st.outputs.size(); ++k) {
      int s = st.outputs[k];
      if (s < 0) continue;
      const Slot& sl = plan.slots[static_cast<size_t>(s)];
      TESSERA_CHECK(k < outs.size() && outs[k].defined(), n.describe(), ": kernel returned no tensor for output '",
                    sl.value->name, "'");
      Tensor& t = outs[k];
      TESSERA_CHECK(t.dtype() == sl.dtype && t.dims() == sl.dims, n.describe(), ": output '", sl.value->name,
                    "' is ", dtype_name(t.dtype()), "[", dims_to_string(t.dims()), "] in this run but was ",
                    dtype_name(sl.dtype), "[", dims_to_string(sl.dims),
                    "] when the plan was compiled (its shape depends on something the plan's key does not cover)");
      if (sl.kind == SlotKind::Arena) {
        if (sl.bytes > 0) std::memmove(base + sl.offset, t.raw(), static_cast<size_t>(sl.bytes));
      } else if (sl.kind == SlotKind::Output && t.dtype() != DType::String) {
        // A kernel may return a view of an input (Identity, Reshape): outputs
        // must not share the arena, the caller's inputs or the constants.
        bool shared = inside(t.raw(), base, arena_bytes);
        for (const Tensor* in : ins) shared = shared || (in && in->dtype() != DType::String && inside(t.raw(), in->raw(), in->nbytes()));
        owned[static_cast<size_t>(s)] = shared ? t.clone() : std::move(t);
      } else {
        owned[static_cast<size_t>(s)] = std::move(t);
      }
    }
  }

  if (step_seconds && steps_run > 0)
    (*step_seconds)[steps_run - 1] += std::chrono::duration<double>(Clock::now() - step_start).count();
  for (size_t si = 0; si < steps_run; ++si)
    if (plan.steps[si].compiled)
      for (int o : plan.steps[si].outputs)
        if (plan.slots[static_cast<size_t>(o)].kind == SlotKind::Output) plan.outputs.keep(o, owned[static_cast<size_t>(o)]);
  std::vector<Tensor> result;
  if (steps_run < plan.steps.size()) return result;
  for (int s : plan.output_slots) {
    const Slot& sl = plan.slots[static_cast<size_t>(s)];
    switch (sl.kind) {
      case SlotKind::Input: result.push_back(inputs[static_cast<size_t>(sl.index)].clone()); break;
      case SlotKind::Constant: result.push_back(sl.value->constant->clone()); break;
      default: result.push_back(owned[static_cast<size_t>(s)]); break;
    }
  }
  return result;
}

Executor::Executor(std::unique_ptr<Graph> graph, ExecutorOptions opts)
    : graph_(std::move(graph)), opts_(std::move(opts)) {
  TESSERA_CHECK(graph_, "Executor: no graph");
  TESSERA_CHECK(codegen::host_supports(opts_.isa), "cannot compile for ", codegen::isa_name(opts_.isa),
                ": this host supports at most ", codegen::isa_name(codegen::host_isa()));
  if (opts_.max_plans == 0) opts_.max_plans = 1;
  // PET compiles and times many models in turn: their arenas pass from one
  // to the next (declared first: it outlives the check's models in `target`).
  std::optional<ArenaSharing> sharing;
  PassContext target;
  target.lanes = Target::for_isa(opts_.isa).vector_bytes / 4;
  if (opts_.pet && opts_.passes.enabled("pet")) {
    sharing.emplace();
    // Candidates compiled as models of their own, PET off, weights kept.
    // Their fusion plans take the static table's decisions: profile cells
    // are not fused, nor measured. Profiling a cold cell can cost most of a
    // candidate's compile, and every candidate of a subprogram brings cells
    // of its own; the original and its mutants are compared under the same
    // rule, and the model's own compile profiles the cells of what PET
    // chose afterwards (a cell fuses only when measured no slower, so the
    // chosen candidate runs at most as long as measured).
    // Nor does a candidate's cost depend on what the profile database holds
    // from earlier compiles.
    ExecutorOptions candidate = opts_;
    candidate.fusion_profile = false;
    candidate.pet = false;
    candidate.release_weights = false;
    candidate.verbose = false;
    candidate.passes.verbose = false;
    candidate.passes.dump_after.clear();
    target.measure = [candidate](const Graph& g) { return time_graph(g, candidate).seconds; };
    // The whole-model check times the model as it came and with PET's
    // choices in turns, so a busy spell of the machine slows both alike
    // instead of deciding the check. Both are compiled as the candidates
    // are (the static table's fusion decisions): profiling their cells
    // would make the check's compiles as long as the cold cells make them,
    // and unequal (those of PET's choices cold, the model's warm from an
    // earlier compile). The model as it came is compiled once (model_cost,
    // when the search first measures) and kept for every comparison.
    auto baseline = std::make_shared<std::unique_ptr<Baseline>>();
    const auto baseline_of = [candidate, baseline](const Graph& before) -> Baseline& {
      if (!*baseline || (*baseline)->hash() != structural_hash(before))
        *baseline = std::make_unique<Baseline>(before, candidate);
      return **baseline;
    };
    target.model_cost = [baseline_of](const Graph& before) {
      const Baseline& b = baseline_of(before);
      return ModelCost{b.compile_seconds(), b.first_run_seconds(), b.run_seconds()};
    };
    target.compare_models = [baseline_of](const Graph& before, const Graph& after, double max_seconds) {
      const Stopwatch since_call;
      Baseline& b = baseline_of(before);
      const Interleaved t = b.compare(after, bound_left(max_seconds, since_call));
      return ModelComparison{t.a_ms * 1e-3, t.b_ms * 1e-3, t.ratio, t.ratio_high};
    };
    const codegen::Isa isa = opts_.isa == codegen::Isa::Host ? codegen::host_isa() : opts_.isa;
    target.target_key = std::string(codegen::isa_name(isa)) + "/t" + std::to_string(ThreadPool::global().threads()) +
                        "/r" + std::to_string(fusion::kCodegenRevision);
  }
  run_passes(*graph_, target_pipeline(), opts_.passes, target);
  mark_memory_phase("target passes");
  if (opts_.release_weights) store_ = std::make_unique<WeightStore>(opts_.weight_dir);
}

Executor::~Executor() = default;

std::shared_ptr<const Plan> Executor::find_locked(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (!plans_[i]->matches(inputs)) continue;
    std::shared_ptr<const Plan> p = plans_[i];
    plans_.erase(plans_.begin() + static_cast<std::ptrdiff_t>(i));
    plans_.push_back(p);
    last_plan_ = p;
    last_compile_seconds_ = 0;
    return p;
  }
  return nullptr;
}

std::shared_ptr<const Plan> Executor::find_or_compile(const std::vector<Tensor>& inputs, const SavedSteps* saved) {
  check_inputs(*graph_, inputs);
  if (opts_.threads > 0 && ThreadPool::global().threads() != opts_.threads) ThreadPool::global().set_threads(opts_.threads);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::shared_ptr<const Plan> p = find_locked(inputs)) return p;
  }
  // One compilation at a time: a thread that waited here finds the plan
  // another compiled for the same key meanwhile.
  std::lock_guard<std::mutex> compiling(compile_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::shared_ptr<const Plan> p = find_locked(inputs)) return p;
  }
  std::shared_ptr<const Plan> p;
  try {
    const std::vector<std::vector<int>>* blocks = saved && !saved->blocks.empty() ? &saved->blocks : &block_lists();
    ExecutorOptions o = opts_;
    if (o.compile_threads <= 0) o.compile_threads = ThreadPool::global().threads();
    PlanWeights weights = packed_weights_of(plans());  // the cached plans' packed weights, shared
    weights.store = store_.get();
    p = compile_plan(*graph_, inputs, o, saved, blocks, &weights);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // a fault no step caught: never a bare message
    TESSERA_FAIL("compiling ", graph_->name.empty() ? std::string("the model") : "model '" + graph_->name + "'",
                 ": internal error: ", e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++plans_compiled_;
    last_compile_seconds_ = p->compile_seconds;
    plans_.push_back(p);
    while (plans_.size() > opts_.max_plans) plans_.erase(plans_.begin());  // runs using one keep it alive
    last_plan_ = p;
  }
  release_packed_weights();
  return p;
}

namespace {

// The buffers of the constants the plans read as they are (a buffer may be
// shared by several constants: a reshaped one).
std::set<const void*> original_reads_of(const std::vector<std::shared_ptr<const Plan>>& plans) {
  std::set<const void*> r;
  for (const auto& p : plans)
    for (const Value* v : p->original_reads) r.insert(v->constant->raw());
  return r;
}

}  // namespace

void Executor::release_packed_weights() const {
  if (store_ || artifact_bytes_ > 0) {
    std::set<const void*> read = original_reads_of(plans());
    for (const auto& v : graph_->values()) {
      if (!v->constant || read.count(v->constant->raw())) continue;
      const auto* at = static_cast<const char*>(v->constant->raw());
      if (artifact_bytes_ > 0 && at >= artifact_begin_ && at < artifact_begin_ + artifact_bytes_) {
        if (drop_file_pages(at, v->constant->nbytes())) {
          std::lock_guard<std::mutex> lock(dropped_mu_);
          dropped_.insert(at);
        }
      } else if (store_) {
        store_->release(*v->constant);
      }
    }
  }
  release_free_heap();  // what loading and compiling freed goes back to the system, not to the heap's free lists
  mark_memory_phase("release");
}

void Executor::populate_artifact_pages() const {
  if (artifact_bytes_ == 0) return;
  auto in_artifact = [this](const void* p) {
    const auto* at = static_cast<const char*>(p);
    return at >= artifact_begin_ && at < artifact_begin_ + artifact_bytes_;
  };
  std::set<const void*> done;
  for (const auto& p : plans())
    for (const Value* v : p->original_reads)
      if (in_artifact(v->constant->raw()) && done.insert(v->constant->raw()).second)
        populate_file_pages(v->constant->raw(), v->constant->nbytes());
  mark_memory_phase("artifact pages");
}

const fusion::Partition& Executor::partition() {
  std::lock_guard<std::mutex> compiling(compile_mu_);
  block_lists();
  return *fusion_;
}

const std::vector<std::vector<int>>& Executor::block_lists() {
  if (!fusion_) fusion_ = std::make_unique<fusion::Partition>(partition_model(*graph_, opts_));
  if (block_nodes_.empty())
    for (const fusion::Block& b : fusion_->blocks) block_nodes_.push_back(b.nodes);
  return block_nodes_;
}

std::vector<TaskUse> Executor::tasks(const std::vector<Tensor>& inputs) {
  check_inputs(*graph_, inputs);
  std::lock_guard<std::mutex> compiling(compile_mu_);
  return plan_tasks(*graph_, inputs, opts_, &block_lists());
}

std::shared_ptr<const Plan> Executor::prepare(const std::vector<Tensor>& inputs) { return find_or_compile(inputs); }

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  std::shared_ptr<const Plan> p = find_or_compile(inputs);
  return run_plan(*graph_, *p, inputs);
}

std::vector<Tensor> Executor::run_timed(const std::vector<Tensor>& inputs, std::vector<double>& step_seconds,
                                        std::shared_ptr<const Plan>* used) {
  std::shared_ptr<const Plan> p = find_or_compile(inputs);
  if (used) *used = p;
  return run_plan(*graph_, *p, inputs, &step_seconds);
}

double Executor::last_compile_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_compile_seconds_;
}

std::shared_ptr<const Plan> Executor::last_plan() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_plan_;
}

std::vector<std::shared_ptr<const Plan>> Executor::plans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_;
}

int64_t Executor::plans_compiled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_compiled_;
}

std::string Executor::weights_summary(const std::vector<std::shared_ptr<const Plan>>& plans) const {
  const std::set<const void*> read = original_reads_of(plans);
  std::set<const void*> seen;
  int64_t total = 0, released = 0, dropped = 0;
  for (const auto& v : graph_->values()) {
    if (!v->constant || v->constant->dtype() == DType::String || !seen.insert(v->constant->raw()).second) continue;
    auto n = static_cast<int64_t>(v->constant->nbytes());
    total += n;
    if (store_ && !read.count(v->constant->raw()) && store_->holds(v->constant->raw())) released += n;
    std::lock_guard<std::mutex> lock(dropped_mu_);
    if (!read.count(v->constant->raw()) && dropped_.count(v->constant->raw())) dropped += n;
  }
  std::map<const void*, std::pair<int64_t, int>> packed;  // buffer -> bytes, plans reading it
  for (const auto& p : plans) {
    std::set<const void*> mine;
    for (const Slot& s : p->slots)
      if (s.kind == SlotKind::Packed && mine.insert(s.data.raw()).second) {
        auto& e = packed[s.data.raw()];
        e.first = static_cast<int64_t>(s.data.nbytes());
        ++e.second;
      }
  }
  int64_t held = 0, shared = 0;
  for (const auto& [buf, e] : packed) {
    held += e.first;
    if (e.second > 1) shared += e.first;
  }
  std::ostringstream os;
  os << "weights: constants " << format_bytes(total) << ", " << format_bytes(total - released - dropped)
     << " of them in memory";
  if (dropped > 0)
    os << ", " << format_bytes(dropped) << " read only packed and left in the artifact's file (dropped from memory)";
  if (released > 0) {
    os << ", " << format_bytes(released) << " read only packed and released to a scratch file in "
       << store_->directory();
    if (store_->in_memory_filesystem()) os << " (a tmpfs: still in memory, outside this process)";
  }
  if (!store_) os << " (releasing is off)";
  else if (!store_->available()) os << " (not released: " << store_->why() << ")";
  os << "\n";
  if (held > 0) {
    os << "  packed " << format_bytes(held) << ", held once";
    if (shared > 0) os << ", " << format_bytes(shared) << " of it shared by several plans";
    os << "\n";
  }
  return os.str();
}

std::string Executor::report() const {
  std::ostringstream os;
  os << "model " << (graph_->name.empty() ? std::string("(unnamed)") : graph_->name) << ": "
     << graph_->nodes().size() << " nodes, ISA " << codegen::isa_name(opts_.isa == codegen::Isa::Host ? codegen::host_isa() : opts_.isa)
     << ", " << ThreadPool::global().threads() << " threads\n";
  const std::vector<std::shared_ptr<const Plan>> plans = this->plans();
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = *plans[i];
    os << "plan " << i << ": inputs " << signature_text(p);
    if (!p.value_inputs.empty()) {
      os << "; depends on the values of";
      for (int k : p.value_inputs) os << " '" << graph_->inputs()[static_cast<size_t>(k)]->name << "'";
    }
    os << "\n  steps " << p.steps.size() << " (" << p.compiled_steps << " compiled, " << p.reference_steps
       << " reference), compiled in " << static_cast<int64_t>(p.compile_seconds * 1000 + 0.5) << " ms\n"
       << "  activation memory " << describe(p.arena_layout) << "\n";
    if (p.nodes_run_when_compiling > 0)
      os << "  nodes run while compiling (shapes or kernels depend on their values) " << p.nodes_run_when_compiling
         << "\n";
    if (p.fused_steps > 0)
      os << "  fused steps " << p.fused_steps << " (intermediates inside fused kernels "
         << format_bytes(p.internal_bytes) << ")\n";
    if (p.concat_views > 0) os << "  concats in place " << p.concat_views << " (their inputs written into their output)\n";
    for (const std::string& f : p.fusion_fallbacks) os << "  not fused: " << f << "\n";
    if (p.packed_bytes > 0) {
      os << "  packed weights " << format_bytes(p.packed_bytes);
      if (p.shared_packed_bytes > 0)
        os << " (" << format_bytes(p.shared_packed_bytes) << " of them shared with a plan compiled before)";
      os << "\n";
    }
    std::map<std::string, std::pair<int, std::string>> ref;
    for (const Step& st : p.steps)
      if (!st.compiled && !st.view) {
        auto& e = ref[st.node->op_type];
        ++e.first;
        if (e.second.empty()) e.second = st.reason;
      }
    if (!ref.empty()) os << "  reference steps by op:\n";
    for (const auto& [op, e] : ref) os << "    " << op << " x" << e.first << ": " << e.second << "\n";
  }
  if (plans.empty()) os << "no plan yet (plans are made on the first run)\n";
  os << weights_summary(plans);
  return os.str();
}

}  // namespace tessera::runtime
