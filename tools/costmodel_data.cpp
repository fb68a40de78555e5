// Records to program rows for learned cost models (see costmodel_data.h).
#include "costmodel_data.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include "cost/program_features.h"
#include "cost/value_features.h"
#include "dataset/task_index.h"
#include "support/error.h"
#include "tune/candidate_program.h"
#include "tune/model_config.h"
#include "tune/progress.h"
#include "tune/record.h"
#include "tune/task_space.h"

namespace tessera::tools {

namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // task, target name, schedule

// The cache file's first line names the layout; then one row per line.
std::string cache_layout() {
  std::string s;
  for (const cost::ColumnDoc& c : cost::program_feature_columns()) s += c.name + ",";
  return s;
}

std::map<Key, std::vector<float>> read_cache(const std::string& path) {
  std::map<Key, std::vector<float>> rows;
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return rows;
  try {
    if (nlohmann::json::parse(line).at("layout").get<std::string>() != cache_layout()) return rows;
    while (std::getline(f, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      rows[{j.at("task"), j.at("target"), j.at("schedule")}] = j.at("row").get<std::vector<float>>();
    }
  } catch (const nlohmann::json::exception&) {
    // A cut-short or foreign file: whatever was read stays; the rest is computed again.
  }
  return rows;
}

void write_cache(const std::string& path, const std::map<Key, std::vector<float>>& rows) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    TESSERA_CHECK(f, "cannot write the feature cache ", tmp);
    f << nlohmann::json{{"layout", cache_layout()}}.dump() << "\n";
    for (const auto& [k, row] : rows)
      f << nlohmann::json{{"task", std::get<0>(k)}, {"target", std::get<1>(k)}, {"schedule", std::get<2>(k)}, {"row", row}}
               .dump()
        << "\n";
    TESSERA_CHECK(f.flush(), "cannot write the feature cache ", tmp);
  }
  std::filesystem::rename(tmp, path);
}

struct Measured {
  double seconds = 0;
  cost::HardwareDesc hw;
};

}  // namespace

