// Static features of measured candidates as JSON lines (see feature_dump.h).
#include "tune/feature_dump.h"

#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace tessera::tune {

void write_feature_dump(const std::string& path, const std::vector<cost::FitGroup>& groups) {
  std::ofstream f(path);
  TESSERA_CHECK(f, "cannot write ", path);
  nlohmann::json names = nlohmann::json::array();
  for (int i = 0; i < cost::kFeatureCount; ++i) names.push_back(cost::feature_name(static_cast<cost::Feature>(i)));
  f << nlohmann::json{{"features", names}}.dump() << "\n";
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].features.size(); ++i)
      f << nlohmann::json{{"group", g},
                          {"task", groups[g].task},
                          {"schedule", i < groups[g].schedules.size() ? groups[g].schedules[i] : std::string()},
                          {"seconds", groups[g].seconds[i]},
                          {"f", groups[g].features[i].v}}
               .dump()
        << "\n";
  TESSERA_CHECK(f.good(), "cannot write ", path);
}

std::vector<cost::FitGroup> read_feature_dump(const std::string& path) {
  std::ifstream in(path);
  TESSERA_CHECK(in, "cannot read feature dump '", path, "'");
  std::string line;
  TESSERA_CHECK(std::getline(in, line), "feature dump '", path, "' is empty");
  nlohmann::json head = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(head.is_object() && head.contains("features") && head["features"].is_array(), "feature dump '", path,
                "': the first line is not {\"features\": [...]}");
  const nlohmann::json& names = head["features"];
  TESSERA_CHECK(names.size() == static_cast<size_t>(cost::kFeatureCount), "feature dump '", path, "' has ",
                names.size(), " features, this build ", cost::kFeatureCount, " (dump it again)");
  for (int i = 0; i < cost::kFeatureCount; ++i) {
    const std::string want(cost::feature_name(static_cast<cost::Feature>(i)));
    TESSERA_CHECK(names[static_cast<size_t>(i)] == want, "feature dump '", path, "': feature ", i, " is ",
                  names[static_cast<size_t>(i)].dump(), ", this build's is '", want, "' (dump it again)");
  }
  std::map<long, cost::FitGroup> by_group;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const bool ok = r.is_object() && r.contains("group") && r["group"].is_number_integer() &&
                    r.contains("seconds") && r["seconds"].is_number() && r.contains("f") && r["f"].is_array() &&
                    r["f"].size() == static_cast<size_t>(cost::kFeatureCount);
    TESSERA_CHECK(ok, "feature dump '", path, "' line ", n, ": not a candidate {group, seconds, f[",
                  cost::kFeatureCount, "]}");
    const double seconds = r["seconds"].get<double>();
    TESSERA_CHECK(std::isfinite(seconds) && seconds > 0, "feature dump '", path, "' line ", n, ": cost ", seconds);
    cost::FitGroup& g = by_group[r["group"].get<long>()];
    if (g.task.empty() && r.contains("task") && r["task"].is_string()) g.task = r["task"].get<std::string>();
    cost::StaticFeatures f;
    for (int i = 0; i < cost::kFeatureCount; ++i) {
      const nlohmann::json& x = r["f"][static_cast<size_t>(i)];
      TESSERA_CHECK(x.is_number(), "feature dump '", path, "' line ", n, ": feature ", i, " is not a number");
      f.v[static_cast<size_t>(i)] = x.get<double>();
    }
    g.features.push_back(f);
    g.seconds.push_back(seconds);
    g.schedules.push_back(r.contains("schedule") && r["schedule"].is_string() ? r["schedule"].get<std::string>() : "");
  }
  std::vector<cost::FitGroup> out;
  for (auto& [id, g] : by_group)
    if (g.features.size() >= 2) out.push_back(std::move(g));
  return out;
}

}  // namespace tessera::tune
