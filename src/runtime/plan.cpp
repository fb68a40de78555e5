// Compiling a plan, in phases: the concrete type of every value (running
// nothing unless a shape depends on a value), one task per fusion block (or
// a reference step), a kernel per distinct task compiled in parallel, then
// the binding of every step's kernel to slots, packed weights and the plan's
// key; then the arena (plan_arena.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compile/task.h"
#include "fusion/concat_in_place.h"
#include "ops/registry.h"
#include "runtime/concat_views.h"
#include "runtime/concrete_types.h"
#include "runtime/executor.h"
#include "runtime/plan_arena.h"
#include "runtime/task_kernel.h"
#include "runtime/value_oracle.h"
#include "support/error.h"
#include "support/memory_trace.h"

namespace tessera::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool matches_filter(const Node& n, const std::string& filter) {
  return filter.empty() || n.name.find(filter) != std::string::npos;
}

void dump_kernel(const Node& n, const codegen::JitKernel& k, const ExecutorOptions& opts,
                 const schedule::Schedule& sched) {
  auto section = [&](const char* what, const std::string& text) {
    std::fprintf(stderr, "--- %s of kernel %s (%s) ---\n%s", what, k.name().c_str(), n.describe().c_str(),
                 text.c_str());
    if (!text.empty() && text.back() != '\n') std::fputc('\n', stderr);
  };
  if (opts.dump_ir) section("schedule", schedule::to_text(sched));
  if (opts.dump_ir) section("loop IR", k.loop_ir());
  if (opts.dump_llvm) section("LLVM IR", k.llvm_ir());
  if (opts.dump_asm) section("assembly", k.assembly());
}

// One step before binding: a task with its kernel, or a node run by its
// reference kernel.
struct PendingStep {
  std::vector<const Node*> nodes;
  std::unique_ptr<compile::Task> task;  // null: a reference step
  std::shared_ptr<const TaskKernel> kernel;
  std::string reason;                   // reference steps: why
  bool view = false;                    // a concat done in place (its placement: PlanCompiler::views_)
};

class PlanCompiler {
 public:
  PlanCompiler(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts, const SavedSteps* saved,
               const std::vector<std::vector<int>>* blocks, const PlanWeights* weights)
      : g_(g), inputs_(inputs), opts_(opts), saved_(saved), blocks_(blocks), weights_(weights), oracle_(g, inputs),
        plan_(std::make_unique<Plan>()) {
    task_inputs_.type = [this](const Value* v) { return types_->type_of(v); };
    task_inputs_.value = [this](const Value* v) -> const Tensor* { return &oracle_.value(v); };
    if (saved_) saved_schedules_.by_key = saved_->schedules;
    if (saved_ && !saved_->schedules.empty()) providers_.push_back(&saved_schedules_);
    for (const auto& p : opts_.schedule_providers) providers_.push_back(p.get());
  }

  std::unique_ptr<Plan> compile() {
    auto t0 = Clock::now();
    for (const Tensor& t : inputs_) {
      plan_->input_dtypes.push_back(t.dtype());
      plan_->input_dims.push_back(t.dims());
    }
    types_ = std::make_unique<ConcreteTypes>(g_, inputs_, oracle_);
    plan_steps();
    mark_memory_phase("types and tasks");
    compile_kernels();
    mark_memory_phase("kernels");
    bind_steps();
    place_views();
    mark_memory_phase("packing");
    plan_->original_reads.assign(original_reads_.begin(), original_reads_.end());
    collect_value_inputs();
    place_arena_slots(*plan_);
    plan_->arenas.set_max_idle(opts_.max_idle_arenas);
    plan_->compile_seconds = seconds_since(t0);
    plan_->nodes_run_when_compiling = oracle_.nodes_run();
    return std::move(plan_);
  }

  // The tasks the plan would compile, without compiling them.
  std::vector<TaskUse> tasks() {
    types_ = std::make_unique<ConcreteTypes>(g_, inputs_, oracle_);
    plan_steps();
    std::map<uint64_t, size_t> at;
    std::vector<TaskUse> r;
    for (PendingStep& p : pending_) {
      if (!p.task) continue;
      auto [it, fresh] = at.emplace(p.task->key, r.size());
      if (fresh) r.push_back({std::shared_ptr<const compile::Task>(std::move(p.task)), 0});
      ++r[it->second].weight;
    }
    return r;
  }

