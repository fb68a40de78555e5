// Measuring schedules of one task in this process (see measure.h).
#include "tune/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "driver/driver.h"
#include "support/dtype_dispatch.h"
#include "support/error.h"

namespace tessera::tune {


// One kernel's arguments: the task's params (shared by the candidate and the
// reference), then its own packed constants, outputs and scratch.
struct TaskBench::Prepared {
  std::vector<Tensor> storage;  // the buffers this measurement made
  std::vector<void*> params;    // per task param
  std::vector<Tensor> packed;
  std::vector<void*> written;   // outputs, then scratch
  size_t slots = 0;             // buffers placed so far

  // A buffer of `bytes` at its own offset within a 4 KiB page, as buffers
  // of the runtime's arena are: buffers all starting on a page boundary make
  // a kernel's loads alias its stores in the store buffer (4K aliasing),
  // which slowed some kernels 5-8x when measured apart.
  void* place(int64_t bytes) {
    storage.emplace_back(DType::U8, Dims{bytes + 4096});
    const size_t offset = (slots++ * 17 * 64) % 4096;
    return static_cast<uint8_t*>(storage.back().raw()) + offset;
  }
  std::vector<void*> args() const {
    std::vector<void*> a = params;
    for (const Tensor& t : packed) a.push_back(const_cast<void*>(t.raw()));
    a.insert(a.end(), written.begin(), written.end());
    return a;
  }
};

TaskBench::TaskBench(const compile::Task& task, const MeasureOptions& options, InputValues values, Timer timer)
    : task_(task), options_(options), values_(std::move(values)), timer_(std::move(timer)), rng_(options.seed) {
  Measurement m;
  reference_ = compile(std::nullopt, m);
  TESSERA_CHECK(reference_, m.message);
  TESSERA_CHECK(timer_, "TaskBench: no timer");
}

TaskBench::~TaskBench() = default;

std::shared_ptr<const runtime::TaskKernel> TaskBench::compile(const std::optional<schedule::Schedule>& s,
                                                              Measurement& m) const {
  runtime::SavedSchedules given;
  if (s) given.by_key[task_.key] = *s;
  runtime::KernelBuildOptions ko;
  ko.isa = options_.isa;
  ko.threads = 1;
  std::vector<const runtime::ScheduleProvider*> providers;
  if (s) providers.push_back(&given);
  runtime::KernelResult r = runtime::build_kernels({&task_}, providers, ko).at(0);
  if (!r.kernel) {
    m.error = r.lowering_failed ? MeasureError::Lowering : MeasureError::Compile;
    m.message = r.error;
  }
  return r.kernel;
}

void TaskBench::prepare(const runtime::TaskKernel& k, Prepared& p) {
  const size_t n = task_.params.size();
  TESSERA_CHECK(k.params.size() == n + k.packed.size() + task_.outputs.size() + k.scratch.size(),
                task_.describe(), ": the kernel's parameters do not follow the calling convention");
  if (p.params.empty()) {  // fresh inputs, shared with the reference kernel
    for (size_t i = 0; i < n; ++i) {
      const Value* v = task_.param_values[i];
      const loop::Buffer& b = k.params[i];
      const Tensor* given = v && v->constant ? &*v->constant : nullptr;
      if (!given && values_ && !is_float(b.dtype()) && v) given = values_(v);
      if (given) {
        TESSERA_CHECK(given->dtype() == b.dtype() && given->numel() == numel_of(b.dims()), task_.describe(),
                      ": input ", i, " does not match the kernel's parameter ", b.name());
        p.params.push_back(const_cast<void*>(given->raw()));
        continue;
      }
      Tensor t = random_tensor(b.dtype(), b.dims(), rng_);
      void* at = p.place(static_cast<int64_t>(t.nbytes()));
      std::memcpy(at, t.raw(), t.nbytes());
      p.params.push_back(at);
    }
  }
  p.packed.clear();
  p.written.clear();
  if (!k.packed.empty()) {
    std::vector<const Tensor*> constants(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      const Value* v = task_.param_values[i];
      if (v && v->constant) constants[i] = &*v->constant;
    }
    p.packed = runtime::pack_constants(k, constants);
  }
  for (size_t at = n + k.packed.size(); at < k.params.size(); ++at) {
    const loop::Buffer& b = k.params[at];
    const int64_t bytes = numel_of(b.dims()) * static_cast<int64_t>(dtype_size(b.dtype()));
    p.written.push_back(p.place(bytes));
    std::memset(p.written.back(), 0, static_cast<size_t>(bytes));
  }
}

Tensor TaskBench::output(const runtime::TaskKernel& k, const Prepared& p, size_t i) const {
  const loop::Buffer& b = k.params[task_.params.size() + k.packed.size() + i];
  Tensor t(b.dtype(), b.dims());
  std::memcpy(t.raw(), p.written[i], t.nbytes());
  return t;
}

void TaskBench::run(const runtime::TaskKernel& k, Prepared& p) const { k.kernel->run(p.args()); }

Measurement TaskBench::measure(const std::optional<schedule::Schedule>& schedule, bool corrupt_output) {
  Measurement m;
  std::shared_ptr<const runtime::TaskKernel> k = compile(schedule, m);
  if (!k) return m;
  try {
    Prepared ref, cand;
    prepare(*reference_, ref);
    cand.params = ref.params;  // the same inputs
    cand.slots = ref.slots;
    prepare(*k, cand);
    run(*reference_, ref);
    run(*k, cand);
    if (corrupt_output && !cand.written.empty()) {  // the first element's top byte: sign and exponent
      const size_t size = dtype_size(k->params[task_.params.size() + k->packed.size()].dtype());
      static_cast<uint8_t*>(cand.written[0])[size - 1] ^= 0x40;
    }
    for (size_t i = 0; i < task_.outputs.size(); ++i) {
      double d = relative_difference(output(*k, cand, i), output(*reference_, ref, i));
      if (d > options_.tolerance) {
        m.error = MeasureError::WrongOutput;
        m.message = task_.describe() + ": output " + std::to_string(i) + " differs from the default schedule's by " +
                    std::to_string(d) + " (relative)";
        return m;
      }
    }
    m.costs = timer_(schedule);
  } catch (const std::exception& e) {
    m.error = MeasureError::Run;
    m.message = task_.describe() + ": " + e.what();
    m.costs.clear();
  }
  return m;
}

double relative_difference(const Tensor& a, const Tensor& b) {
  const double inf = std::numeric_limits<double>::infinity();
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) return inf;
  if (!is_float(a.dtype())) return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0 ? 0.0 : inf;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get_double(i), y = b.get_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return inf;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return inf;
      continue;
    }
    diff = std::max(diff, std::fabs(x - y));
    scale = std::max(scale, std::fabs(y));
  }
  return diff == 0 ? 0.0 : diff / std::max(scale, 1e-30);
}

}  // namespace tessera::tune
