// Timing candidate fusions: compile, JIT, run the fused block and its parts
// in turns, compare medians.
#include "runtime/fusion_profiler.h"

#include <chrono>
#include <deque>
#include <map>
#include <random>

#include "compile/task.h"
#include "runtime/latency_stats.h"
#include "runtime/task_kernel.h"
#include "support/dtype_dispatch.h"
#include "support/error.h"

namespace tessera::runtime {

Tensor profile_tensor(const TensorType& t, std::mt19937_64& rng) {
  Tensor x(t.dtype, t.dims);
  dispatch_dtype(x.dtype(), [&]<class T>() {
    T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = (rng() & 1) != 0;
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(1 + rng() % 3);
      else p[i] = to_storage<T>(0.5 + static_cast<double>(rng() >> 11) * 0x1.0p-53);  // [0.5, 1.5): in every domain
    }
  });
  return x;
}

namespace {

using Clock = std::chrono::steady_clock;

// A failure measuring a candidate that is not a refusal to make it one
// kernel (a JIT failure, an internal fault): reported, not taken as
// "unmeasured".
struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The nodes compiled as one kernel (the task and kernel the plan would
// make, bound by the same convention), with seeded inputs and its outputs.
class BlockRun {
 public:
  BlockRun(const Graph& g, const std::vector<int>& idx, const ExecutorOptions& opts) {
    fusion::Block b{idx, MappingType::OneToOne, -1};
    std::vector<const Node*> nodes;
    for (int i : idx) nodes.push_back(g.nodes()[static_cast<size_t>(i)].get());
    std::mt19937_64 rng(7);
    for (const Value* v : fusion::block_inputs(g, b))
      if (!v->constant) inputs_.emplace(v, profile_tensor(v->type, rng));
    auto input = [&](const Value* v) -> const Tensor* {
      if (v->constant) return &*v->constant;
      auto it = inputs_.find(v);
      return it == inputs_.end() ? nullptr : &it->second;
    };
    compile::TaskInputs ti;
    ti.type = [&](const Value* v) {
      const Tensor* t = input(v);
      TESSERA_CHECK(t, "fusion profiler: no tensor for block input '", v->name, "'");
      return TensorType{t->dtype(), t->dims(), true};
    };
    ti.value = input;
    compile::Task task = compile::build_task(g.opset, nodes, ti, fusion::block_outputs(g, b));
    KernelBuildOptions ko;
    ko.isa = opts.isa;
    ko.threads = 1;
    KernelResult r = build_kernels({&task}, {}, ko).at(0);
    // A block the lowering refuses is not measured (the planner keeps it
    // apart, as the plan would); any other failure would fail the plan too.
    if (!r.kernel && r.lowering_failed) TESSERA_FAIL(r.error);
    if (!r.kernel) throw Fault(r.error);
    kernel_ = r.kernel;
    std::vector<void*> params, packed, outputs, scratch;
    std::vector<const Tensor*> param_tensors;
    for (const Value* v : task.param_values) {
      param_tensors.push_back(input(v));
      params.push_back(const_cast<void*>(input(v)->raw()));
    }
    if (kernel_->prepack)
      for (Tensor& t : pack_constants(*kernel_, param_tensors)) packed.push_back(owned_.emplace_back(std::move(t)).raw());
    for (const TensorType& t : task.output_types) outputs.push_back(owned_.emplace_back(t.dtype, t.dims).raw());
    for (const loop::Buffer& o : kernel_->scratch) scratch.push_back(owned_.emplace_back(o.dtype(), o.dims()).raw());
    args_ = TaskKernel::arguments(params, packed, outputs, scratch);
  }

  // Seconds of one run.
  double run() {
    auto t0 = Clock::now();
    kernel_->kernel->run(args_);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  std::map<const Value*, Tensor> inputs_;
  std::deque<Tensor> owned_;  // packed constants, outputs, scratch (stable addresses)
  std::vector<void*> args_;
  std::shared_ptr<const TaskKernel> kernel_;
};

// The fused block and its parts run round by round (each once per round, so
// drift of the machine hits all alike) until at least 7 rounds and 50 ms or
// 31 rounds; medians per kernel.
fusion::ProfileEntry measure(const Graph& g, const std::vector<int>& fused, const std::vector<std::vector<int>>& parts,
                             const ExecutorOptions& opts) {
  std::vector<std::unique_ptr<BlockRun>> runs;
  runs.push_back(std::make_unique<BlockRun>(g, fused, opts));
  for (const auto& p : parts) runs.push_back(std::make_unique<BlockRun>(g, p, opts));
  for (auto& r : runs)
    for (int i = 0; i < 2; ++i) r->run();  // warm caches and the thread pool
  std::vector<std::vector<double>> times(runs.size());
  auto start = Clock::now();
  while (times[0].size() < 7 ||
         (times[0].size() < 31 && std::chrono::duration<double>(Clock::now() - start).count() < 0.05))
    for (size_t i = 0; i < runs.size(); ++i) times[i].push_back(runs[i]->run());
  fusion::ProfileEntry e;
  e.fused_seconds = percentile(times[0], 50);
  for (size_t i = 1; i < runs.size(); ++i) e.parts_seconds += percentile(times[i], 50);
  return e;
}

}  // namespace

fusion::ProfileFn make_fusion_profiler(const Graph& g, const ExecutorOptions& opts) {
  return [&g, opts](const std::vector<int>& fused,
                    const std::vector<std::vector<int>>& parts) -> std::optional<fusion::ProfileEntry> {
    try {
      return measure(g, fused, parts, opts);
    } catch (const Error&) {
      return std::nullopt;  // not compilable as one kernel: the planner keeps the parts apart
    } catch (const Fault& e) {
      TESSERA_FAIL("fusion profiler: ", e.what());
    } catch (const std::exception& e) {
      std::vector<const Node*> nodes;
      for (int i : fused) nodes.push_back(g.nodes()[static_cast<size_t>(i)].get());
      TESSERA_FAIL("fusion profiler: ", compile::describe_block(nodes), ": internal error: ", e.what());
    }
  };
}

fusion::Partition partition_model(const Graph& g, const ExecutorOptions& opts) {
  fusion::PartitionOptions po;
  po.fuse = opts.fusion;
  po.concat_in_place = opts.concat_in_place;
  codegen::Isa isa = opts.isa == codegen::Isa::Host ? codegen::host_isa() : opts.isa;
  po.target = std::string(codegen::isa_name(isa)) + " r" + std::to_string(fusion::kCodegenRevision);
  po.machine = Target::for_isa(isa);
  std::unique_ptr<fusion::ProfileDb> db;
  if (opts.fusion && opts.fusion_profile) {
    db = std::make_unique<fusion::ProfileDb>(opts.fusion_db.empty() ? fusion::ProfileDb::default_path() : opts.fusion_db);
    po.db = db.get();
    po.profile = make_fusion_profiler(g, opts);
  }
  return fusion::partition_graph(g, po);
}

}  // namespace tessera::runtime
