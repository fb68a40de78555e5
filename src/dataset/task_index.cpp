// A dataset's tasks (see task_index.h).
#include "dataset/task_index.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "support/error.h"
#include "tune/model_config.h"
#include "tune/search.h"

namespace tessera::dataset {

namespace {

using json = nlohmann::json;

// FNV-1a: a hash that is the same in every build (std::hash need not be).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// splitmix64's finalizer: neighbouring seeds give unrelated streams.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

json target_json(const DatasetTarget& t) {
  return {{"name", t.name},
          {"isa", std::string(isa_name(t.isa))},
          {"threads", t.threads},
          {"target", t.target.to_string()},
          {"hardware", json::parse(t.hardware.to_json())}};
}

DatasetTarget target_from(const json& j) {
  DatasetTarget t;
  t.name = j.at("name").get<std::string>();
  t.isa = isa_from_name(j.at("isa").get<std::string>());
  t.threads = j.at("threads").get<int>();
  t.target = Target::parse(j.at("target").get<std::string>());
  t.hardware = cost::HardwareDesc::from_json(j.at("hardware").dump());
  return t;
}

}  // namespace

const IsaTask* DatasetTask::on(const DatasetTarget& target) const {
  auto it = isas.find(std::string(isa_name(target.isa)));
  return it == isas.end() ? nullptr : &it->second;
}

int64_t DatasetIndex::measurements() const {
  int64_t n = 0;
  for (const DatasetTask& t : tasks)
    for (const DatasetTarget& target : targets)
      if (const IsaTask* it = t.on(target)) n += static_cast<int64_t>(it->schedules.size());
  return n;
}

bool DatasetIndex::same_request(const DatasetIndex& o) const {
  if (networks != o.networks || per_task != o.per_task || seed != o.seed || targets.size() != o.targets.size())
    return false;
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i].name != o.targets[i].name || !(targets[i].target == o.targets[i].target)) return false;
  return true;
}

std::string DatasetIndex::to_json() const {
  json nets = json::array(), tgts = json::array(), tks = json::array();
  for (const Network& n : networks) nets.push_back({{"name", n.name}, {"path", n.path}});
  for (const DatasetTarget& t : targets) tgts.push_back(target_json(t));
  for (const DatasetTask& t : tasks) {
    json isas = json::object();
    for (const auto& [isa, it] : t.isas) {
      json e = {{"network", it.network}, {"weights", it.weights}, {"schedules", it.schedules}};
      if (!it.skipped.empty()) e["skipped"] = it.skipped;
      isas[isa] = e;
    }
    tks.push_back({{"key", t.key}, {"description", t.description}, {"isas", isas}});
  }
  json j = {{"version", 1},     {"per_task", per_task}, {"seed", seed},
            {"networks", nets}, {"targets", tgts},      {"tasks", tks}};
  if (repeats > 0) j["repeats"] = repeats;
  return j.dump(1);
}

DatasetIndex DatasetIndex::from_json(const std::string& text, const std::string& source) {
  DatasetIndex d;
  try {
    json j = json::parse(text);
    TESSERA_CHECK(j.at("version").get<int>() == 1, source, ": version ", j.at("version").dump(),
                  ", this Tessera reads version 1");
    d.per_task = j.at("per_task").get<int>();
    d.seed = j.at("seed").get<uint64_t>();
    d.repeats = j.value("repeats", 0);
    for (const json& n : j.at("networks")) d.networks.push_back({n.at("name").get<std::string>(), n.at("path").get<std::string>()});
    for (const json& t : j.at("targets")) d.targets.push_back(target_from(t));
    for (const json& t : j.at("tasks")) {
      DatasetTask task;
      task.key = t.at("key").get<std::string>();
      task.description = t.at("description").get<std::string>();
      for (const auto& [isa, e] : t.at("isas").items()) {
        isa_from_name(isa);  // throws on an unknown name
        IsaTask it;
        it.network = e.at("network").get<std::string>();
        it.weights = e.at("weights").get<std::map<std::string, int>>();
        it.schedules = e.at("schedules").get<std::vector<std::string>>();
        it.skipped = e.value("skipped", std::string());
        task.isas[isa] = std::move(it);
      }
      d.tasks.push_back(std::move(task));
    }
  } catch (const json::exception& e) {
    TESSERA_FAIL(source, ": ", e.what());
  } catch (const Error& e) {
    TESSERA_FAIL(source, ": ", e.what());
  }
  return d;
}

std::vector<std::string> sample_schedules(const tune::TaskSpace& space, const std::string& key, Isa isa, int per_task,
                                          uint64_t seed) {
  // With nothing observed and no openings the search draws every point at
  // random (uniform over each free knob's values), deduplicated by the
  // schedule it gives: a dataset wants samples of the space, not the tuner's
  // first guesses.
  tune::SearchOptions options;
  options.openings = false;
  tune::TaskSearch search(space, mix(seed ^ fnv1a(key + "/" + std::string(isa_name(isa)))), options);
  std::vector<std::string> out;
  for (const schedule::SchedulePoint& p : search.propose(per_task)) out.push_back(p.to_text());
  return out;
}

DatasetIndex build_index(const std::vector<Network>& networks, const std::vector<DatasetTarget>& targets,
                         int per_task, uint64_t seed, const std::function<void(const std::string&)>& log,
                         const std::string& fusion_db) {
  TESSERA_CHECK(per_task >= 1, "schedules per task must be at least 1 (the default), got ", per_task);
  DatasetIndex d;
  d.networks = networks;
  d.targets = targets;
  d.per_task = per_task;
  d.seed = seed;
  std::vector<Isa> isas;
  for (const DatasetTarget& t : targets)
    if (std::find(isas.begin(), isas.end(), t.isa) == isas.end()) isas.push_back(t.isa);
  std::map<std::string, size_t> by_key;
  for (Isa isa : isas) {
    const Target machine = Target::for_isa(isa);
    for (const Network& net : networks) {
      tune::ModelConfig c;
      c.model = net.path;
      c.isa = isa;
      c.fusion_db = fusion_db;
      tune::TuningModel m;
      try {
        m = tune::open_model(c);
      } catch (const Error& e) {
        TESSERA_FAIL("network '", net.name, "' (", net.path, "): ", e.what());
      }
      int fresh = 0;
      for (const runtime::TaskUse& u : m.tasks) {
        const std::string key = compile::key_text(u.task->key);
        auto [at, added] = by_key.emplace(key, d.tasks.size());
        if (added) d.tasks.push_back({key, u.task->describe(), {}});
        IsaTask& it = d.tasks[at->second].isas[std::string(isa_name(isa))];
        it.weights[net.name] += u.weight;
        if (!it.network.empty()) continue;
        it.network = net.name;
        ++fresh;
        try {
          tune::TaskSpace space(*u.task, machine);
          it.schedules = sample_schedules(space, key, isa, per_task, seed);
        } catch (const std::exception& e) {
          it.skipped = e.what();
        }
      }
      if (log)
        log(net.name + " (" + std::string(isa_name(isa)) + "): " + std::to_string(m.tasks.size()) + " tasks, " +
            std::to_string(fresh) + " new");
    }
  }
  return d;
}

}  // namespace tessera::dataset
