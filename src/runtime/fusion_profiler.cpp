// Timing candidate fusions: compile, JIT, run a few times, take the median.
#include "runtime/fusion_profiler.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "compile/block_kernel.h"
#include "ir/dtype_dispatch.h"
#include "support/error.h"

namespace tessera::runtime {

namespace {

using Clock = std::chrono::steady_clock;

Tensor random_tensor(const TensorType& t, std::mt19937_64& rng) {
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

// Median seconds of one run of the nodes as one kernel.
double time_block(const Graph& g, const std::vector<int>& idx, const ExecutorOptions& opts) {
  fusion::Block b{idx, MappingType::OneToOne, -1};
  std::vector<const Node*> nodes;
  for (int i : idx) nodes.push_back(g.nodes()[static_cast<size_t>(i)].get());
  std::mt19937_64 rng(7);
  std::map<const Value*, Tensor> inputs;
  for (const Value* v : fusion::block_inputs(g, b))
    if (!v->constant) inputs.emplace(v, random_tensor(v->type, rng));
  auto input = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    auto it = inputs.find(v);
    return it == inputs.end() ? nullptr : &it->second;
  };
  compile::BlockKernelOptions bo;
  bo.vector_bytes = vector_bytes(opts.isa);
  compile::BlockKernel bk = compile::compile_block(g.opset, nodes, input, fusion::block_outputs(g, b), std::nullopt, bo);
  codegen::JitOptions jo;
  jo.isa = opts.isa;
  std::vector<void*> args;
  for (const Value* v : bk.params) args.push_back(const_cast<void*>(input(v)->raw()));
  std::vector<Tensor> packed;
  if (bk.prepack) {
    std::vector<void*> pargs;
    for (const Value* v : bk.prepack_inputs) pargs.push_back(const_cast<void*>(input(v)->raw()));
    for (const loop::Buffer& o : bk.prepack->outputs) {
      packed.emplace_back(o.dtype(), o.dims());
      pargs.push_back(packed.back().raw());
    }
    codegen::jit_compile(*bk.prepack, jo)->run(pargs);
    for (Tensor& t : packed) args.push_back(t.raw());
  }
  std::vector<Tensor> outs;
  for (const TensorType& t : bk.output_types) {
    outs.emplace_back(t.dtype, t.dims);
    args.push_back(outs.back().raw());
  }
  for (const loop::Buffer& b : bk.scratch) {
    outs.emplace_back(b.dtype(), b.dims());
    args.push_back(outs.back().raw());
  }
  std::shared_ptr<codegen::JitKernel> k = codegen::jit_compile(bk.kernel, jo);
  for (int i = 0; i < 2; ++i) k->run(args);  // warm caches and the thread pool
  std::vector<double> times;
  auto start = Clock::now();
  while (times.size() < 7 || (times.size() < 31 && std::chrono::duration<double>(Clock::now() - start).count() < 0.05)) {
    auto t0 = Clock::now();
    k->run(args);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

}  // namespace

fusion::ProfileFn make_fusion_profiler(const Graph& g, const ExecutorOptions& opts) {
  return [&g, opts](const std::vector<int>& fused,
                    const std::vector<std::vector<int>>& parts) -> std::optional<fusion::ProfileEntry> {
    try {
      fusion::ProfileEntry e;
      e.fused_seconds = time_block(g, fused, opts);
      for (const auto& p : parts) e.parts_seconds += time_block(g, p, opts);
      return e;
    } catch (const Error&) {
      return std::nullopt;  // not compilable as one kernel: the planner keeps the parts apart
    }
  };
}

fusion::FusionPlan plan_model_fusion(const Graph& g, const ExecutorOptions& opts) {
  fusion::PlanOptions po;
  po.fuse = opts.fusion;
  codegen::Isa isa = opts.isa == codegen::Isa::Host ? codegen::host_isa() : opts.isa;
  po.target = std::string(codegen::isa_name(isa));
  po.max_live = vector_bytes(isa) >= 64 ? 28 : 12;  // vector registers, a few kept for operands
  std::unique_ptr<fusion::ProfileDb> db;
  if (opts.fusion && opts.fusion_profile) {
    db = std::make_unique<fusion::ProfileDb>(opts.fusion_db.empty() ? fusion::ProfileDb::default_path() : opts.fusion_db);
    po.db = db.get();
    po.profile = make_fusion_profiler(g, opts);
  }
  return fusion::plan_fusion(g, po);
}

}  // namespace tessera::runtime
