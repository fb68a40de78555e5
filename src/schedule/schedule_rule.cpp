// Schedule rules, their knobs and the registry (see schedule_rule.h).
#include "schedule/schedule_rule.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <sstream>

#include "schedule/contraction_schedule.h"
#include "schedule/generic_schedule.h"
#include "schedule/row_schedule.h"
#include "schedule/winograd_schedule.h"
#include "support/error.h"

namespace tessera::schedule {

int64_t knob_or(const KnobValues& values, std::string_view name, int64_t fallback) {
  auto it = values.find(std::string(name));
  return it == values.end() ? fallback : it->second;
}

Knob switch_knob(std::string name, bool default_on) { return {std::move(name), {0, 1}, default_on ? 1 : 0}; }

std::string SchedulePoint::to_text() const {
  std::string out;
  for (const auto& [stage, values] : stages) {
    TESSERA_CHECK(!stage.empty() && stage.find_first_of(" =\n") == std::string::npos, "schedule point: stage name '",
                  stage, "' has no text form");
    out += stage;
    for (const auto& [knob, v] : values) out += " " + knob + "=" + std::to_string(v);
    out += "\n";
  }
  return out;
}

SchedulePoint SchedulePoint::parse(std::string_view text) {
  SchedulePoint p;
  std::istringstream lines{std::string(text)};
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    std::istringstream words(line);
    std::string stage, word;
    if (!(words >> stage)) continue;
    TESSERA_CHECK(!p.stages.count(stage), "schedule point line ", line_no, ": stage ", stage, " given twice");
    KnobValues& values = p.stages[stage];
    while (words >> word) {
      size_t eq = word.find('=');
      TESSERA_CHECK(eq != std::string::npos && eq > 0, "schedule point line ", line_no, ": '", word,
                    "' is not knob=value");
      int64_t v = 0;
      const char* end = word.data() + word.size();
      auto [ptr, ec] = std::from_chars(word.data() + eq + 1, end, v);
      TESSERA_CHECK(ec == std::errc() && ptr == end, "schedule point line ", line_no, ": bad value in '", word, "'");
      TESSERA_CHECK(values.emplace(word.substr(0, eq), v).second, "schedule point line ", line_no, ": knob ",
                    word.substr(0, eq), " given twice");
    }
  }
  return p;
}

const std::vector<std::unique_ptr<ScheduleRule>>& all_rules() {
  static const std::vector<std::unique_ptr<ScheduleRule>> rules = [] {
    std::vector<std::unique_ptr<ScheduleRule>> r;
    r.push_back(make_rows_rule());
    r.push_back(make_winograd_rule());
    r.push_back(make_contraction_rule());
    r.push_back(make_row_reduction_rule());
    r.push_back(make_lane_reduction_rule());
    r.push_back(make_generic_rule());
    return r;
  }();
  return rules;
}

const std::vector<const ScheduleRule*>& rules_for(te::OpClass c) {
  static const std::array<std::vector<const ScheduleRule*>, te::kOpClasses> by_class = [] {
    std::array<std::vector<const ScheduleRule*>, te::kOpClasses> r;
    for (int k = 0; k < te::kOpClasses; ++k)
      for (const auto& rule : all_rules()) {
        std::vector<te::OpClass> classes = rule->op_classes();
        if (classes.empty() || std::find(classes.begin(), classes.end(), static_cast<te::OpClass>(k)) != classes.end())
          r[static_cast<size_t>(k)].push_back(rule.get());
      }
    return r;
  }();
  return by_class.at(static_cast<size_t>(c));
}

const ScheduleRule* find_rule(std::string_view name) {
  for (const auto& r : all_rules())
    if (r->name() == name) return r.get();
  return nullptr;
}

}  // namespace tessera::schedule
