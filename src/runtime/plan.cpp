// Plan building by tracing: every node runs once on actual inputs, compiled
// for its concrete types (or through its reference kernel), and is recorded as
// a step; then the value dependencies of the plan's key are collected and the
// intermediate slots are placed in one arena.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compile/block_kernel.h"
#include "ir/op_registry.h"
#include "runtime/executor.h"
#include "support/error.h"

namespace tessera::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  return false;
}

bool type_static(const TensorType& t) { return t.dtype != DType::Undefined && t.rank_known && t.fully_known(); }

// Output types of `n` from its input types and the given input values; false
// when inference fails or leaves a present output (with `all`, any output)
// not static.
bool infer_static(const Node& n, int64_t opset, const OpDef& def, const std::vector<TensorType>& types,
                  const std::vector<const Tensor*>& values, std::vector<TensorType>* out, bool all = false) {
  InferContext ctx{n, opset, {}, values, {}};
  for (size_t i = 0; i < types.size(); ++i) ctx.input_types.push_back(n.inputs[i] ? &types[i] : nullptr);
  try {
    def.infer(ctx);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (i >= ctx.output_types.size()) return false;
    if ((all || n.outputs[i]) && !type_static(ctx.output_types[i])) return false;
  }
  if (out) {
    *out = ctx.output_types;
    out->resize(n.outputs.size());
  }
  return true;
}

// The inputs of a reference step whose values decide its output shapes (none
// when inference from types alone gives static outputs).
std::vector<int> shape_value_inputs(const Node& n, int64_t opset, const OpDef& def, const std::vector<TensorType>& types,
                                    const std::vector<const Tensor*>& ins) {
  std::vector<int> all;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] && !n.inputs[i]->constant) all.push_back(static_cast<int>(i));
  if (has_subgraph(n)) return all;
  auto known_with = [&](const std::vector<int>& given) {
    std::vector<const Tensor*> values(ins.size(), nullptr);
    for (size_t i = 0; i < ins.size(); ++i)
      if (n.inputs[i] && n.inputs[i]->constant) values[i] = ins[i];
    for (int i : given) values[static_cast<size_t>(i)] = ins[static_cast<size_t>(i)];
    return infer_static(n, opset, def, types, values, nullptr);
  };
  if (known_with({})) return {};
  if (!known_with(all)) return all;  // data-dependent shape (NonZero ...)
  std::vector<int> needed;
  for (int i : all) {
    std::vector<int> others;
    for (int j : all)
      if (j != i) others.push_back(j);
    if (!known_with(others)) needed.push_back(i);
  }
  return known_with(needed) ? needed : all;
}

bool matches_filter(const Node& n, const std::string& filter) {
  return filter.empty() || n.name.find(filter) != std::string::npos;
}

