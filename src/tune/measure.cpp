// Measuring schedules of one task in this process (see measure.h).
#include "tune/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>

#include "driver/driver.h"
#include "support/error.h"

namespace tessera::tune {

// One kernel's arguments: the task's params (shared by the candidate and the
// reference), then its own packed constants, outputs and scratch.
struct TaskBench::Prepared {
  std::vector<Tensor> owned;  // params made for this measurement
  std::vector<void*> params;  // per task param
  std::vector<Tensor> packed, written;  // written: outputs, then scratch
  std::vector<void*> args() const {
    std::vector<void*> a = params;
    for (const auto* part : {&packed, &written})
      for (const Tensor& t : *part) a.push_back(const_cast<void*>(t.raw()));
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
      p.owned.push_back(random_tensor(b.dtype(), b.dims(), rng_));
      p.params.push_back(p.owned.back().raw());
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
  for (size_t at = n + k.packed.size(); at < k.params.size(); ++at)
    p.written.emplace_back(k.params[at].dtype(), k.params[at].dims());
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
    prepare(*k, cand);
    run(*reference_, ref);
    run(*k, cand);
    if (corrupt_output && !cand.written.empty()) {  // the first element's top byte: sign and exponent
      Tensor& out = cand.written[0];
      static_cast<uint8_t*>(out.raw())[dtype_size(out.dtype()) - 1] ^= 0x40;
    }
    for (size_t i = 0; i < task_.outputs.size(); ++i) {
      double d = relative_difference(cand.written[i], ref.written[i]);
      if (d > options_.tolerance) {
        m.error = MeasureError::WrongOutput;
        m.message = task_.describe() + ": output " + std::to_string(i) + " differs from the default schedule's by " +
                    std::to_string(d) + " (relative)";
        return m;
      }
    }
    TaskTiming t = timer_(schedule);
    m.costs = std::move(t.costs);
    m.baseline = std::move(t.baseline);
  } catch (const std::exception& e) {
    m.error = MeasureError::Run;
    m.message = task_.describe() + ": " + e.what();
    m.costs.clear();
    m.baseline.clear();
  }
  return m;
}

Record measured_record(const Measurement& m, std::string task_key, std::string task, std::string target,
                       std::string schedule, double seconds_spent) {
  Record r;
  r.task_key = std::move(task_key);
  r.task = std::move(task);
  r.target = std::move(target);
  r.schedule = std::move(schedule);
  r.costs = m.costs;
  r.baseline = m.baseline;
  r.error = m.error;
  r.seconds_spent = seconds_spent;
  r.timestamp = static_cast<int64_t>(std::time(nullptr));
  return r;
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

double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, relative_difference(a[i], b[i]));
  return d;
}

}  // namespace tessera::tune