 private:
  // --- steps --------------------------------------------------------------------

  void plan_steps() {
    if (opts_.concat_in_place) {
      // The concrete types: a dynamic batch that is 1 in this run qualifies.
      // Only concats alone in their block become view steps, so only they
      // may hold other concats' inputs.
      std::unordered_set<const Node*> alone;
      if (blocks_ && !blocks_->empty())
        for (const auto& b : *blocks_)
          if (b.size() == 1) alone.insert(g_.nodes().at(static_cast<size_t>(b[0])).get());
      auto eligible = [&](const Node& n) { return !blocks_ || blocks_->empty() || alone.count(&n) > 0; };
      for (fusion::ConcatPlacement& c :
           fusion::in_place_concats(g_, [this](const Value* v) { return types_->type_of(v); }, eligible))
        views_[c.concat] = std::move(c);
    }
    if (blocks_ && !blocks_->empty()) {
      size_t covered = 0;
      for (const auto& b : *blocks_) covered += b.size();
      TESSERA_CHECK(covered == g_.nodes().size(), "fusion plan covers ", covered, " of ", g_.nodes().size(), " nodes");
      for (const auto& b : *blocks_) {
        if (b.size() == 1) {
          pending_.push_back(single_step(*g_.nodes().at(static_cast<size_t>(b[0]))));
          continue;
        }
        std::vector<const Node*> ns;
        for (int i : b) ns.push_back(g_.nodes().at(static_cast<size_t>(i)).get());
        std::optional<PendingStep> fused = block_step(ns, b);
        if (fused) pending_.push_back(std::move(*fused));
        else for (const Node* n : ns) pending_.push_back(node_step(*n));
      }
    } else {
      for (const auto& n : g_.nodes()) pending_.push_back(single_step(*n));
    }
  }

  // A node alone in its step: a view step if it is a concat done in place
  // (a concat in a block that fell apart stays a copy).
  PendingStep single_step(const Node& n) {
    auto it = views_.find(&n);
    if (it == views_.end()) return node_step(n);
    PendingStep p;
    p.nodes = {&n};
    p.view = true;
    return p;
  }

  void fall_back(const std::string& why) {
    plan_->fusion_fallbacks.push_back(why);
    if (opts_.verbose) std::fprintf(stderr, "fusion: %s; its nodes run as separate kernels\n", why.c_str());
  }

  // A fused block as one task; none when it cannot be one kernel.
  std::optional<PendingStep> block_step(const std::vector<const Node*>& ns, const std::vector<int>& idx) {
    PendingStep p;
    p.nodes = ns;
    try {
      std::vector<const Value*> outputs = fusion::block_outputs(g_, fusion::Block{idx, MappingType::OneToOne, -1});
      p.task = std::make_unique<compile::Task>(compile::build_task(g_.opset, ns, task_inputs_, outputs));
    } catch (const Error& e) {
      fall_back(e.what());
      return std::nullopt;
    } catch (const std::exception& e) {  // a fault, not a block that cannot be one kernel: never silent
      TESSERA_FAIL(compile::describe_block(ns), ": internal error while composing the fused block: ", e.what());
    }
    return p;
  }

  PendingStep node_step(const Node& n) {
    PendingStep p;
    p.nodes = {&n};
    const NodeFacts& f = types_->facts(n);
    if (!f.compilable) {
      p.reason = f.reason;
      return p;
    }
    try {  // every output, absent ones too (computed into scratch)
      p.task = std::make_unique<compile::Task>(compile::build_task(g_.opset, {&n}, task_inputs_, {}));
    } catch (const Error& e) {
      std::string msg = e.what();
      if (msg.find("no compiled kernel") == std::string::npos) {
        if (msg.rfind(n.describe(), 0) == 0) throw;
        TESSERA_FAIL(n.describe(), ": cannot compile: ", msg);
      }
      p.reason = msg.rfind(n.describe() + ": ", 0) == 0 ? msg.substr(n.describe().size() + 2) : msg;
    } catch (const std::exception& e) {
      TESSERA_FAIL(n.describe(), ": internal error while building its task: ", e.what());
    }
    return p;
  }

  // --- kernels ------------------------------------------------------------------

  bool packed_saved(size_t step) const { return saved_ && saved_->packed.count(static_cast<int64_t>(step)); }

