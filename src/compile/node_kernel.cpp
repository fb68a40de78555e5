// Lowering a task's program; one node compiled as a one-node task.
#include "compile/node_kernel.h"

#include <algorithm>
#include <unordered_set>

#include "compile/task.h"
#include "loop/visitor.h"
#include "schedule/default_schedule.h"
#include "schedule/lower.h"
#include "support/error.h"

namespace tessera::compile {

std::string sanitize_name(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "k_" + r;
  return r;
}

namespace {

// Temporaries this large, allocated outside every loop, become scratch
// outputs of the kernel (arena memory) instead of a calloc on every call.
constexpr int64_t kScratchBytes = 16 * 1024;

// Removes the top-level Allocate nodes of at least kScratchBytes, collecting their buffers.
loop::Stmt hoist_scratch(const loop::Stmt& s, std::vector<loop::Buffer>& scratch) {
  if (!s.defined()) return s;
  if (const auto* a = s.as<loop::AllocateNode>()) {
    const int64_t* n = loop::as_const_int(a->extent);
    if (n && *n * static_cast<int64_t>(dtype_size(a->buffer.dtype())) >= kScratchBytes &&
        !a->buffer.dims().empty() && numel_of(a->buffer.dims()) == *n) {
      scratch.push_back(a->buffer);
      return hoist_scratch(a->body, scratch);
    }
    return loop::allocate(a->buffer, a->extent, hoist_scratch(a->body, scratch));
  }
  if (const auto* b = s.as<loop::BlockNode>()) {
    std::vector<loop::Stmt> parts;
    for (const loop::Stmt& p : b->stmts) parts.push_back(hoist_scratch(p, scratch));
    return loop::block(parts);
  }
  return s;  // loops and everything inside them keep their temporaries
}

// Bytes of the temporaries a kernel allocates outside every loop (whole
// intermediates, not per-tile scratch).
int64_t root_allocation_bytes(const loop::Stmt& body) {
  struct Finder : loop::IRVisitor {
    int depth = 0;
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const loop::ForNode* op) override {
      ++depth;
      IRVisitor::visit(op);
      --depth;
    }
    void visit(const loop::AllocateNode* op) override {
      if (depth == 0)
        if (const int64_t* n = loop::as_const_int(op->extent))
          bytes += *n * static_cast<int64_t>(dtype_size(op->buffer.dtype()));
      IRVisitor::visit(op);
    }
  } f;
  f.visit(body);
  return f.bytes;
}

}  // namespace

std::vector<bool> in_place_params(const std::vector<te::Tensor>& params, const std::vector<te::Tensor>& outs) {
  std::vector<bool> r(params.size(), false);
  if (outs.size() != 1) return r;
  const te::Stage* out = &outs[0].stage();
  std::vector<te::StagePtr> stages = te::stages_of(outs);  // producers first
  for (size_t i = 0; i < params.size(); ++i) {
    std::unordered_set<const te::Stage*> dep{&params[i].stage()};
    bool ok = true;
    for (const te::StagePtr& s : stages) {
      std::vector<te::Tensor> ins = s->inputs();
      if (std::none_of(ins.begin(), ins.end(), [&](const te::Tensor& t) { return dep.count(&t.stage()) > 0; }))
        continue;
      ok = s->kind == te::StageKind::Compute && !te::has_reduce(s->body) && s->shapes[0] == out->shapes[0];
      for (const te::Tensor& t : ins)
        ok = ok && (!dep.count(&t.stage()) || te::reads_at_own_position(*s, t.stage()));
      if (!ok) break;
      dep.insert(s.get());
    }
    r[i] = ok && dep.count(out);
  }
  return r;
}

schedule::TargetInfo program_target(const std::vector<te::Tensor>& params, const std::vector<bool>& constant,
                                    const Target& machine) {
  schedule::TargetInfo target(machine);
  for (size_t i = 0; i < params.size(); ++i)
    if (constant[i]) target.constant_inputs.insert(params[i].name());
  return target;
}