void dump_kernel(const Node& n, const codegen::JitKernel& k, const ExecutorOptions& opts,
                 const schedule::Schedule& sched) {
  if (!(opts.dump_ir || opts.dump_llvm || opts.dump_asm) || !matches_filter(n, opts.dump_kernel)) return;
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

class Tracer {
 public:
  Tracer(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts, const SavedSteps* saved,
         const std::vector<std::vector<int>>* blocks)
      : g_(g), inputs_(inputs), opts_(opts), saved_(saved), blocks_(blocks), plan_(std::make_unique<Plan>()) {}

  std::unique_ptr<Plan> trace() {
    auto t0 = Clock::now();
    start_ = t0;
    for (const Value* o : g_.outputs()) graph_outputs_.insert(o);
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value* v = g_.inputs()[i];
      const Tensor& t = inputs_[i];
      Slot s;
      s.kind = SlotKind::Input;
      s.value = v;
      s.index = static_cast<int>(i);
      s.dtype = t.dtype();
      s.dims = t.dims();
      s.bytes = static_cast<int64_t>(t.nbytes());
      slot_of_[v] = add_slot(std::move(s));
      input_index_[v] = static_cast<int>(i);
      env_[v] = t;
      plan_->input_dtypes.push_back(t.dtype());
      plan_->input_dims.push_back(t.dims());
    }
    for (const auto& n : g_.nodes()) {
      if (has_subgraph(*n)) release_ = false;
      for (const Value* v : n->inputs)
        if (v) ++remaining_[v];
    }
    for (const Value* o : g_.outputs()) remaining_[o] += 1 << 30;

    if (blocks_ && !blocks_->empty()) {
      size_t covered = 0;
      for (const auto& b : *blocks_) covered += b.size();
      TESSERA_CHECK(covered == g_.nodes().size(), "fusion plan covers ", covered, " of ", g_.nodes().size(), " nodes");
      for (const auto& b : *blocks_) {
        if (b.size() == 1) trace_node(*g_.nodes().at(static_cast<size_t>(b[0])), step_index());
        else trace_block(b);
      }
    } else {
      for (const auto& n : g_.nodes()) trace_node(*n, step_index());
    }

    for (const Value* o : g_.outputs()) {
      auto it = slot_of_.find(o);
      if (it != slot_of_.end()) {
        plan_->output_slots.push_back(it->second);
      } else if (o->constant) {
        plan_->output_slots.push_back(value_slot(o));
      } else {
        TESSERA_FAIL("graph output '", o->name, "' was never computed");
      }
    }
    collect_value_inputs();
    plan_memory_slots();
    plan_->trace_seconds = seconds_since(t0);
    return std::move(plan_);
  }

 private:
  int64_t step_index() const { return static_cast<int64_t>(plan_->steps.size()); }

  int add_slot(Slot s) {
    plan_->slots.push_back(std::move(s));
    return static_cast<int>(plan_->slots.size()) - 1;
  }

  // The slot holding an input value: a graph input, an earlier output or a constant.
  int value_slot(const Value* v) {
    auto it = slot_of_.find(v);
    if (it != slot_of_.end()) return it->second;
    TESSERA_CHECK(v->constant, "value '", v->name, "' has no value (not a graph input, constant or earlier output)");
    Slot s;
    s.kind = SlotKind::Constant;
    s.value = v;
    s.dtype = v->constant->dtype();
    s.dims = v->constant->dims();
    s.bytes = static_cast<int64_t>(v->constant->nbytes());
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
    s.kind = v && graph_outputs_.count(v) ? SlotKind::Output : dtype == DType::String ? SlotKind::Owned : SlotKind::Arena;
    s.first_step = s.last_step = step;
    int id = add_slot(std::move(s));
    if (v) slot_of_[v] = id;
    return id;
  }

  // Runs the node's prepack kernel on its constant inputs now (or takes the
  // packed tensors an artifact saved for this step); the packed tensors
  // become Packed slots passed to the main kernel after its inputs.
  void pack_constants(const Node& n, const loop::Kernel& prepack, const std::vector<int>& prepack_inputs,
                      const std::vector<const Tensor*>& ins, const codegen::JitOptions& jo, int64_t step, Step& st,
                      std::vector<void*>& args) {
    const std::vector<loop::Buffer>& outs = prepack.outputs;
    const std::vector<Tensor>* given = nullptr;
    if (saved_ && saved_->packed.count(step)) {
      given = &saved_->packed.at(step);
      bool ok = given->size() == outs.size();
      for (size_t i = 0; ok && i < outs.size(); ++i)
        ok = (*given)[i].dtype() == outs[i].dtype() && (*given)[i].dims() == outs[i].dims();
      TESSERA_CHECK(ok, n.describe(), ": the packed weights saved in the artifact do not fit the kernel's layout");
    }
    std::vector<void*> pargs;
    for (int i : prepack_inputs) pargs.push_back(const_cast<void*>(ins[static_cast<size_t>(i)]->raw()));
    for (size_t i = 0; i < outs.size(); ++i) {
      Slot s;
      s.kind = SlotKind::Packed;
      s.dtype = outs[i].dtype();
      s.dims = outs[i].dims();
      s.data = given ? (*given)[i] : Tensor(s.dtype, s.dims);
      s.bytes = static_cast<int64_t>(s.data.nbytes());
      pargs.push_back(s.data.raw());
      st.packed.push_back(add_slot(std::move(s)));
    }
    if (!given) {
      try {
        st.prepack = codegen::jit_compile(prepack, jo);
      } catch (const Error& e) {
        TESSERA_FAIL(n.describe(), ": JIT compilation of the weight-packing kernel failed: ", e.what());
      }
      st.prepack->run(pargs);
    }
    for (int p : st.packed) {
      const Slot& s = plan_->slots[static_cast<size_t>(p)];
      args.push_back(const_cast<void*>(s.data.raw()));
      st.args.push_back(p);
      plan_->packed_bytes += s.bytes;
    }
  }

  void use(int slot, int64_t step) {
    Slot& s = plan_->slots[static_cast<size_t>(slot)];
    s.last_step = std::max(s.last_step, step);
  }

  const Tensor* lookup(const Value* v, const Node& n) {
    auto it = env_.find(v);
    if (it != env_.end()) return &it->second;
    if (v->constant) return &*v->constant;
    TESSERA_FAIL(n.describe(), ": input '", v->name, "' has no value (not a graph input, constant or earlier output)");
  }

  void progress(const Node& n, int64_t step) {
    bool show = opts_.verbose;
    if (!show && seconds_since(start_) > 3.0 && seconds_since(last_progress_) > 1.0) show = true;
    if (!show) return;
    last_progress_ = Clock::now();
    std::fprintf(stderr, "compiling %lld/%zu %s...\n", static_cast<long long>(step + 1), g_.nodes().size(),
                 n.describe().c_str());
  }

  void trace_node(const Node& n, int64_t step) {
    const OpDef& def = OpRegistry::global().get(n, g_.opset);
    std::vector<const Tensor*> ins;
    std::vector<TensorType> types(n.inputs.size());
    Step st;
    st.node = &n;
    st.nodes = {&n};
    st.def = &def;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* v = n.inputs[i];
      if (!v) {
        ins.push_back(nullptr);
        st.inputs.push_back(-1);
        continue;
      }
      const Tensor* t = lookup(v, n);
      ins.push_back(t);
      types[i] = TensorType{t->dtype(), t->dims(), true};
      int s = value_slot(v);
      use(s, step);
      st.inputs.push_back(s);
    }

    std::vector<Tensor> outs;
    std::vector<TensorType> out_types;
    std::optional<compile::NodeKernel> nk;
    if (!def.expr) {
      st.reason = def.opaque_reason.empty() ? "no tensor expression" : def.opaque_reason;
    } else if (has_subgraph(n)) {
      st.reason = "subgraph op";
    } else if (std::any_of(ins.begin(), ins.end(), [](const Tensor* t) { return t && t->dtype() == DType::String; })) {
      st.reason = "string tensors";
    } else if (!infer_static(n, g_.opset, def, types, ins, &out_types, true)) {
      st.reason = "output shape not static";
    } else if (std::any_of(out_types.begin(), out_types.end(), [](const TensorType& t) { return t.dtype == DType::String; })) {
      st.reason = "string tensors";
    } else {
      std::vector<const TensorType*> tp;
      for (size_t i = 0; i < types.size(); ++i) tp.push_back(n.inputs[i] ? &types[i] : nullptr);
      try {
        // Schedules use the vector width of the ISA the kernels are compiled for.
        compile::NodeKernelOptions ko;
        ko.target = Target::for_isa(opts_.isa);
        // Constant inputs (weights) may be packed once, here, instead of every run.
        for (const Value* v : n.inputs) ko.constant_inputs.push_back(v && v->constant);
        std::optional<schedule::Schedule> sched;
        if (saved_ && saved_->schedules.count(step)) sched = saved_->schedules.at(step);
        nk = compile::compile_node(n, g_.opset, tp, ins, out_types, sched, ko);
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.find("no compiled kernel") == std::string::npos) {
          if (msg.rfind(n.describe(), 0) == 0) throw;
          TESSERA_FAIL(n.describe(), ": cannot compile: ", msg);
        }
        st.reason = msg.rfind(n.describe() + ": ", 0) == 0 ? msg.substr(n.describe().size() + 2) : msg;
      }
    }

    if (nk) {
      progress(n, step);
      codegen::JitOptions jo;
      jo.isa = opts_.isa;
      try {
        st.kernel = codegen::jit_compile(nk->kernel, jo);
      } catch (const Error& e) {
        TESSERA_FAIL(n.describe(), ": JIT compilation failed: ", e.what());
      }
      dump_kernel(n, *st.kernel, opts_, nk->schedule);
      st.compiled = true;
      std::vector<void*> args;
      for (int i : nk->param_inputs) {
        args.push_back(const_cast<void*>(ins[static_cast<size_t>(i)]->raw()));
        st.args.push_back(st.inputs[static_cast<size_t>(i)]);
      }
      st.schedule = nk->schedule;
      st.in_place = nk->in_place;
      if (nk->prepack) pack_constants(n, *nk->prepack, nk->prepack_inputs, ins, jo, step, st, args);
      for (size_t k = 0; k < out_types.size(); ++k) {
        outs.emplace_back(out_types[k].dtype, out_types[k].dims);
        args.push_back(outs.back().raw());
        int s = output_slot(n.outputs[k], out_types[k].dtype, out_types[k].dims, step);
        st.outputs.push_back(s);
        st.args.push_back(s);
      }
      std::vector<Tensor> scratch;
      bind_scratch(nk->scratch, step, st, args, scratch);
      check_binding(n.describe(), nk->kernel, st, args);
      if (def.value_check) def.value_check(n, ins);
      st.kernel->run(args);
      // Values baked into the kernel make the plan depend on them.
      for (size_t i = 0; i < nk->value_used.size() && i < n.inputs.size(); ++i)
        if (nk->value_used[i] && n.inputs[i]) value_deps_.push_back(n.inputs[i]);
      ++plan_->compiled_steps;
    } else {
      st.captures = captured_names(n);
      for (const std::string& name : st.captures) {
        const Value* v = g_.find_value(name);
        if (!v || (!env_.count(v) && !v->constant)) continue;
        int s = value_slot(v);
        use(s, step);
        plan_->slot_by_name[name] = s;
      }
      auto resolve = [&](const std::string& name) -> const Tensor* {
        const Value* v = g_.find_value(name);
        if (!v) return nullptr;
        auto it = env_.find(v);
        if (it != env_.end()) return &it->second;
        return v->constant ? &*v->constant : nullptr;
      };
      outs = run_reference(n, g_.opset, ins, resolve);
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const Value* o = n.outputs[k];
        if (!o) {
          st.outputs.push_back(-1);
          continue;
        }
        TESSERA_CHECK(k < outs.size() && outs[k].defined(), n.describe(), ": kernel returned no tensor for output '",
                      o->name, "'");
        st.outputs.push_back(output_slot(o, outs[k].dtype(), outs[k].dims(), step));
      }
      for (int i : shape_value_inputs(n, g_.opset, def, types, ins)) value_deps_.push_back(n.inputs[static_cast<size_t>(i)]);
      if (has_subgraph(n))
        for (const std::string& name : st.captures)
          if (const Value* v = g_.find_value(name)) value_deps_.push_back(v);
      ++plan_->reference_steps;
    }

    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (n.outputs[k]) env_[n.outputs[k]] = std::move(outs[k]);
    for (const Value* v : n.inputs)
      if (v && --remaining_[v] == 0 && release_ && !input_index_.count(v)) env_.erase(v);
    plan_->steps.push_back(std::move(st));
  }

  // A fused block as one compiled step; when the block cannot be one kernel
  // its nodes are traced one by one and the reason is kept in the plan.
  void trace_block(const std::vector<int>& idx) {
    int64_t step = step_index();
    std::vector<const Node*> ns;
    for (int i : idx) ns.push_back(g_.nodes().at(static_cast<size_t>(i)).get());
    std::vector<const Value*> outputs = fusion::block_outputs(g_, fusion::Block{idx, MappingType::OneToOne, -1});
    auto input = [&](const Value* v) -> const Tensor* {
      auto it = env_.find(v);
      if (it != env_.end()) return &it->second;
      return v->constant ? &*v->constant : nullptr;
    };
    std::optional<schedule::Schedule> sched;
    if (saved_ && saved_->schedules.count(step)) sched = saved_->schedules.at(step);
    compile::BlockKernelOptions bo;
    bo.target = Target::for_isa(opts_.isa);
    std::optional<compile::BlockKernel> bk;
    try {
      bk = compile::compile_block(g_.opset, ns, input, outputs, sched, bo);
    } catch (const Error& e) {
      plan_->fusion_fallbacks.push_back(e.what());
      if (opts_.verbose) std::fprintf(stderr, "fusion: %s; its nodes run as separate kernels\n", e.what());
      for (const Node* n : ns) trace_node(*n, step_index());
      return;
    }
    progress(*ns[0], step);
    Step st;
    st.node = ns[0];
    st.nodes = ns;
    st.compiled = true;
    st.in_place = bk->in_place;
    codegen::JitOptions jo;
    jo.isa = opts_.isa;
    try {
      st.kernel = codegen::jit_compile(bk->kernel, jo);
    } catch (const Error& e) {
      TESSERA_FAIL(compile::describe_block(ns), ": JIT compilation failed: ", e.what());
    }
    for (const Node* n : ns)  // dumped once, when any of the block's nodes matches --kernel
      if (matches_filter(*n, opts_.dump_kernel)) {
        dump_kernel(*n, *st.kernel, opts_, bk->schedule);
        break;
      }
    std::vector<void*> args;
    for (const Value* v : bk->params) {
      int s = value_slot(v);
      use(s, step);
      st.inputs.push_back(s);
      st.args.push_back(s);
      args.push_back(const_cast<void*>(input(v)->raw()));
    }
    st.schedule = bk->schedule;
    if (bk->prepack) {
      std::vector<const Tensor*> ins;
      std::vector<int> prepack_inputs;
      for (const Value* v : bk->prepack_inputs) {
        prepack_inputs.push_back(static_cast<int>(ins.size()));
        ins.push_back(input(v));
      }
      pack_constants(*ns[0], *bk->prepack, prepack_inputs, ins, jo, step, st, args);
    }
    std::vector<Tensor> outs;
    for (size_t k = 0; k < bk->outputs.size(); ++k) {
      const TensorType& t = bk->output_types[k];
      outs.emplace_back(t.dtype, t.dims);
      args.push_back(outs.back().raw());
      int s = output_slot(bk->outputs[k], t.dtype, t.dims, step);
      st.outputs.push_back(s);
      st.args.push_back(s);
    }
    std::vector<Tensor> scratch;
    bind_scratch(bk->scratch, step, st, args, scratch);
    check_binding(compile::describe_block(ns), bk->kernel, st, args);
    st.kernel->run(args);
    for (const Value* v : bk->values_used) value_deps_.push_back(v);
    ++plan_->compiled_steps;
    ++plan_->fused_steps;
    plan_->internal_bytes += bk->internal_bytes;
    for (size_t k = 0; k < bk->outputs.size(); ++k) env_[bk->outputs[k]] = std::move(outs[k]);
    for (const Node* n : ns)
      for (const Value* v : n->inputs)
        if (v && env_.count(v) && --remaining_[v] == 0 && release_ && !input_index_.count(v)) env_.erase(v);
    plan_->steps.push_back(std::move(st));
  }

  // Scratch buffers (whole intermediates inside a kernel) live in the arena
  // for this step only; `keep` holds the tensors the traced run writes.
  void bind_scratch(const std::vector<loop::Buffer>& scratch, int64_t step, Step& st, std::vector<void*>& args,
                    std::vector<Tensor>& keep) {
    for (const loop::Buffer& b : scratch) {
      keep.emplace_back(b.dtype(), Dims{numel_of(b.dims())});
      args.push_back(keep.back().raw());
      st.args.push_back(output_slot(nullptr, b.dtype(), Dims{numel_of(b.dims())}, step));
    }
  }

  // Kernels do not check their buffers: a binding mismatch must not reach them.
  void check_binding(const std::string& what, const loop::Kernel& k, const Step& st, const std::vector<void*>& args) {
    std::vector<loop::Buffer> params = k.params();
    TESSERA_CHECK(args.size() == params.size() && st.args.size() == params.size(), what, ": kernel has ",
                  params.size(), " parameters but the step binds ", args.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Slot& s = plan_->slots[static_cast<size_t>(st.args[i])];
      bool ok = params[i].dtype() == s.dtype &&
                (params[i].dims().empty() ? true : numel_of(params[i].dims()) == numel_of(s.dims));
      TESSERA_CHECK(ok, what, ": kernel parameter ", params[i].name(), " is ", dtype_name(params[i].dtype()), "[",
                    dims_to_string(params[i].dims()), "] but is bound to ", dtype_name(s.dtype), "[",
                    dims_to_string(s.dims), "]");
    }
  }

  // Follows the values the plan depends on back to graph inputs.
  void collect_value_inputs() {
    std::unordered_set<const Value*> seen;
    std::set<int> found;
    std::vector<const Value*> stack = value_deps_;
    while (!stack.empty()) {
      const Value* v = stack.back();
      stack.pop_back();
      if (!v || !seen.insert(v).second) continue;
      auto in = input_index_.find(v);
      if (in != input_index_.end()) {
        found.insert(in->second);
        continue;
      }
      if (v->constant || !v->producer) continue;
      const Node& p = *v->producer;
      if (p.domain.empty() && (p.op_type == "Shape" || p.op_type == "Size")) continue;
      for (const Value* u : p.inputs) stack.push_back(u);
      if (has_subgraph(p))
        for (const std::string& name : captured_names(p)) stack.push_back(g_.find_value(name));
    }
    for (int i : found) {
      plan_->value_inputs.push_back(i);
      plan_->values.push_back(inputs_[static_cast<size_t>(i)].clone());
    }
  }

  // Places the arena slots; elementwise steps may overwrite a dying input.
  void plan_memory_slots() {
    std::vector<BufferRequest> reqs;
    std::vector<int> req_of(plan_->slots.size(), -1);
    for (size_t i = 0; i < plan_->slots.size(); ++i) {
      const Slot& s = plan_->slots[i];
      if (s.kind != SlotKind::Arena) continue;
      req_of[i] = static_cast<int>(reqs.size());
      reqs.push_back({s.bytes, s.first_step, s.last_step, 64, -1});
    }
    for (size_t si = 0; si < plan_->steps.size(); ++si) {
      const Step& st = plan_->steps[si];
      int64_t step = static_cast<int64_t>(si);
      int present = 0;
      for (int o : st.outputs) present += o >= 0;
      // A reference step's output is copied into its slot after the kernel ran,
      // so it may overwrite any dying input; a compiled step only an input its
      // kernel reads element for element (Step::in_place).
      if (present != 1) continue;
      int out = -1;
      for (int o : st.outputs)
        if (o >= 0) out = o;
      if (req_of[static_cast<size_t>(out)] < 0) continue;
      const Slot& os = plan_->slots[static_cast<size_t>(out)];
      for (size_t k = 0; k < st.inputs.size(); ++k) {
        int in = st.inputs[k];
        if (in < 0 || req_of[static_cast<size_t>(in)] < 0) continue;
        if (st.compiled && !(k < st.in_place.size() && st.in_place[k])) continue;
        const Slot& is = plan_->slots[static_cast<size_t>(in)];
        if (is.last_step != step || is.first_step >= step) continue;
        bool fits = st.compiled ? (is.bytes == os.bytes && dtype_size(is.dtype) == dtype_size(os.dtype))
                                : is.bytes >= os.bytes;
        if (!fits) continue;
        reqs[static_cast<size_t>(req_of[static_cast<size_t>(out)])].inplace_of = req_of[static_cast<size_t>(in)];
        break;
      }
    }
    plan_->memory = plan_memory(reqs);
    for (size_t i = 0; i < plan_->slots.size(); ++i)
      if (req_of[i] >= 0) plan_->slots[i].offset = plan_->memory.offsets[static_cast<size_t>(req_of[i])];
  }

  const Graph& g_;
  const std::vector<Tensor>& inputs_;
  const ExecutorOptions& opts_;
  const SavedSteps* saved_;
  const std::vector<std::vector<int>>* blocks_;
  std::unique_ptr<Plan> plan_;
  std::unordered_map<const Value*, int> slot_of_;
  std::unordered_map<const Value*, int> input_index_;
  std::unordered_set<const Value*> graph_outputs_;
  std::unordered_map<const Value*, Tensor> env_;
  std::unordered_map<const Value*, int> remaining_;
  std::vector<const Value*> value_deps_;
  bool release_ = true;
  Clock::time_point start_, last_progress_;
};

}  // namespace

int vector_bytes(codegen::Isa isa) {
  if (isa == codegen::Isa::Host) isa = codegen::host_isa();
  return isa == codegen::Isa::AVX512 ? 64 : isa == codegen::Isa::AVX2 ? 32 : 16;
}

codegen::Isa parse_isa(const std::string& name) {
  if (name.empty() || name == "host") return codegen::Isa::Host;
  if (name == "avx2") return codegen::Isa::AVX2;
  if (name == "avx512") return codegen::Isa::AVX512;
  if (name == "generic" || name == "x86-64") return codegen::Isa::Generic;
  TESSERA_FAIL("unknown ISA '", name, "' (available: host, avx2, avx512, generic)");
}

std::unique_ptr<Plan> trace_plan(const Graph& g, const std::vector<Tensor>& inputs, const ExecutorOptions& opts,
                                 const SavedSteps* saved, const std::vector<std::vector<int>>* blocks) {
  return Tracer(g, inputs, opts, saved, blocks).trace();
}

}  // namespace tessera::runtime