  // Kernels for every task; a fused block whose program cannot be lowered
  // runs as separate steps, compiled in a second round.
  void compile_kernels() {
    KernelBuildOptions ko;
    ko.isa = opts_.isa;
    ko.threads = opts_.compile_threads;
    ko.verbose = opts_.verbose;
    if (saved_ && !saved_->kernels.empty()) ko.saved = &saved_->kernels;
    for (int round = 0; round < 2; ++round) {
      std::vector<const compile::Task*> tasks;
      std::vector<size_t> where;
      for (size_t i = 0; i < pending_.size(); ++i)
        if (pending_[i].task && !pending_[i].kernel) {
          tasks.push_back(pending_[i].task.get());
          where.push_back(i);
          ko.prepacked.push_back(packed_saved(i));
        }
      if (tasks.empty()) return;
      auto t0 = Clock::now();
      std::vector<KernelResult> built = build_kernels(tasks, providers_, ko);
      plan_->kernel_seconds += seconds_since(t0);
      ko.prepacked.clear();
      std::vector<PendingStep> next;
      bool split = false;
      std::vector<size_t> task_of(pending_.size(), SIZE_MAX);  // per pending step: its task in this build
      for (size_t k = 0; k < tasks.size(); ++k) task_of[where[k]] = k;
      for (size_t i = 0; i < pending_.size(); ++i) {
        PendingStep& p = pending_[i];
        size_t k = task_of[i];
        if (k == SIZE_MAX) {
          next.push_back(std::move(p));
          continue;
        }
        KernelResult& r = built[k];
        if (r.kernel) {
          p.kernel = r.kernel;
          next.push_back(std::move(p));
        } else if (r.lowering_failed && p.nodes.size() > 1 && round == 0) {
          fall_back(r.error);
          for (const Node* n : p.nodes) next.push_back(node_step(*n));
          split = true;
        } else {
          TESSERA_FAIL(r.error);
        }
      }
      pending_ = std::move(next);
      if (!split) return;
    }
  }

  // --- binding ------------------------------------------------------------------

  int add_slot(Slot s) {
    plan_->slots.push_back(std::move(s));
    return static_cast<int>(plan_->slots.size()) - 1;
  }

  // The slot holding an input value: a graph input, an earlier output or a constant.
  int value_slot(const Value* v) {
    auto it = slot_of_.find(v);
    if (it != slot_of_.end()) return it->second;
    Slot s;
    s.value = v;
    if (!v->constant) {
      auto in = std::find(g_.inputs().begin(), g_.inputs().end(), v);
      TESSERA_CHECK(in != g_.inputs().end(), "value '", v->name,
                    "' has no value (not a graph input, constant or earlier output)");
      const Tensor& t = inputs_[static_cast<size_t>(in - g_.inputs().begin())];
      s.kind = SlotKind::Input;
      s.index = static_cast<int>(in - g_.inputs().begin());
      s.dtype = t.dtype();
      s.dims = t.dims();
      s.bytes = static_cast<int64_t>(t.nbytes());
    } else {
      s.kind = SlotKind::Constant;
      s.dtype = v->constant->dtype();
      s.dims = v->constant->dims();
      s.bytes = static_cast<int64_t>(v->constant->nbytes());
    }
    int id = add_slot(std::move(s));
    slot_of_[v] = id;
    return id;
  }

  int output_slot(const Value* v, DType dtype, const Dims& dims, int64_t step) {
    Slot s;
    s.value = v;
    s.dtype = dtype;
    s.dims = dims;
    s.bytes = dtype == DType::String ? 0 : numel_of(dims) * static_cast<int64_t>(dtype_size(dtype));
    s.kind = v && g_.is_output(v) ? SlotKind::Output : dtype == DType::String ? SlotKind::Owned : SlotKind::Arena;
    s.first_step = s.last_step = step;
    int id = add_slot(std::move(s));
    if (v) slot_of_[v] = id;
    return id;
  }

  int read_slot(const Value* v, int64_t step) {
    int s = value_slot(v);
    Slot& sl = plan_->slots[static_cast<size_t>(s)];
    sl.last_step = std::max(sl.last_step, step);
    return s;
  }

  // Notes that runs read slot `s` as it is (a constant's original tensor).
  void read_original(int s) {
    if (s < 0) return;
    const Slot& sl = plan_->slots[static_cast<size_t>(s)];
    if (sl.kind == SlotKind::Constant) original_reads_.insert(sl.value);
  }

