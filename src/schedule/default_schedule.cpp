// Default schedules and schedule spaces: the rules tried in order on a
// program's stages, at a point (see default_schedule.h).
#include "schedule/default_schedule.h"

#include <algorithm>
#include <set>

#include "schedule/generic_schedule.h"
#include "schedule/stage_queries.h"
#include "support/error.h"
#include "support/winograd_transform.h"

namespace tessera::schedule {

namespace {

// One pass of the rules over a program: each stage the default schedule
// schedules gets the first rule (rules_for its class) that applies, at the
// point's values for the stage; the knobs each rule declares are recorded.
class Walk {
 public:
  // With `record`, the knobs of every stage are kept (space()).
  Walk(const std::vector<te::Tensor>& outputs, const TargetInfo& target, const SchedulePoint& point, bool record)
      : outputs_(outputs), stages_(te::stages_of(outputs)), ctx_{outputs_, stages_, target}, point_(point),
        generic_(find_rule("generic")), record_(record) {}

  // The schedule; nullopt when the point is invalid.
  std::optional<Schedule> run() {
    Schedule s;
    if (!outputs_.empty() && program_rule(s)) return finish(s);
    std::set<const te::Stage*> done;   // epilogues scheduled with their stage
    std::set<const te::Stage*> tiled;  // stages whose epilogue stays inlined into their tiles
    for (const te::StagePtr& st : stages_) {
      if (st->kind != te::StageKind::Compute || done.count(st.get())) continue;
      const bool root = is_output(outputs_, st.get()) || te::has_reduce(st->body);
      for (const ScheduleRule* rule : rules_for(st->op_class)) {
        if (rule->program_level() || (!root && !rule->takes_inlined()) || !rule->applies(*st, ctx_)) continue;
        const ScheduleRule::Materialize m = rule->materialize_inputs(*st);
        if (m == ScheduleRule::Materialize::Before) materialize_inputs(s, *st);
        apply(*rule, *st, s);
        if (const te::Stage* epilogue = rule->epilogue(*st, ctx_)) {
          done.insert(epilogue);
          if (rule->tiles_epilogue()) tiled.insert(st.get());
        }
        if (m == ScheduleRule::Materialize::After) materialize_inputs(s, *st);
        break;
      }
    }
    materialize_shared(s, tiled);
    return finish(s);
  }

  const std::vector<StageSpace>& space() const { return space_; }

 private:
  // A program-level rule on the single output: the whole schedule when one applies.
  bool program_rule(Schedule& s) {
    const te::Stage& out = outputs_[0].stage();
    for (const ScheduleRule* rule : rules_for(out.op_class))
      if (rule->program_level() && rule->applies(out, ctx_)) {
        apply(*rule, out, s);
        return true;
      }
    return false;
  }

  // `rule` on `st` at the point's values (each must be one of its knob's
  // values); records the knobs.
  void apply(const ScheduleRule& rule, const te::Stage& st, Schedule& s) {
    KnobValues values;
    if (auto it = point_.stages.find(st.name); it != point_.stages.end()) {
      values = it->second;
      used_.insert(st.name);
    }
    std::vector<Knob> knobs = record_ || !values.empty() ? rule.knobs(st, ctx_) : std::vector<Knob>{};
    for (const auto& kv : values) {  // not a structured binding: clang 14 (the fuzz build) cannot capture one
      auto k = std::find_if(knobs.begin(), knobs.end(), [&kv](const Knob& kn) { return kn.name == kv.first; });
      valid_ = valid_ && k != knobs.end() && std::find(k->values.begin(), k->values.end(), kv.second) != k->values.end();
    }
    if (record_) space_.push_back({st.name, std::string(rule.name()), std::move(knobs)});
    if (valid_) valid_ = rule.apply(s, st, ctx_, values);
  }

  std::optional<Schedule> finish(const Schedule& s) const {
    if (!valid_ || used_.size() != point_.stages.size()) return std::nullopt;
    return s;
  }

