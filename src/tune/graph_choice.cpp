// Graph-level tuning choices (see graph_choice.h).
#include "tune/graph_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <set>
#include <string_view>

#include "driver/driver.h"
#include "opt/winograd.h"
#include "runtime/executor.h"
#include "runtime/graph_timer.h"
#include "support/error.h"
#include "support/stopwatch.h"
#include "tune/measure.h"
#include "tune/model_guard.h"

namespace tessera::tune {

namespace {

constexpr std::string_view kChoicePrefix = "winograd-choice:";
constexpr std::string_view kTilePrefix = "tile=";
// The passes left out when listing the Winograd pass's sites: the pass
// itself and those after it in the target pipeline (opt/pipeline.cpp), so
// the graph listed is the one the pass sees.
const char* const kListingDisabled[] = {"winograd", "fold-channel-scale"};

// A geometry of the model: its convolutions and the alternatives to the
// estimate that change the graph.
struct Group {
  std::string geometry;
  std::vector<WinogradSite> sites;  // node pointers not kept (the listing's graph is gone)
  double macs = 0;
  std::vector<int> alternatives;
};

std::vector<Group> groups_of(const ModelConfig& config) {
  ModelConfig listing = config;
  listing.winograd_tiles.clear();
  if (!listing.load_options().passes.enabled("winograd")) return {};
  for (const char* p : kListingDisabled) listing.disabled_passes.push_back(p);
  runtime::Executor ex(load_model(listing.model, listing.load_options()), listing.executor_options());
  std::vector<Group> groups;
  for (WinogradSite s : winograd_sites(ex.graph())) {
    s.node = nullptr;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.geometry == s.geometry; });
    if (it == groups.end()) {
      groups.push_back({s.geometry, {}, 0, {}});
      it = groups.end() - 1;
    }
    it->macs += s.macs;
    it->sites.push_back(std::move(s));
  }
  for (Group& g : groups)
    for (int tile : {2, 4, 0}) {  // the Winograd forms first, then the direct one
      const std::map<std::string, int> choice{{g.geometry, tile}};
      if (std::any_of(g.sites.begin(), g.sites.end(),
                      [&](const WinogradSite& s) { return winograd_tile_for(s, choice) != s.estimated_tile; }))
        g.alternatives.push_back(tile);
    }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.macs > b.macs; });
  return groups;
}

std::string estimated_text(const Group& g) {
  std::map<int, int> count;
  for (const WinogradSite& s : g.sites) ++count[s.estimated_tile];
  if (count.size() == 1) return winograd_tile_name(count.begin()->first);
  std::string t;
  for (const auto& [tile, n] : count) t += (t.empty() ? "" : ", ") + winograd_tile_name(tile) + " x" + std::to_string(n);
  return t;
}

// A choice's pooled model time over the estimate's (infinity: none valid).
double ratio_of(const RecordFile& records, const std::string& key, const std::string& target, const std::string& text) {
  const double ref = records.reference(key, target);
  const double cost = records.pooled_cost(key, target, text);
  return ref > 0 && std::isfinite(cost) ? cost / ref : std::numeric_limits<double>::infinity();
}

// The models the phase compiles: the estimate's, kept, and others by their choices.
class Models {
 public:
  explicit Models(const ModelConfig& config) : config_(config) { config_.winograd_tiles.clear(); }

  std::unique_ptr<runtime::Executor> build(const std::map<std::string, int>& choices) const {
    ModelConfig c = config_;
    c.winograd_tiles = choices;
    return std::make_unique<runtime::Executor>(load_model(c.model, c.load_options()), c.executor_options());
  }
  // The estimate's model, compiled and run once on the inputs on first use.
  runtime::Executor& base() {
    if (!base_) {
      base_ = build({});
      inputs_ = random_inputs(base_->graph(), config_.seed);
      outputs_ = base_->run(inputs_);
    }
    return *base_;
  }
  const std::vector<Tensor>& inputs() {
    base();
    return inputs_;
  }
  // How far `m`'s outputs are from the estimate's model's (compiling `m`).
  double difference(runtime::Executor& m) {
    base();
    return max_relative_difference(m.run(inputs_), outputs_);
  }

 private:
  ModelConfig config_;
  std::unique_ptr<runtime::Executor> base_;
  std::vector<Tensor> inputs_, outputs_;
};

}  // namespace

std::string winograd_choice_key(const std::string& geometry) { return std::string(kChoicePrefix) + geometry; }

std::string winograd_choice_geometry(const std::string& task_key) {
  return task_key.rfind(kChoicePrefix, 0) == 0 ? task_key.substr(kChoicePrefix.size()) : "";
}

std::string winograd_choice_text(int tile) { return std::string(kTilePrefix) + std::to_string(tile); }

int parse_winograd_choice(const std::string& text) {
  if (text.rfind(kTilePrefix, 0) == 0) {
    const std::string v = text.substr(kTilePrefix.size());
    for (int tile : kWinogradChoiceTiles)
      if (v == std::to_string(tile)) return tile;
  }
  TESSERA_FAIL("Winograd choice '", text, "': expected tile=0 (direct), tile=2 or tile=4");
}

