// Tuning records as JSON lines (see record.h).
#include "tune/record.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <utility>

#include "runtime/latency_stats.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/name_table.h"

namespace tessera::tune {

namespace {
constexpr int kFormatVersion = 1;
constexpr MeasureError kLastError = MeasureError::SlowerInModel;
}  // namespace

std::string_view measure_error_name(MeasureError e) {
  switch (e) {
    case MeasureError::None: return "none";
    case MeasureError::Lowering: return "lowering";
    case MeasureError::Compile: return "compile";
    case MeasureError::Run: return "run";
    case MeasureError::WrongOutput: return "wrong output";
    case MeasureError::Timeout: return "timeout";
    case MeasureError::SlowerInModel: return "slower in the model";
  }
  return "?";
}

namespace {
double median(std::vector<double> v) { return runtime::percentile(std::move(v), 50); }
}  // namespace

namespace {
constexpr Named<CostLabel> kCostLabelNames[] = {
    {CostLabel::Min, "min"}, {CostLabel::Median, "median"}, {CostLabel::Ratio, "ratio"}};
}  // namespace

std::string_view cost_label_name(CostLabel l) { return table_name(kCostLabelNames, l); }

CostLabel parse_cost_label(const std::string& name) { return table_parse(kCostLabelNames, name, "cost label"); }

double Record::cost() const { return ok() ? median(costs) : std::numeric_limits<double>::infinity(); }

std::string to_json(const Record& r) {
  nlohmann::json j = {{"v", kFormatVersion},
                      {"task_key", r.task_key},
                      {"task", r.task},
                      {"target", r.target},
                      {"schedule", r.schedule},
                      {"costs", r.costs},
                      {"baseline", r.baseline},
                      {"error", static_cast<int>(r.error)},
                      {"seconds_spent", r.seconds_spent},
                      {"timestamp", r.timestamp}};
  if (!r.hardware.empty()) j["hardware"] = r.hardware;
  return j.dump();
}

Record parse_record(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(j.is_object(), "record: not a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json& {
    auto it = j.find(name);
    TESSERA_CHECK(it != j.end(), "record: no field '", name, "'");
    return *it;
  };
  auto text = [&](const char* name) {
    const nlohmann::json& f = field(name);
    TESSERA_CHECK(f.is_string(), "record: field '", name, "' is not a string");
    return f.get<std::string>();
  };
  auto number = [&](const char* name) {
    const nlohmann::json& f = field(name);
    TESSERA_CHECK(f.is_number(), "record: field '", name, "' is not a number");
    return f.get<double>();
  };
  const nlohmann::json& v = field("v");
  TESSERA_CHECK(v.is_number_integer() && v.get<int>() == kFormatVersion, "record: format version ", v.dump(),
                ", this Tessera reads version ", kFormatVersion);
  Record r;
  r.task_key = text("task_key");
  r.task = text("task");
  r.target = text("target");
  r.schedule = text("schedule");
  const nlohmann::json& costs = field("costs");
  TESSERA_CHECK(costs.is_array(), "record: field 'costs' is not a list");
  for (const nlohmann::json& c : costs) {
    TESSERA_CHECK(c.is_number() && c.get<double>() >= 0, "record: a cost is not a non-negative number");
    r.costs.push_back(c.get<double>());
  }
  if (auto b = j.find("baseline"); b != j.end()) {  // absent in records of before paired timing
    TESSERA_CHECK(b->is_array(), "record: field 'baseline' is not a list");
    for (const nlohmann::json& c : *b) {
      TESSERA_CHECK(c.is_number() && c.get<double>() > 0, "record: a baseline time is not a positive number");
      r.baseline.push_back(c.get<double>());
    }
    TESSERA_CHECK(r.baseline.empty() || r.baseline.size() == r.costs.size(), "record: ", r.baseline.size(),
                  " baseline times for ", r.costs.size(), " costs");
  }
  const nlohmann::json& e = field("error");
  TESSERA_CHECK(e.is_number_integer() && e.get<int>() >= 0 && e.get<int>() <= static_cast<int>(kLastError),
                "record: unknown error code ", e.dump());
  r.error = static_cast<MeasureError>(e.get<int>());
  TESSERA_CHECK(r.error != MeasureError::None || !r.costs.empty(), "record: no error and no costs");
  r.seconds_spent = number("seconds_spent");
  r.timestamp = static_cast<int64_t>(number("timestamp"));
  if (j.contains("hardware")) r.hardware = text("hardware");  // absent in the tuner's records
  return r;
}

RecordFile::RecordFile(std::string path) : path_(std::move(path)) {
  if (!std::filesystem::exists(path_)) return;
  TESSERA_CHECK(!std::filesystem::is_directory(path_), "records file '", path_, "' is a directory");
  const std::string bytes = read_file(path_);
  size_t at = 0;
  for (int line_no = 1; at < bytes.size(); ++line_no) {
    size_t end = bytes.find('\n', at);
    const bool complete = end != std::string::npos;
    std::string_view line(bytes.data() + at, (complete ? end : bytes.size()) - at);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      try {
        records_.push_back(parse_record(line));
        index(records_.size() - 1);
      } catch (const Error& e) {
        if (complete) TESSERA_FAIL("records file '", path_, "' line ", line_no, ": ", e.what());
        ++dropped_;  // a run stopped while writing its last record
        truncate_tail_ = true;
        break;
      }
    }
    if (!complete) {
      needs_newline_ = true;  // a valid last record, written without its newline
      break;
    }
    at = end + 1;
    good_bytes_ = at;
  }
}