CostDataset load_cost_dataset(const std::vector<std::string>& record_files, const std::vector<std::string>& dataset_dirs,
                              const std::string& cache, tune::CostLabel label, bool progress,
                              bool keep_values) {
  TESSERA_CHECK(!record_files.empty(), "no records file given (--records)");
  TESSERA_CHECK(!dataset_dirs.empty(), "no dataset directory given (--dataset DIR: where tasks.json is)");
  // Tasks and targets of every dataset.
  std::vector<dataset::DatasetIndex> indexes;
  for (const std::string& dir : dataset_dirs) {
    const std::string path = (std::filesystem::path(dir) / "tasks.json").string();
    std::ifstream f(path);
    TESSERA_CHECK(f, "cannot read ", path, " (is ", dir, " a 'tessera dataset collect' directory?)");
    std::stringstream text;
    text << f.rdbuf();
    indexes.push_back(dataset::DatasetIndex::from_json(text.str(), path));
  }
  std::map<std::string, const dataset::DatasetTarget*> target_of;  // record target text -> target
  std::map<std::string, std::pair<const dataset::DatasetTask*, const dataset::DatasetIndex*>> task_of;
  CostDataset out;
  for (const dataset::DatasetIndex& d : indexes) {
    for (const dataset::DatasetTarget& t : d.targets) {
      target_of.emplace(t.target.to_string(), &t);
      out.target_names.emplace(t.target.to_string(), t.name);
    }
    for (const dataset::DatasetTask& t : d.tasks) {
      task_of.emplace(t.key, std::make_pair(&t, &d));
      for (const auto& [isa, it] : t.isas)
        for (const auto& [net, w] : it.weights) out.weights[t.key][net] = std::max(out.weights[t.key][net], w);
    }
  }

  // Every valid measured schedule, its records of one file read as the label.
  std::map<Key, Measured> measured;
  for (const std::string& path : record_files) {
    TESSERA_CHECK(std::filesystem::exists(path), "records file '", path, "' does not exist");
    tune::RecordFile rf(path);
    for (const tune::Record& r : rf.records()) {
      auto t = target_of.find(r.target);
      if (!r.ok() || t == target_of.end() || !task_of.count(r.task_key)) continue;
      const Key key{r.task_key, t->second->name, r.schedule};
      if (measured.count(key)) continue;
      const double s = rf.label_cost(r.task_key, r.target, r.schedule, label);
      if (!std::isfinite(s) || s <= 0) continue;
      measured[key] = {s, t->second->hardware};
    }
  }
  TESSERA_CHECK(!measured.empty(), "no valid record of the datasets' tasks and targets in the records files");

  std::map<Key, std::vector<float>> rows = cache.empty() ? std::map<Key, std::vector<float>>{} : read_cache(cache);
  // What to compute, by ISA, network, task and schedule: each network opened
  // once per ISA, each schedule lowered once per ISA, its row made per target.
  std::map<std::string, Isa> isa_of;  // target name -> ISA
  for (const auto& [text, t] : target_of) isa_of[t->name] = t->isa;
  struct Work {
    std::map<std::string, std::map<std::string, std::vector<Key>>> by_task;  // task -> schedule -> keys
  };
  std::map<std::pair<Isa, std::string>, Work> work;  // (ISA, network) -> work
  size_t to_compute = 0;
  for (const auto& [key, m] : measured) {
    if (rows.count(key) && !keep_values) continue;
    const Isa isa = isa_of.at(std::get<1>(key));
    const dataset::IsaTask* it = nullptr;
    const auto& [task, index] = task_of.at(std::get<0>(key));
    if (auto e = task->isas.find(std::string(isa_name(isa))); e != task->isas.end()) it = &e->second;
    if (!it || it->network.empty()) {
      ++out.skipped;
      continue;
    }
    work[{isa, it->network}].by_task[std::get<0>(key)][std::get<2>(key)].push_back(key);
    ++to_compute;
  }
  std::map<Key, std::pair<std::vector<std::vector<double>>, std::vector<double>>> values;  // keep_values
  tune::Progress line(progress, "costmodel: ");
  const auto start = std::chrono::steady_clock::now();
  size_t done = 0, fresh = 0;
  for (const auto& [where, w] : work) {
    const auto& [isa, network] = where;
    std::string path;
    for (const dataset::DatasetIndex& d : indexes)
      for (const dataset::Network& n : d.networks)
        if (n.name == network && path.empty()) path = n.path;
    tune::ModelConfig c;
    c.model = path;
    c.isa = isa;
    tune::TuningModel model;
    try {
      model = tune::open_model(c);
    } catch (const Error& e) {
      TESSERA_FAIL("network '", network, "' (", path, "): ", e.what());
    }
    std::map<std::string, const compile::Task*> by_key;
    for (const runtime::TaskUse& u : model.tasks) by_key.emplace(compile::key_text(u.task->key), u.task.get());
    for (const auto& [key, schedules] : w.by_task) {
      auto t = by_key.find(key);
      std::optional<tune::TaskSpace> space;
      if (t != by_key.end()) {
        try {
          space.emplace(*t->second, Target::for_isa(isa));
        } catch (const std::exception&) {
        }
      }
      for (const auto& [text, keys] : schedules) {
        done += keys.size();
        std::optional<schedule::Schedule> s;
        if (space) s = space->schedule_at(schedule::SchedulePoint::parse(text));
        std::optional<tune::CandidateProgram> p;
        if (s) p = tune::compile_candidate(*t->second, *s, isa, false);
        if (!p) {
          out.skipped += static_cast<int>(keys.size());
          continue;
        }
        for (const Key& k : keys) {
          const cost::HardwareDesc& hw = measured.at(k).hw;
          if (!rows.count(k)) {
            rows[k] = cost::program_features(p->candidate(), hw, hw.cores);
            ++fresh;
          }
          if (keep_values) values[k] = {cost::value_features(p->kernel, hw).rows, cost::hardware_features(hw)};
        }
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      line.show("features of " + std::to_string(done) + "/" + std::to_string(to_compute) + " measured schedules (" +
                network + ", " + std::string(isa_name(isa)) + "), " + tune::duration_text(secs));
    }
  }
  line.done();
  if (!cache.empty() && fresh > 0) write_cache(cache, rows);
  for (const auto& [key, m] : measured) {
    auto r = rows.find(key);
    if (r == rows.end()) continue;
    out.samples.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), m.seconds, r->second, {}, {}});
    if (auto v = values.find(key); v != values.end()) {
      out.samples.back().values = std::move(v->second.first);
      out.samples.back().hardware = std::move(v->second.second);
    }
  }
  return out;
}

std::map<GroupKey, std::vector<size_t>> sample_groups(const CostDataset& d, const std::function<bool(size_t)>& pick) {
  std::map<GroupKey, std::vector<size_t>> g;
  for (size_t i = 0; i < d.samples.size(); ++i)
    if (pick(i)) g[{d.samples[i].task, d.samples[i].target}].push_back(i);
  return g;
}

std::vector<cost::RankGroup> rank_groups(const CostDataset& d, const std::map<GroupKey, std::vector<size_t>>& groups) {
  std::vector<cost::RankGroup> out;
  for (const auto& [key, members] : groups) {
    cost::RankGroup g;
    for (size_t i : members) {
      g.rows.push_back(d.samples[i].row);
      g.seconds.push_back(d.samples[i].seconds);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<cost::SampleGroup> sample_groups_of(const CostDataset& d,
                                                const std::map<GroupKey, std::vector<size_t>>& groups) {
  std::vector<cost::SampleGroup> out;
  for (const auto& [key, members] : groups) {
    cost::SampleGroup g;
    for (size_t i : members) {
      g.programs.push_back(program_sample(d.samples[i]));
      g.seconds.push_back(d.samples[i].seconds);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<cost::SplitItem> split_items(const CostDataset& d) {
  std::vector<cost::SplitItem> items;
  for (const CostSample& c : d.samples) {
    cost::SplitItem it{c.task, c.target, {}};
    if (auto w = d.weights.find(c.task); w != d.weights.end())
      for (const auto& [net, n] : w->second) it.networks.push_back(net);
    items.push_back(std::move(it));
  }
  return items;
}

cost::ProgramSample program_sample(const CostSample& s) {
  TESSERA_CHECK(!s.hardware.empty(), "sample of task ", s.task, " on ", s.target, " has no per-store matrix (loaded without values)");
  return {s.values, s.hardware};
}

}  // namespace tessera::tools
