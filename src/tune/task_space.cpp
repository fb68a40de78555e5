// A task's space of schedules (see task_space.h).
#include "tune/task_space.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "compile/node_kernel.h"
#include "support/error.h"

namespace tessera::tune {

std::string stage_position(size_t index) { return "#" + std::to_string(index); }

int stage_index(const std::string& name) {
  if (name.size() < 2 || name[0] != '#') return -1;
  int v = 0;
  for (size_t i = 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > 1'000'000) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

TaskSpace::TaskSpace(const compile::Task& task, const Target& machine)
    : task_(&task), target_(compile::program_target(task.params, task.constant, machine)),
      stages_(schedule::space_of(task.outs, target_)) {}

int TaskSpace::free_knobs() const {
  int n = 0;
  for (const auto& st : stages_)
    for (const auto& k : st.knobs) n += k.values.size() > 1;
  return n;
}

double TaskSpace::log10_size() const {
  double s = 0;
  for (const auto& st : stages_)
    for (const auto& k : st.knobs) s += std::log10(static_cast<double>(std::max<size_t>(1, k.values.size())));
  return s;
}

schedule::SchedulePoint TaskSpace::named(const schedule::SchedulePoint& point) const {
  schedule::SchedulePoint r;
  for (const auto& [stage, values] : point.stages) {
    int i = stage_index(stage);
    TESSERA_CHECK(i >= 0 && static_cast<size_t>(i) < stages_.size(), "schedule point: no stage ", stage, " in ",
                  task_->describe(), " (it has ", stages_.size(), ")");
    r.stages[stages_[static_cast<size_t>(i)].stage] = values;
  }
  return r;
}

std::optional<schedule::Schedule> TaskSpace::schedule_at(const schedule::SchedulePoint& point) const {
  for (const auto& [stage, values] : point.stages) {
    int i = stage_index(stage);
    if (i < 0 || static_cast<size_t>(i) >= stages_.size()) return std::nullopt;
  }
  return schedule::schedule_at(task_->outs, target_, named(point));
}

namespace {

size_t pick(size_t n, std::mt19937_64& rng) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

}  // namespace

schedule::SchedulePoint TaskSpace::random_point(std::mt19937_64& rng) const {
  schedule::SchedulePoint p;
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const schedule::Knob& k : stages_[s].knobs)
      if (k.values.size() > 1) p.stages[stage_position(s)][k.name] = k.values[pick(k.values.size(), rng)];
  return p;
}

schedule::SchedulePoint TaskSpace::mutate(const schedule::SchedulePoint& p, std::mt19937_64& rng) const {
  std::vector<std::pair<size_t, const schedule::Knob*>> free;
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const schedule::Knob& k : stages_[s].knobs)
      if (k.values.size() > 1) free.emplace_back(s, &k);
  schedule::SchedulePoint r = p;
  if (free.empty()) return r;
  auto [s, k] = free[pick(free.size(), rng)];
  schedule::KnobValues& values = r.stages[stage_position(s)];
  auto now = values.find(k->name);
  const int64_t current = now != values.end() ? now->second : k->default_value;
  std::vector<int64_t> others;
  for (int64_t v : k->values)
    if (v != current) others.push_back(v);
  values[k->name] = others.empty() ? current : others[pick(others.size(), rng)];
  return r;
}

std::vector<schedule::SchedulePoint> TaskSpace::neighbours() const {
  std::vector<schedule::SchedulePoint> out;
  auto at = [&](size_t s, const schedule::Knob& k, int64_t v) {
    schedule::SchedulePoint p;
    p.stages[stage_position(s)][k.name] = v;
    out.push_back(std::move(p));
  };
  for (size_t s = 0; s < stages_.size(); ++s)
    for (const schedule::Knob& k : stages_[s].knobs) {
      if (k.values.size() < 2) continue;
      // By value (a row knob lists axes in its own order); the default need not be a candidate.
      std::vector<int64_t> v = k.values;
      std::sort(v.begin(), v.end());
      auto below = std::lower_bound(v.begin(), v.end(), k.default_value);
      auto above = std::upper_bound(v.begin(), v.end(), k.default_value);
      if (below != v.begin()) at(s, k, *std::prev(below));
      if (above != v.end()) at(s, k, *above);
    }
  return out;
}

schedule::SchedulePoint TaskSpace::crossover(const schedule::SchedulePoint& a, const schedule::SchedulePoint& b,
                                             std::mt19937_64& rng) const {
  schedule::SchedulePoint r;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const schedule::SchedulePoint& from = pick(2, rng) ? a : b;
    auto it = from.stages.find(stage_position(s));
    if (it != from.stages.end()) r.stages[it->first] = it->second;
  }
  return r;
}

}  // namespace tessera::tune