void RecordFile::index(size_t i) {
  const Record& r = records_[i];
  all_[{r.task_key, r.target, r.schedule}].push_back(i);
  if (r.paired()) references_.emplace(std::make_pair(r.task_key, r.target), median(r.baseline));
}

double RecordFile::reference(const std::string& task_key, const std::string& target) const {
  auto it = references_.find({task_key, target});
  return it == references_.end() ? 0.0 : it->second;
}

bool RecordFile::has(const std::string& task_key, const std::string& target, const std::string& schedule) const {
  return all_.count({task_key, target, schedule}) != 0;
}

const Record* RecordFile::find(const std::string& task_key, const std::string& target,
                               const std::string& schedule) const {
  auto it = all_.find({task_key, target, schedule});
  return it == all_.end() ? nullptr : &records_[it->second.back()];
}

void RecordFile::append(const Record& r) {
  if (truncate_tail_) {
    std::filesystem::resize_file(path_, good_bytes_);
    truncate_tail_ = false;
  }
  std::ofstream out(path_, std::ios::binary | std::ios::app);
  TESSERA_CHECK(out, "cannot open records file '", path_, "' for appending");
  out << (needs_newline_ ? "\n" : "") << to_json(r) << '\n';
  out.flush();
  TESSERA_CHECK(out, "cannot write records file '", path_, "'");
  needs_newline_ = false;
  records_.push_back(r);
  index(records_.size() - 1);
}

int RecordFile::count(const std::string& task_key, const std::string& target, const std::string& schedule) const {
  auto it = all_.find({task_key, target, schedule});
  return it == all_.end() ? 0 : static_cast<int>(it->second.size());
}

double RecordFile::pooled_cost(const std::string& task_key, const std::string& target,
                               const std::string& schedule) const {
  return label_cost(task_key, target, schedule, CostLabel::Ratio);
}

double RecordFile::label_cost(const std::string& task_key, const std::string& target, const std::string& schedule,
                              CostLabel label) const {
  const double inf = std::numeric_limits<double>::infinity();
  auto it = all_.find({task_key, target, schedule});
  if (it == all_.end()) return inf;
  std::vector<double> costs, ratios;
  bool paired = true;
  for (size_t i : it->second) {
    const Record& r = records_[i];
    if (r.error == MeasureError::SlowerInModel) continue;
    if (r.error != MeasureError::None) return inf;
    costs.insert(costs.end(), r.costs.begin(), r.costs.end());
    paired = paired && r.paired();
    for (size_t k = 0; paired && k < r.costs.size(); ++k) ratios.push_back(r.costs[k] / r.baseline[k]);
  }
  if (costs.empty()) return inf;
  switch (label) {
    case CostLabel::Min: return *std::min_element(costs.begin(), costs.end());
    case CostLabel::Median: return median(costs);
    case CostLabel::Ratio: break;
  }
  const double ref = reference(task_key, target);
  return paired && ref > 0 ? median(ratios) * ref : median(costs);
}

bool RecordFile::rejected(const std::string& task_key, const std::string& target, const std::string& schedule) const {
  auto it = all_.find({task_key, target, schedule});
  if (it == all_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](size_t i) { return records_[i].error == MeasureError::SlowerInModel; });
}

const Record* RecordFile::best(const std::string& task_key, const std::string& target) const {
  const Record* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (auto it = all_.lower_bound({task_key, target, ""}); it != all_.end(); ++it) {
    const auto& [key, tgt, schedule] = it->first;
    if (key != task_key || tgt != target) break;
    if (rejected(task_key, target, schedule)) continue;
    const double c = pooled_cost(task_key, target, schedule);
    if (c < best_cost) {
      best_cost = c;
      best = &records_[it->second.back()];
    }
  }
  return best;
}

}  // namespace tessera::tune
