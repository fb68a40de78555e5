// Seed points (see seeds.h).
#include "tune/seeds.h"

#include <algorithm>

#include "support/error.h"

namespace tessera::tune {

namespace {

constexpr int64_t L = kLargestValid;

// Why each seed: the register tile of a contraction is kb output blocks ×
// mr rows (pixels of a blocked convolution) × nr vectors, and th × td rows
// of H and D for blocked convolutions whose rule offers them. Its best shape
// moves several knobs at once: fewer blocks leave room for more rows, and
// the largest tile that fits the registers is a few values away from the
// default of a knob with a wide range (mr 1..28).
const std::vector<Seed> kSeeds = {
    // Blocked convolutions: kb blocks with as many pixels as fit.
    {"contraction", {{"kb", 1}, {"mr", L}}},
    {"contraction", {{"kb", 2}, {"mr", L}}},
    {"contraction", {{"kb", 4}, {"mr", L}}},
    // Spatial tiles over H and D (small maps re-read each weight group once
    // per row of tiles), at one block so the tile fits.
    {"contraction", {{"th", 2}}},
    {"contraction", {{"kb", 1}, {"th", L}}},
    {"contraction", {{"td", 2}}},
    {"contraction", {{"kb", 1}, {"td", L}}},
    // Products and unblocked convolutions: nr vectors of columns with as many rows as fit.
    {"contraction", {{"nr", 1}, {"mr", L}}},
    {"contraction", {{"nr", 2}, {"mr", L}}},
    {"contraction", {{"nr", 4}, {"mr", L}}},
    // Elementwise and reductions: the most vectors a step.
    {"generic", {{"vec", L}}},
    {"row_reduction", {{"rfactor", 0}, {"vec", L}}},
};

const schedule::Knob* find_knob(const schedule::StageSpace& st, std::string_view name) {
  for (const schedule::Knob& k : st.knobs)
    if (k.name == name) return &k;
  return nullptr;
}

// The point of `seed` at stage `s` of `space`; nullopt when the stage lacks
// one of its knobs, a value is not a candidate, or no point is valid.
std::optional<schedule::SchedulePoint> seed_at(const TaskSpace& space, size_t s, const Seed& seed) {
  const schedule::StageSpace& st = space.stages()[s];
  schedule::SchedulePoint p;
  schedule::KnobValues& values = p.stages[stage_position(s)];
  const schedule::Knob* largest = nullptr;
  for (const SeedKnob& sk : seed.knobs) {
    const schedule::Knob* k = find_knob(st, sk.knob);
    if (!k) return std::nullopt;
    if (sk.value == L) {
      TESSERA_CHECK(!largest, "seed of rule ", seed.rule, ": two knobs at their largest valid value");
      largest = k;
      continue;
    }
    if (std::find(k->values.begin(), k->values.end(), sk.value) == k->values.end()) return std::nullopt;
    values[k->name] = sk.value;
  }
  if (!largest) {
    if (space.schedule_at(p)) return p;
    return std::nullopt;
  }
  for (auto v = largest->values.rbegin(); v != largest->values.rend(); ++v) {
    values[largest->name] = *v;
    if (space.schedule_at(p)) return p;
  }
  return std::nullopt;
}

}  // namespace

const std::vector<Seed>& seed_table() { return kSeeds; }

std::vector<schedule::SchedulePoint> seed_points(const TaskSpace& space, const std::vector<Seed>& table) {
  std::vector<schedule::SchedulePoint> out;
  for (size_t s = 0; s < space.stages().size(); ++s)
    for (const Seed& seed : table)
      if (seed.rule == space.stages()[s].rule)
        if (std::optional<schedule::SchedulePoint> p = seed_at(space, s, seed)) out.push_back(std::move(*p));
  return out;
}

}  // namespace tessera::tune