std::string winograd_tile_name(int tile) {
  return tile == 0 ? "direct" : "F(" + std::to_string(tile) + "x" + std::to_string(tile) + ")";
}

std::map<std::string, int> recorded_winograd_choices(const RecordFile& records, const std::string& target) {
  std::map<std::string, std::set<std::string>> texts;  // key -> schedules
  for (const Record& r : records.records())
    if (r.target == target && r.ok() && !winograd_choice_geometry(r.task_key).empty())
      texts[r.task_key].insert(r.schedule);
  std::map<std::string, int> choices;
  for (const auto& [key, schedules] : texts) {
    double best = 1;
    for (const std::string& text : schedules) {
      const double ratio = ratio_of(records, key, target, text);
      if (ratio < best && !records.rejected(key, target, text)) {
        best = ratio;
        choices[winograd_choice_geometry(key)] = parse_winograd_choice(text);
      }
    }
  }
  return choices;
}

namespace {

// What every step of the phase works with; `watch` started with the phase.
struct Phase {
  const GraphPhaseOptions& options;
  RecordFile& records;
  const std::string& target;
  Progress& progress;
  Models models;
  Stopwatch watch;
};

// The phase's progress line: its time, the budget and its share, then `text`.
void show(const Phase& ph, const std::string& text) {
  char head[96];
  std::snprintf(head, sizeof head, "[tune %s/%s] graph choices (at most %s of the budget): ",
                duration_text(ph.watch.seconds()).c_str(), duration_text(ph.options.budget_seconds).c_str(),
                duration_text(ph.options.max_seconds).c_str());
  ph.progress.show(head + text, true);
}

// One alternative of a geometry timed in the whole model against the
// estimate's (WrongOutput when their outputs differ, Compile when it cannot
// be built); `what` says how it went.
Record measure_alternative(Phase& ph, const Group& g, int tile, std::string& what) {
  const Stopwatch one;
  Record rec;
  rec.task_key = winograd_choice_key(g.geometry);
  rec.task = "Winograd choice of " + std::to_string(g.sites.size()) + " conv(s) " + g.geometry;
  rec.target = ph.target;
  rec.schedule = winograd_choice_text(tile);
  try {
    std::unique_ptr<runtime::Executor> alt = ph.models.build({{g.geometry, tile}});
    const double diff = ph.models.difference(*alt);
    if (diff > ph.options.tolerance) {
      rec.error = MeasureError::WrongOutput;
      what = "outputs differ by " + std::to_string(diff);
    } else {
      const Interleaved t = time_interleaved(ph.models.base(), *alt, ph.models.inputs(), ph.options.runs,
                                             std::max(ph.options.max_seconds - ph.watch.seconds(), 1e-9));
      rec.costs = {t.ratio * t.a_ms * 1e-3};
      rec.baseline = {t.a_ms * 1e-3};
      char line[96];
      std::snprintf(line, sizeof line, "%.3f ms against %.3f ms (ratio %.3f)", t.b_ms, t.a_ms, t.ratio);
      what = line;
    }
  } catch (const std::exception& e) {
    rec.error = MeasureError::Compile;
    what = e.what();
  }
  rec.seconds_spent = one.seconds();
  rec.timestamp = static_cast<int64_t>(std::time(nullptr));
  return rec;
}

// Each geometry's alternatives, heaviest geometry first: those the records
// have are reused, the others measured and appended while the share lasts.
void measure_alternatives(Phase& ph, const std::vector<Group>& groups, GraphPhaseResult& r) {
  double spent = 0;  // seconds of this run's measurements
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    for (int tile : g.alternatives) {
      if (ph.records.has(winograd_choice_key(g.geometry), ph.target, winograd_choice_text(tile))) {
        ++r.reused;
        continue;
      }
      // No measurement starts that the mean of this run's would take past the share.
      const double mean = r.measured > 0 ? spent / r.measured : 0;
      if (ph.watch.seconds() + mean >= ph.options.max_seconds) continue;
      std::string what;
      const Record rec = measure_alternative(ph, g, tile, what);
      ph.records.append(rec);
      spent += rec.seconds_spent;
      ++r.measured;
      if (rec.error != MeasureError::None) ++r.errors;
      show(ph, std::to_string(gi + 1) + "/" + std::to_string(groups.size()) + " " + g.geometry + " (" +
                   std::to_string(g.sites.size()) + " convs, estimate " + estimated_text(g) + ") " +
                   winograd_tile_name(tile) + ": " + what);
    }
  }
}

// The choices the records make for this model's geometries.
std::map<std::string, int> standing_choices(const Phase& ph, const std::vector<Group>& groups) {
  std::map<std::string, int> all = recorded_winograd_choices(ph.records, ph.target), mine;
  for (const Group& g : groups)
    if (all.count(g.geometry)) mine[g.geometry] = all.at(g.geometry);
  return mine;
}