LoweredProgram lower_program(const std::string& name, const std::vector<te::Tensor>& params,
                             const std::vector<bool>& constant, const std::vector<te::Tensor>& outs,
                             const std::optional<schedule::Schedule>& sched, const Target& machine) {
  const schedule::TargetInfo target = program_target(params, constant, machine);
  schedule::LowerOptions lopts;
  lopts.constant_inputs = constant;
  LoweredProgram lp;
  lp.schedule = sched ? *sched : schedule::default_schedule(outs, target);
  schedule::LoweredKernels lk = schedule::lower_with_prepack(name, params, outs, lp.schedule, lopts);
  lp.kernel = std::move(lk.main);
  lp.kernel.body = hoist_scratch(lp.kernel.body, lp.scratch);
  lp.in_place = in_place_params(params, outs);
  // A shifted split writes some outputs twice: the second write must not
  // read an input the first one overwrote.
  if (schedule::has_shifted_split(lp.schedule)) lp.in_place.assign(lp.in_place.size(), false);
  for (const loop::Buffer& b : lp.scratch) lp.kernel.outputs.push_back(b);
  lp.internal_bytes = root_allocation_bytes(lp.kernel.body);
  for (const loop::Buffer& b : lp.scratch)
    lp.internal_bytes += numel_of(b.dims()) * static_cast<int64_t>(dtype_size(b.dtype()));
  if (lk.prepack) {
    for (const loop::Buffer& b : lk.prepack->inputs)
      for (size_t i = 0; i < params.size(); ++i)
        if (lp.kernel.inputs[i].same_as(b)) lp.prepack_params.push_back(static_cast<int>(i));
    lp.prepack = std::move(lk.prepack);
  }
  return lp;
}

void materialize_outputs(std::vector<te::Tensor>& outs, const std::function<std::string(size_t)>& stage_name) {
  for (size_t i = 0; i < outs.size(); ++i) {
    bool repeat = false;
    for (size_t j = 0; j < i; ++j) repeat |= outs[j].same_as(outs[i]);
    if (outs[i].stage().kind != te::StageKind::Placeholder && !repeat) continue;
    te::Tensor src = outs[i];
    outs[i] = te::compute(src.shape(), [&](const te::Indices& idx) {
      return src(std::vector<loop::Expr>(idx.begin(), idx.end()));
    }, stage_name(i), "copy");
  }
}

NodeKernel compile_node(const Node& n, int64_t opset, const std::optional<schedule::Schedule>& sched,
                        const NodeKernelOptions& options) {
  Task task = node_task(n, opset, options.constant_inputs);
  auto input_index = [&](const Value* v) {
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == v) return static_cast<int>(i);
    TESSERA_FAIL(n.describe(), ": the kernel reads '", v->name, "', which is not an input");
  };
  NodeKernel nk;
  for (const Value* v : task.param_values) nk.param_inputs.push_back(input_index(v));
  nk.value_used.assign(n.inputs.size(), false);
  for (const Value* v : task.values_used)
    for (size_t i = 0; i < n.inputs.size(); ++i) nk.value_used[i] = nk.value_used[i] || n.inputs[i] == v;
  nk.expr_text = te::to_string(task.outs);
  try {
    LoweredProgram lp = lower_program(task.name, task.params, task.constant, task.outs, sched, options.target);
    nk.kernel = std::move(lp.kernel);
    nk.schedule = std::move(lp.schedule);
    for (int p : lp.prepack_params) nk.prepack_inputs.push_back(nk.param_inputs[static_cast<size_t>(p)]);
    nk.prepack = std::move(lp.prepack);
    nk.scratch = std::move(lp.scratch);
    nk.in_place.assign(n.inputs.size(), false);
    for (size_t k = 0; k < nk.param_inputs.size(); ++k)
      nk.in_place[static_cast<size_t>(nk.param_inputs[k])] = lp.in_place[k];
  } catch (const std::exception& e) {  // a refusal or a fault: either way named
    TESSERA_FAIL(n.describe(), ": lowering failed: ", e.what());
  }
  return nk;
}

}  // namespace tessera::compile