  // Computed inputs of a tiled contraction or window reduction (padding, and
  // the ops of a fused block before it) are materialized once, so the inner
  // loop reads plain memory without guards or recomputation; only a cheap
  // elementwise prologue (a ReLU) is applied as the input is read. What a
  // padded copy reads is materialized first unless cheap: formulas under its
  // guards would not vectorize.
  void materialize_inputs(Schedule& s, const te::Stage& st) {
    const TargetInfo& target = ctx_.target;
    auto needs_root = [&](const te::Tensor& in) {
      return in.stage().kind == te::StageKind::Compute && !placed(s, in.name()) && !is_output(outputs_, &in.stage()) &&
             !te::has_reduce(in.stage().body) && !cheap_prologue(outputs_, in.stage());
    };
    // A depthwise blocked convolution reads its padded input with guards
    // alike across lanes: one test and a masked vector load per tap, cheaper
    // than copying the whole image when each input is read only a few times
    // — unless the copy also computes something (a SiLU before it). So does
    // an F(2x2, 3x3) input transform (4x4 windows, each pixel read by 4
    // tiles) when the image is stored or an activation of a stored one (a
    // fused block's previous output transform or convolution, a pool), not
    // a reorder recomputed at every read; the copy is one more read and write of the whole image.
    // (F(4x4)'s 36 point formulas read the 6x6 window 100 times: it keeps
    // the copy.)
    auto padding_in_place = [&](const te::Tensor& in) {
      const bool depthwise = st.op_class == te::OpClass::DepthwiseConvBlocked;
      const bool winograd = st.op_class == te::OpClass::WinogradInput && st.shapes[0].size() == 4 &&
                            winograd_tile_of_points(st.shapes[0][0]) == 2;
      if (!(depthwise || winograd) || !lane_uniform_guards(in.stage(), target)) return false;
      for (const te::Tensor& in2 : in.stage().inputs()) {
        const te::Stage& src = in2.stage();
        const bool ok = depthwise ? src.kind == te::StageKind::Placeholder || cheap_prologue(outputs_, src, true)
                                  : materialized(s, src) || elementwise_over_materialized(s, src);
        if (!ok) return false;
      }
      return true;
    };
    for (const te::Tensor& in : st.inputs()) {
      if (!needs_root(in) || padding_in_place(in)) continue;
      s.compute_root(in.name());
      apply(*generic_, in.stage(), s);
      // Under guards that are alike across a vector's lanes (a blocked image's
      // padding tests pixels, the lanes are channels) any formula vectorizes.
      if (lane_uniform_guards(in.stage(), target)) continue;
      for (const te::Tensor& in2 : in.stage().inputs())
        if (needs_root(in2)) {
          s.compute_root(in2.name());
          apply(*generic_, in2.stage(), s);
        }
    }
  }

  // True when the stage is stored whole: an input, an output, rooted, or a
  // reduction (root by default) that no step computes inside another loop.
  bool materialized(const Schedule& s, const te::Stage& st) const {
    if (st.kind != te::StageKind::Compute || is_output(outputs_, &st) || rooted(s, st.name)) return true;
    if (!te::has_reduce(st.body)) return false;
    for (const Directive& d : s.directives)
      if (d.stage == st.name && (d.kind == DirectiveKind::ComputeAt || d.kind == DirectiveKind::ComputeInline))
        return false;
    return true;
  }
  // True when the stage is elementwise at its own positions over stored
  // stages only (a ReLU over a rooted Winograd output transform).
  bool elementwise_over_materialized(const Schedule& s, const te::Stage& st) const {
    if (!reads_in_place(st)) return false;
    for (const te::Tensor& in : st.inputs())
      if (!materialized(s, in.stage())) return false;
    return true;
  }

  // Inlined stages that several stages read (a fused block's shared values:
  // a concatenation feeding two reshapes, a mask used twice) or that a reader
  // broadcasts are materialized once unless cheap, instead of being recomputed
  // at every read — except inside a contraction's epilogue, which stays
  // inlined into its output.
  void materialize_shared(Schedule& s, const std::set<const te::Stage*>& tiled) {
    for (const te::Stage* st : shared_stages(outputs_, stages_, tiled)) {
      if (placed(s, st->name)) continue;
      s.compute_root(st->name);
      apply(*generic_, *st, s);
    }
  }

  const std::vector<te::Tensor>& outputs_;
  const std::vector<te::StagePtr> stages_;
  const RuleContext ctx_;
  const SchedulePoint point_;
  const ScheduleRule* generic_;
  std::vector<StageSpace> space_;
  const bool record_;
  std::set<std::string> used_;  // stages of the point the walk met
  bool valid_ = true;
};

}  // namespace

Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target) {
  std::optional<Schedule> s = Walk(outputs, target, {}, false).run();
  TESSERA_CHECK(s, "default schedule: a rule rejected its default point");
  return *s;
}

std::vector<StageSpace> space_of(const std::vector<te::Tensor>& outputs, const TargetInfo& target) {
  Walk w(outputs, target, {}, true);
  TESSERA_CHECK(w.run(), "schedule space: a rule rejected its default point");
  return w.space();
}

std::optional<Schedule> schedule_at(const std::vector<te::Tensor>& outputs, const TargetInfo& target,
                                    const SchedulePoint& point) {
  return Walk(outputs, target, point, false).run();
}

std::vector<SchedulePoint> schedule_candidates(const std::vector<te::Tensor>& outputs, const TargetInfo& target,
                                               int n, std::mt19937_64& rng) {
  const std::vector<StageSpace> space = space_of(outputs, target);
  std::vector<SchedulePoint> r{SchedulePoint{}};
  std::set<std::string> seen{r[0].to_text()};
  for (int attempt = 0; attempt < 20 * n && static_cast<int>(r.size()) < n; ++attempt) {
    SchedulePoint p;
    for (const StageSpace& st : space)
      for (const Knob& k : st.knobs) {
        if (k.values.empty()) continue;
        int64_t v = k.values[std::uniform_int_distribution<size_t>(0, k.values.size() - 1)(rng)];
        if (v != k.default_value) p.stages[st.stage][k.name] = v;
      }
    if (!seen.insert(p.to_text()).second || !schedule_at(outputs, target, p)) continue;
    r.push_back(std::move(p));
  }
  return r;
}

}  // namespace tessera::schedule
