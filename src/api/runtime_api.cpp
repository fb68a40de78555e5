// The public runtime API over the executor.
#include "tessera/runtime.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "driver/driver.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "support/artifact.h"
#include "runtime/executor.h"
#include "tune/graph_choice.h"
#include "tune/record_schedules.h"
#include "support/error.h"
#include "support/name_table.h"

namespace tessera {

struct CompiledModel::Impl {
  std::unique_ptr<runtime::Executor> model;
};

namespace {

// The pass switches of the options, as the one table every stage reads.
PassOptions pass_options(const CompileOptions& o) {
  PassOptions p;
  for (const std::string& name : o.disabled_passes) p.disable(name);
  if (!o.rewrite) p.disable_flag("rewrite");
  if (!o.blocked_layout) p.disable_flag("blocked-layout");
  if (!o.winograd) p.disable_flag("winograd");
  p.dump_after.insert(o.dump_after.begin(), o.dump_after.end());
  check_pass_names(p);
  p.verify_each = o.verify_each;
  p.verbose = o.verbose;
  TESSERA_CHECK(o.pet_budget_seconds >= 0, "PET's budget must be at least 0 seconds, got ", o.pet_budget_seconds);
  check_one_of(o.pet_mutants, {"all", "equivalent", "partial"}, "PET mutant kind");
  p.pet.budget_seconds = o.pet_budget_seconds;
  p.pet.equivalent = o.pet_mutants != "partial";
  p.pet.partial = o.pet_mutants != "equivalent";
  p.dump_pet = o.dump_pet;
  return p;
}

runtime::ExecutorOptions executor_options(const CompileOptions& o) {
  runtime::ExecutorOptions e;
  e.isa = isa_from_name(o.isa);
  e.threads = o.threads;
  e.dump_ir = o.dump_ir;
  e.dump_llvm = o.dump_llvm;
  e.dump_asm = o.dump_asm;
  e.dump_kernel = o.dump_kernel;
  e.verbose = o.verbose;
  e.fusion = o.fusion;
  e.concat_in_place = o.concat_in_place;
  e.pet = o.pet;
  e.passes = pass_options(o);
  if (!o.records.empty()) {
    // The records' graph choices (tune/graph_choice.h) shape the graph; their schedules, its kernels.
    auto records = std::make_shared<tune::RecordSchedules>(o.records, Target::for_isa(e.isa));
    e.passes.winograd_tiles = tune::recorded_winograd_choices(records->records(), Target::for_isa(e.isa).to_string());
    e.schedule_providers.push_back(records);
  }
  return e;
}

TensorInfo info_of(const Graph& g, const Value* v) {
  TensorInfo t{v->name, v->type.dtype, v->type.dims, v->type.rank_known, std::vector<std::string>(v->type.dims.size())};
  auto it = g.dim_names.find(v->name);
  if (it != g.dim_names.end() && it->second.size() == t.dims.size())
    for (size_t d = 0; d < t.dims.size(); ++d)
      if (t.dims[d] < 0) t.dim_names[d] = it->second[d];
  return t;
}

}  // namespace

CompiledModel::CompiledModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModel::CompiledModel(CompiledModel&&) noexcept = default;
CompiledModel& CompiledModel::operator=(CompiledModel&&) noexcept = default;
CompiledModel::~CompiledModel() = default;

CompiledModel CompiledModel::compile(const std::string& model, const CompileOptions& options) {
  LoadOptions lo;
  lo.input_shapes = options.input_shapes;
  lo.passes = pass_options(options);
  runtime::ExecutorOptions eo = executor_options(options);
  auto impl = std::make_unique<Impl>();
  impl->model = std::make_unique<runtime::Executor>(load_model(model, lo), std::move(eo));
  return CompiledModel(std::move(impl));
}

CompiledModel CompiledModel::load(const std::string& path, const CompileOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->model = runtime::Executor::load(path, executor_options(options), options.isa.empty());
  return CompiledModel(std::move(impl));
}

bool CompiledModel::is_artifact(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::equal(magic, magic + 4, kArtifactMagic);
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) { return impl_->model->run(inputs); }

std::vector<StepProfile> CompiledModel::profile(const std::vector<Tensor>& inputs, int runs) {
  TESSERA_CHECK(runs >= 1, "profile: runs must be at least 1");
  std::vector<std::vector<double>> samples;  // per run, per step
  std::shared_ptr<const runtime::Plan> used;  // the same plan every run (its key is the inputs')
  for (int r = 0; r < runs; ++r) {
    std::vector<double> t;
    impl_->model->run_timed(inputs, t, &used);
    samples.push_back(std::move(t));
  }
  const runtime::Plan& plan = *used;
  std::vector<StepProfile> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const runtime::Step& st = plan.steps[i];
    StepProfile p;
    p.node = st.node->name.empty() ? "#" + std::to_string(i) : st.node->name;
    p.op.clear();
    for (const Node* n : st.nodes) p.op += (p.op.empty() ? "" : "+") + n->op_type;
    if (st.view) p.op += " (in place)";
    p.compiled = st.compiled || st.view;  // a view step runs no reference kernel
    std::vector<double> v;
    for (const auto& run : samples) v.push_back(i < run.size() ? run[i] : 0.0);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    p.seconds = v[v.size() / 2];
    for (const Node* n : st.nodes) p.flops += node_flops(*n);
    out.push_back(std::move(p));
  }
  return out;
}