  void bind_steps() {
    for (size_t i = 0; i < g_.inputs().size(); ++i) value_slot(g_.inputs()[i]);
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].view) bind_view(pending_[i], static_cast<int64_t>(i));
      else if (pending_[i].task) bind_compiled(pending_[i], static_cast<int64_t>(i));
      else bind_reference(pending_[i], static_cast<int64_t>(i));
    }
    for (const Value* o : g_.outputs()) {
      auto it = slot_of_.find(o);
      if (it != slot_of_.end()) plan_->output_slots.push_back(it->second);
      else if (o->constant) plan_->output_slots.push_back(value_slot(o));
      else TESSERA_FAIL("graph output '", o->name, "' was never computed");
      read_original(plan_->output_slots.back());
    }
  }

  static bool fits(const std::vector<Tensor>& given, const TaskKernel& k) {
    bool ok = given.size() == k.packed.size();
    for (size_t i = 0; ok && i < given.size(); ++i)
      ok = given[i].dtype() == k.packed[i].dtype() && given[i].dims() == k.packed[i].dims();
    return ok;
  }

  // The packed constants of a step: another plan's with the same key (one
  // copy), as an artifact saved them, or packed now (and the originals then
  // released: they are read again only if some step reads them as they are).
  std::vector<Tensor> packed_constants(const PendingStep& p, int64_t step, Step& st) {
    const TaskKernel& k = *p.kernel;
    st.pack_key.program = k.prepack_program;
    for (int i : k.prepack_params) st.pack_key.constants.push_back(p.task->param_values.at(static_cast<size_t>(i)));
    if (weights_) {
      auto it = weights_->packed.find(st.pack_key);
      if (it != weights_->packed.end() && fits(it->second, k)) {
        for (const Tensor& t : it->second) plan_->shared_packed_bytes += static_cast<int64_t>(t.nbytes());
        return it->second;
      }
    }
    if (saved_ && saved_->packed.count(step)) {
      const std::vector<Tensor>& given = saved_->packed.at(step);
      TESSERA_CHECK(fits(given, k), p.task->describe(),
                    ": the packed weights saved in the artifact do not fit the kernel's layout");
      return given;
    }
    std::vector<const Tensor*> params;
    for (const Value* v : p.task->param_values) params.push_back(v->constant ? &*v->constant : nullptr);
    st.prepack = k.prepack;
    std::vector<Tensor> packed = pack_constants(k, params);
    if (weights_ && weights_->store)
      for (const Value* v : st.pack_key.constants)
        if (v->constant) weights_->store->release(*v->constant);
    return packed;
  }

  void bind_compiled(PendingStep& p, int64_t step) {
    const compile::Task& t = *p.task;
    const TaskKernel& k = *p.kernel;
    Step st;
    st.node = p.nodes[0];
    st.nodes = p.nodes;
    st.compiled = true;
    st.kernel = k.kernel;
    st.task_kernel = p.kernel;
    st.schedule = k.schedule;
    st.task_key = t.key;
    std::vector<int> params, packed, outputs, scratch;
    for (const Value* v : t.param_values) params.push_back(read_slot(v, step));
    for (size_t q = 0; q < params.size(); ++q)  // a param only the packing reads is read packed
      if (q >= k.reads.size() || k.reads[q]) read_original(params[q]);
    if (p.nodes.size() == 1) {
      // One node: its inputs by position (the runtime's value checks read
      // them so), each writable in place when the param it reads is.
      const Node& n = *p.nodes[0];
      st.def = &op_registry().get(n, g_.opset);
      if (st.def->value_check)  // sees every input as it is
        for (const Value* v : n.inputs)
          if (v && v->constant) original_reads_.insert(v);
      for (const Value* v : n.inputs) {
        auto at = std::find(t.param_values.begin(), t.param_values.end(), v);
        if (!v || at == t.param_values.end()) {
          st.inputs.push_back(v ? read_slot(v, step) : -1);
          st.in_place.push_back(false);
          continue;
        }
        size_t q = static_cast<size_t>(at - t.param_values.begin());
        st.inputs.push_back(params[q]);
        st.in_place.push_back(k.in_place[q]);
      }
    } else {
      st.inputs = params;
      st.in_place = k.in_place;
    }
    if (!k.packed.empty()) {
      for (Tensor& data : packed_constants(p, step, st)) {
        Slot s;
        s.kind = SlotKind::Packed;
        s.dtype = data.dtype();
        s.dims = data.dims();
        s.bytes = static_cast<int64_t>(data.nbytes());
        s.data = std::move(data);
        plan_->packed_bytes += s.bytes;
        packed.push_back(add_slot(std::move(s)));
      }
    }
    for (size_t i = 0; i < t.outputs.size(); ++i)
      outputs.push_back(output_slot(t.outputs[i], t.output_types[i].dtype, t.output_types[i].dims, step));
    for (const loop::Buffer& b : k.scratch)
      scratch.push_back(output_slot(nullptr, b.dtype(), Dims{numel_of(b.dims())}, step));
    st.outputs = outputs;
    st.packed = packed;
    st.args = TaskKernel::arguments(params, packed, outputs, scratch);
    check_binding(t.describe(), k, st);
    for (const Value* v : t.values_used) value_deps_.push_back(v);
    ++plan_->compiled_steps;
    if (p.nodes.size() > 1) {
      ++plan_->fused_steps;
      plan_->internal_bytes += k.internal_bytes;
    }
    for (const Node* n : p.nodes)
      if ((opts_.dump_ir || opts_.dump_llvm || opts_.dump_asm) && matches_filter(*n, opts_.dump_kernel)) {
        dump_kernel(*n, *k.kernel, opts_, k.schedule);  // once, when any of the block's nodes matches
        break;
      }
    plan_->steps.push_back(std::move(st));
  }

  void bind_reference(PendingStep& p, int64_t step) {
    const Node& n = *p.nodes[0];
    const NodeFacts& f = types_->facts(n);
    Step st;
    st.node = &n;
    st.nodes = {&n};
    st.def = &op_registry().get(n, g_.opset);
    st.reason = p.reason;
    for (const Value* v : n.inputs) st.inputs.push_back(v ? read_slot(v, step) : -1);
    for (int s : st.inputs) read_original(s);
    st.captures = captured_names(n);
    for (const std::string& name : st.captures) {
      const Value* v = g_.find_value(name);
      if (!v || (!slot_of_.count(v) && !v->constant)) continue;
      plan_->slot_by_name[name] = read_slot(v, step);
      read_original(plan_->slot_by_name[name]);
    }
    for (const Value* o : n.outputs) {
      if (!o) {
        st.outputs.push_back(-1);
        continue;
      }
      TensorType t = types_->type_of(o);
      st.outputs.push_back(output_slot(o, t.dtype, t.dims, step));
    }
    for (const Value* v : f.shape_deps) value_deps_.push_back(v);
    ++plan_->reference_steps;
    plan_->steps.push_back(std::move(st));
  }

  // A concat done in place: an output slot and reads of its inputs (which
  // extend their lives); place_views puts them inside the root.
  void bind_view(PendingStep& p, int64_t step) {
    const Node& n = *p.nodes[0];
    Step st;
    st.node = &n;
    st.nodes = {&n};
    st.view = true;
    st.def = &op_registry().get(n, g_.opset);
    for (const Value* v : n.inputs) st.inputs.push_back(read_slot(v, step));
    TensorType t = types_->type_of(n.outputs[0]);
    st.outputs.push_back(output_slot(n.outputs[0], t.dtype, t.dims, step));
    ++plan_->concat_views;
    plan_->steps.push_back(std::move(st));
  }

  // Every view step's inputs, and its output unless it is a root, become
  // children of the root's slot, once all slots exist (a dense block's root
  // is its last concat, bound after the views inside it). A value read by
  // several views is placed once; the rules gave it one place in all.
  void place_views() {
    std::unordered_set<int> placed;
    auto place = [&](int child, int root, int64_t offset, const Step& st) {
      if (!placed.insert(child).second) {
        const Slot& c = plan_->slots[static_cast<size_t>(child)];
        TESSERA_CHECK(c.parent == root && c.parent_offset == offset, st.node->describe(), ": input '",
                      c.value ? c.value->name : "?", "' is placed at two different offsets");
        return;
      }
      place_in_parent(*plan_, child, root, offset, st);
    };
    for (const Step& st : plan_->steps) {
      if (!st.view) continue;
      const fusion::ConcatPlacement& c = views_.at(st.node);
      const int root = c.root ? slot_of_.at(c.root) : st.outputs[0];
      if (c.root) place(st.outputs[0], root, c.base, st);
      for (size_t k = 0; k < st.inputs.size(); ++k) place(st.inputs[k], root, c.base + c.offsets.at(k), st);
    }
  }

  // Kernels do not check their buffers: a binding mismatch must not reach them.
  void check_binding(const std::string& what, const TaskKernel& k, const Step& st) {
    TESSERA_CHECK(st.args.size() == k.params.size(), what, ": kernel has ", k.params.size(),
                  " parameters but the step binds ", st.args.size());
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Slot& s = plan_->slots[static_cast<size_t>(st.args[i])];
      const loop::Buffer& b = k.params[i];
      bool ok = b.dtype() == s.dtype && (b.dims().empty() ? true : numel_of(b.dims()) == numel_of(s.dims));
      TESSERA_CHECK(ok, what, ": kernel parameter ", b.name(), " is ", dtype_name(b.dtype()), "[",
                    dims_to_string(b.dims()), "] but is bound to ", dtype_name(s.dtype), "[", dims_to_string(s.dims),
                    "]");
    }
  }

  // --- the key ------------------------------------------------------------------

  // Follows the values the plan depends on back to graph inputs.
  void collect_value_inputs() {
    std::unordered_map<const Value*, int> input_index;
    for (size_t i = 0; i < g_.inputs().size(); ++i) input_index[g_.inputs()[i]] = static_cast<int>(i);
    std::unordered_set<const Value*> seen;
    std::set<int> found;
    std::vector<const Value*> stack = value_deps_;
    while (!stack.empty()) {
      const Value* v = stack.back();
      stack.pop_back();
      if (!v || !seen.insert(v).second) continue;
      auto in = input_index.find(v);
      if (in != input_index.end()) {
        found.insert(in->second);
        continue;
      }
      if (v->constant || !v->producer) continue;
      const Node& p = *v->producer;
      if (p.domain.empty() && (p.op_type == "Shape" || p.op_type == "Size")) continue;
      for (const Value* u : p.inputs) stack.push_back(u);
      if (p.has_subgraph())
        for (const std::string& name : captured_names(p)) stack.push_back(g_.find_value(name));
    }
    for (int i : found) {
      plan_->value_inputs.push_back(i);
      plan_->values.push_back(inputs_[static_cast<size_t>(i)].clone());
    }
  }

  const Graph& g_;
  const std::vector<Tensor>& inputs_;
  const ExecutorOptions& opts_;
  const SavedSteps* saved_;
  const std::vector<std::vector<int>>* blocks_;
  const PlanWeights* weights_;
  ValueOracle oracle_;
  std::unique_ptr<Plan> plan_;
  compile::TaskInputs task_inputs_;
  SavedSchedules saved_schedules_;
  std::vector<const ScheduleProvider*> providers_;
  std::unique_ptr<ConcreteTypes> types_;
  std::vector<PendingStep> pending_;
  std::unordered_map<const Node*, fusion::ConcatPlacement> views_;  // concats done in place: root and offsets
  std::unordered_map<const Value*, int> slot_of_;
  std::vector<const Value*> value_deps_;
  std::set<const Value*> original_reads_;
};

}  // namespace

PlanWeights packed_weights_of(const std::vector<std::shared_ptr<const Plan>>& plans) {
  PlanWeights w;
  for (const auto& p : plans)
    for (const Step& st : p->steps) {
      if (st.packed.empty() || st.pack_key.program.empty() || w.packed.count(st.pack_key)) continue;
      std::vector<Tensor>& ts = w.packed[st.pack_key];
      for (int s : st.packed) ts.push_back(p->slots[static_cast<size_t>(s)].data);
    }
  return w;
}

std::unique_ptr<Plan> compile_plan(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts,
                                   const SavedSteps* saved, const std::vector<std::vector<int>>* blocks,
                                   const PlanWeights* weights) {
  return PlanCompiler(g, inputs, opts, saved, blocks, weights).compile();
}

std::vector<TaskUse> plan_tasks(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts,
                                const std::vector<std::vector<int>>* blocks) {
  return PlanCompiler(g, inputs, opts, nullptr, blocks, nullptr).tasks();
}

}  // namespace tessera::runtime
