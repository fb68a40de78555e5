// Schedule rules as a search space. A rule schedules the stages of some op
// classes (te::OpClass); it declares its knobs — named choices with their
// candidate values — and today's heuristic as each knob's default, so the
// default schedule is every rule at its default point. A tuner reads a
// program's space, picks values (a SchedulePoint, which has a text form),
// and builds the schedule at that point (default_schedule.h).
//
// Rules, in the order they are tried (rules_for): the program-level row
// rule, then per stage the Winograd transforms, register-tiled contractions
// (with cache-blocked GEMM), row reductions, lane reductions and the
// generic rule. A rule that applies takes the stage; values it cannot build
// (an invalid combination) make the point invalid, never a wrong kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/target_info.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// One choice of a rule for one stage: its candidate values (ascending; 0/1
// for a switch) and the value today's heuristic picks. Knobs may depend on
// each other: a default is computed from the other knobs' values (kc from
// the tile's columns), and `values` are the candidates at the default point.
struct Knob {
  std::string name;
  std::vector<int64_t> values;
  int64_t default_value = 0;
};

// Knob values by name; a knob left out takes its default.
using KnobValues = std::map<std::string, int64_t>;

// A point of a program's space: knob values per stage name. Text form, one
// stage per line: "<stage> <knob>=<value> <knob>=<value>"; parse() reads it back.
struct SchedulePoint {
  std::map<std::string, KnobValues> stages;
  std::string to_text() const;
  static SchedulePoint parse(std::string_view text);
  bool operator==(const SchedulePoint&) const = default;
};

// The program a rule looks at.
struct RuleContext {
  const std::vector<te::Tensor>& outputs;
  const std::vector<te::StagePtr>& stages;  // producers first
  const TargetInfo& target;
};

class ScheduleRule {
 public:
  virtual ~ScheduleRule() = default;
  virtual std::string_view name() const = 0;
  // The op classes whose stages it may schedule; empty: every class.
  virtual std::vector<te::OpClass> op_classes() const { return {}; }
  // Program-level: tried once, on the program's single output, before the
  // per-stage rules; when it applies it schedules the whole program.
  virtual bool program_level() const { return false; }
  // Tried on stages that are neither outputs nor reductions (inlined by
  // default) too.
  virtual bool takes_inlined() const { return false; }
  // True when the rule schedules `st` (its structure; knob values aside).
  virtual bool applies(const te::Stage& st, const RuleContext& ctx) const = 0;
  // The stage's knobs (only called when applies).
  virtual std::vector<Knob> knobs(const te::Stage& st, const RuleContext& ctx) const = 0;
  // Adds the stage's steps at `values`; false (adding nothing) when the
  // values are not a valid point.
  virtual bool apply(Schedule& s, const te::Stage& st, const RuleContext& ctx, const KnobValues& values) const = 0;
  // After apply: the elementwise epilogue the rule finished with the stage
  // (scheduled with it; null for none).
  virtual const te::Stage* epilogue(const te::Stage& st, const RuleContext& ctx) const { return nullptr; }
  // True when the epilogue's stages stay inlined into the stage's tiles
  // (never materialized as values several stages share).
  virtual bool tiles_epilogue() const { return false; }
  // Whether the stage's computed inputs are materialized once (windows and
  // tiles read each input element many times), before or after its steps.
  enum class Materialize { None, Before, After };
  virtual Materialize materialize_inputs(const te::Stage& st) const { return Materialize::None; }
};

// Knob helpers for rules: the value of `name` in `values`, `fallback` when
// left out; a 0/1 knob.
int64_t knob_or(const KnobValues& values, std::string_view name, int64_t fallback);
Knob switch_knob(std::string name, bool default_on);

// Every rule, in the order they are tried.
const std::vector<std::unique_ptr<ScheduleRule>>& all_rules();
// The rules that may schedule a stage of class `c`, in order (program-level ones first).
const std::vector<const ScheduleRule*>& rules_for(te::OpClass c);
// The rule named `name`; null when none is.
const ScheduleRule* find_rule(std::string_view name);

}  // namespace tessera::schedule