void CompiledModel::prepare(const std::vector<Tensor>& inputs) { impl_->model->prepare(inputs); }

std::vector<Tensor> CompiledModel::run_reference(const std::vector<Tensor>& inputs) const {
  return interpret(impl_->model->graph(), inputs);
}

void CompiledModel::save(const std::string& path) const { impl_->model->save(path); }

std::string CompiledModel::report() const { return impl_->model->report(); }

std::string CompiledModel::fusion_report() {
  return fusion::print_fusion(impl_->model->graph(), impl_->model->partition());
}

std::string CompiledModel::name() const { return impl_->model->graph().name; }

size_t CompiledModel::node_count() const { return impl_->model->graph().nodes().size(); }

std::vector<TensorInfo> CompiledModel::inputs() const {
  std::vector<TensorInfo> r;
  const Graph& g = impl_->model->graph();
  for (const Value* v : g.inputs()) r.push_back(info_of(g, v));
  return r;
}

std::vector<TensorInfo> CompiledModel::outputs() const {
  std::vector<TensorInfo> r;
  const Graph& g = impl_->model->graph();
  for (const Value* v : g.outputs()) r.push_back(info_of(g, v));
  return r;
}

std::vector<Tensor> CompiledModel::random_inputs(uint64_t seed) const {
  return tessera::random_inputs(impl_->model->graph(), seed);
}

std::vector<Tensor> CompiledModel::read_inputs(const std::vector<std::string>& paths) const {
  return tessera::read_inputs(impl_->model->graph(), paths);
}

double CompiledModel::last_compile_seconds() const { return impl_->model->last_compile_seconds(); }

std::string CompiledModel::load_split() const {
  const runtime::LoadTimes& t = impl_->model->load_times();
  if (t.total() == 0) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf, "read %.1f ms, graph %.1f ms, plans %.1f ms, %s %.1f ms (%d kernels linked, %d compiled)",
                t.read * 1e3, t.graph * 1e3, t.plans * 1e3, t.compiled ? "kernels" : "link", t.kernels * 1e3,
                t.linked, t.compiled);
  return buf;
}

int64_t CompiledModel::peak_activation_bytes() const {
  std::shared_ptr<const runtime::Plan> p = impl_->model->last_plan();
  return p ? p->arena_layout.arena_bytes : -1;
}

int CompiledModel::compiled_steps() const {
  std::shared_ptr<const runtime::Plan> p = impl_->model->last_plan();
  return p ? p->compiled_steps : 0;
}

int CompiledModel::reference_steps() const {
  std::shared_ptr<const runtime::Plan> p = impl_->model->last_plan();
  return p ? p->reference_steps : 0;
}

}  // namespace tessera