// SlowerInModel verdicts for every alternative of the geometry that beats the estimate.
void reject_geometry(Phase& ph, const std::string& geometry) {
  const std::string key = winograd_choice_key(geometry);
  for (int tile : kWinogradChoiceTiles) {
    const std::string text = winograd_choice_text(tile);
    if (!(ratio_of(ph.records, key, ph.target, text) < 1) || ph.records.rejected(key, ph.target, text)) continue;
    Record v;
    v.task_key = key;
    v.task = "Winograd choice " + geometry;
    v.target = ph.target;
    v.schedule = text;
    v.error = MeasureError::SlowerInModel;
    v.timestamp = static_cast<int64_t>(std::time(nullptr));
    ph.records.append(v);
  }
}

// The guard (model_guard.h): the choices standing, judged together in the
// model; the geometries it drops are rejected in the records.
void guard_standing_choices(Phase& ph, const std::map<std::string, int>& applied, GraphPhaseResult& r) {
  std::vector<std::string> geometries;
  std::vector<GuardChoice> choices;
  for (const auto& [geometry, tile] : applied) {
    const std::string key = winograd_choice_key(geometry);
    const double ratio = ratio_of(ph.records, key, ph.target, winograd_choice_text(tile));
    choices.push_back({geometries.size(), (1 - ratio) * ph.records.reference(key, ph.target)});
    geometries.push_back(geometry);
  }
  auto subset = [&](const std::vector<size_t>& set) {
    std::map<std::string, int> m;
    for (size_t i : set) m[geometries[i]] = applied.at(geometries[i]);
    return m;
  };
  auto compare = [&](const std::vector<size_t>& with, const std::vector<size_t>& base) {
    std::unique_ptr<runtime::Executor> b = base.empty() ? nullptr : ph.models.build(subset(base));
    std::unique_ptr<runtime::Executor> w = ph.models.build(subset(with));
    runtime::Executor& bm = b ? *b : ph.models.base();
    if (ph.models.difference(*w) > ph.options.tolerance) return std::numeric_limits<double>::infinity();
    const Interleaved t = time_interleaved(bm, *w, ph.models.inputs(), ph.options.runs);
    show(ph, "guarding: " + std::to_string(with.size()) + " of " + std::to_string(choices.size()) + " choices, ratio " +
                 std::to_string(t.ratio) + " against " + std::to_string(base.size()));
    return t.ratio;
  };
  GuardOptions go;
  go.max_comparisons = 6;
  const GuardResult gr = guard_choices(choices, compare, go);
  r.guard_comparisons = gr.comparisons;
  r.guard_dropped = static_cast<int>(gr.dropped.size());
  for (size_t i : gr.dropped) reject_geometry(ph, geometries[i]);
}

// One geometry's line of the closing table, from the records.
GraphChoiceReport choice_report(const Phase& ph, const Group& g, const std::map<std::string, int>& applied) {
  GraphChoiceReport c;
  c.geometry = g.geometry;
  c.convs = static_cast<int>(g.sites.size());
  c.estimated = estimated_text(g);
  const std::string key = winograd_choice_key(g.geometry);
  c.default_ms = ph.records.reference(key, ph.target) * 1e3;
  c.tuned_ms = c.default_ms;
  if (applied.count(g.geometry)) {
    c.tuned_tile = applied.at(g.geometry);
    c.tuned_ms = ph.records.pooled_cost(key, ph.target, winograd_choice_text(c.tuned_tile)) * 1e3;
  }
  for (int tile : g.alternatives) {
    const std::string text = winograd_choice_text(tile);
    std::string v = "not measured";
    if (ph.records.has(key, ph.target, text)) {
      const double ratio = ratio_of(ph.records, key, ph.target, text);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", ratio);
      v = std::isfinite(ratio) ? buf : "error";
      if (ph.records.rejected(key, ph.target, text)) v += " (slower with the others)";
    }
    c.tried += (c.tried.empty() ? "" : ", ") + winograd_tile_name(tile) + " " + v;
  }
  return c;
}

}  // namespace

GraphPhaseResult tune_graph_choices(const ModelConfig& config, RecordFile& records, const std::string& target,
                                    const GraphPhaseOptions& o, Progress& progress) {
  Phase ph{o, records, target, progress, Models(config), Stopwatch()};
  GraphPhaseResult r;
  const std::vector<Group> groups = groups_of(config);
  measure_alternatives(ph, groups, r);
  std::map<std::string, int> applied = standing_choices(ph, groups);
  if (r.measured > 0 && applied.size() > 1 && o.runs > 0) {
    guard_standing_choices(ph, applied, r);
    applied = standing_choices(ph, groups);
  }
  for (const Group& g : groups) r.choices.push_back(choice_report(ph, g, applied));
  r.applied = std::move(applied);
  r.seconds = ph.watch.seconds();
  return r;
}

}  // namespace tessera::tune
