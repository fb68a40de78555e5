// The pet pass: PET's search over the model (pet/search.h) with the cost the
// runtime measures (each candidate beside neighbours that hold its inputs and
// outputs in the layout the target gives them in the model: blocked-layout
// run on a copy names them, pet/layout_context.h), then the post-optimizations PET runs after splicing
// mutants (PET §6.3): reshape/transpose chains moved across elementwise ops
// and cancelled, and every op on weights alone precomputed (the mutants'
// weight derivations: padded, concatenated, reshaped kernels). Last, the
// whole model with the choices is timed against the original, both as the
// runtime will deploy them, in turns (PassContext::compare_models), and the
// choices undone unless they pay (SearchOptions::min_model_gain); then once
// more with only the choices that saved much alone (fallback_gain). The
// checks run within PET's budget: before its first measurement the search
// has the model as it came compiled and run (PassContext::model_cost) and
// keeps what the check will need out of its budget
// (SearchOptions::model_check_share says how).
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>

#include "opt/pass_manager.h"
#include "opt/passes.h"
#include "pet/pet_db.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera {

namespace {

// Rounds in turns the whole-model check is given room for: at least, and at
// most (runtime::kCompareRounds, which the runtime's comparison runs).
constexpr int kMinCheckRounds = 2;
constexpr int kCheckRounds = 15;
// The model with PET's choices is taken to compile and run in up to this
// many times the original's time (corrections and reshapes add kernels).
constexpr double kCompileMargin = 1.25;

// The database key of a whole model's time on the target, timed in turns
// with another (PassContext::compare_models) or alone.
// (`hash`: the model's structural_hash, which reads every weight: taken once
// per model.)
std::string model_key(const PassContext& ctx, uint64_t hash) {
  char h[24];
  std::snprintf(h, sizeof h, "%016" PRIx64, hash);
  return ctx.target_key + (ctx.compare_models ? ":model-in-turns:" : ":model:") + h;
}

// The key of the ratio of the time of the model hashed `after` over the one
// hashed `before`, timed in turns.
std::string ratio_key(const PassContext& ctx, uint64_t before, uint64_t after) {
  char h[24];
  std::snprintf(h, sizeof h, "%016" PRIx64, after);
  return model_key(ctx, before) + ":over:" + h;
}

// Seconds of `g` on the target by `measure`: from the database, else
// measured and kept; nullopt when it must be measured and `max_seconds` is
// not positive (no time left). `announce`: name it on stderr before measuring.
std::optional<double> model_seconds(const Graph& g, const PassContext& ctx, pet::PetDb& db, const char* announce,
                                    bool& measured, double max_seconds) {
  const std::string key = model_key(ctx, structural_hash(g));
  if (std::optional<double> s = db.cost(key)) return *s;
  if (max_seconds <= 0) return std::nullopt;
  if (announce) std::fprintf(stderr, "PET: timing the whole model %s\n", announce);
  measured = true;
  const double s = ctx.measure(g);
  db.record_cost(key, s);
  return s;
}

// `after` against `before` by PassContext::compare_models, both timed in
// turns: from the database, else measured (its rounds ending by
// `max_seconds`) and kept; nullopt when it must be measured and no time is
// left.
std::optional<ModelComparison> compared_models(const Graph& before, const Graph& after, const PassContext& ctx,
                                               pet::PetDb& db, bool announce, bool& measured, double max_seconds) {
  const uint64_t hb = structural_hash(before), ha = structural_hash(after);
  const std::string kb = model_key(ctx, hb), ka = model_key(ctx, ha), kr = ratio_key(ctx, hb, ha);
  const std::string kh = kr + ":high";
  const std::optional<double> b = db.cost(kb), a = db.cost(ka), r = db.cost(kr), h = db.cost(kh);
  if (b && a && r && h) return ModelComparison{*b, *a, *r, *h};
  if (max_seconds <= 0) return std::nullopt;
  if (announce) std::fprintf(stderr, "PET: timing the whole model as it came and with PET's choices, in turns\n");
  measured = true;
  const ModelComparison c = ctx.compare_models(before, after, max_seconds);
  db.record_cost(kb, c.before);
  db.record_cost(ka, c.after);
  db.record_cost(kr, c.ratio);
  db.record_cost(kh, c.ratio_high);
  return c;
}

// PET's post-optimizations of a graph the search spliced candidates into.
void post_optimize(Graph& g) {
  simplify_rt(g);
  fold_constants(g);
}

// Times `g` (choices spliced in) against `original`: kept when it is at
// least min_gain faster (by the median ratio of rounds in turns, with
// PassContext::compare_models; else by `measure`'s times, the original's
// runs bounded by half of what is left and the choices' by the rest).
// `time_left()`: seconds left of the pass's budget. `announce`: say so on
// stderr before measuring.
pet::ModelCheck check_model(const Graph& g, const Graph& original, const PassContext& ctx, pet::PetDb& db,
                            double min_gain, bool announce, const std::function<double()>& time_left) {
  const auto start = std::chrono::steady_clock::now();
  pet::ModelCheck m;
  m.time_left = time_left();
  try {
    std::optional<ModelComparison> c;
    if (ctx.compare_models) {
      c = compared_models(original, g, ctx, db, announce, m.measured, m.time_left);
    } else {
      const std::optional<double> before =
          model_seconds(original, ctx, db, announce ? "as it came" : nullptr, m.measured, m.time_left / 2);
      const std::optional<double> after =
          before ? model_seconds(g, ctx, db, announce ? "with PET's choices" : nullptr, m.measured, time_left())
                 : std::nullopt;
      if (before && after) {
        const double ratio = *before > 0 ? *after / *before : 1.0;
        c = ModelComparison{*before, *after, ratio, ratio};
      }
    }
    if (!c) {
      m.why = "no time left in PET's budget to time it";
    } else {
      m.before = c->before;
      m.after = c->after;
      m.ratio = c->ratio;
      m.ratio_high = c->ratio_high;
      m.kept = m.ratio < 1 - min_gain && m.ratio_high < 1;
      if (m.ratio >= 1 - min_gain)
        m.why = "not " + std::to_string(static_cast<int>(min_gain * 100)) + "% faster than the original";
      else if (!m.kept)
        m.why = "faster in fewer than three rounds of four (the rounds' ratios' upper quartile " +
                std::to_string(m.ratio_high).substr(0, 5) + ")";
    }
  } catch (const Error& e) {
    // Unverified choices are not kept (a model the timer cannot run, e.g.).
    m.why = std::string("could not be timed (") + e.what() + ")";
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

// Names of the values of `g` the target will hold in the channel-blocked
// layout: blocked-layout run on a copy; a value it reorders back from its
// blocked twin, or that it no longer needs in NCHW, is held blocked.
std::set<std::string> blocked_values(const Graph& g, const PassContext& ctx, const PassOptions& opts) {
  std::set<std::string> names;
  if (ctx.lanes < 8 || !opts.enabled("blocked-layout")) return names;
  std::unique_ptr<Graph> b = g.clone();
  if (to_blocked_layout(*b, ctx.lanes) == 0) return names;
  for (const auto& v : g.values()) {
    if (v->is_constant()) continue;
    const Value* w = b->find_value(v->name);
    if (!w || (w->producer && w->producer->op_type == "ReorderFromBlocked")) names.insert(v->name);
  }
  return names;
}

// Whether an applied candidate saved less than `gain` of its subprogram alone.
bool applied_below(const pet::SearchReport& r, double gain) {
  for (const pet::CandidateRecord& c : r.candidates)
    if (c.applied && c.seconds > c.original_seconds * (1 - gain)) return true;
  return false;
}

}  // namespace

int run_pet(Graph& g, const PassContext& ctx) {
  const Stopwatch pass_watch;
  static const PassOptions defaults;
  const PassOptions& opts = ctx.options ? *ctx.options : defaults;
  pet::PetDb db(opts.pet_db.empty() ? pet::PetDb::default_path() : opts.pet_db);
  // A candidate as the model will run it: its weight derivations folded.
  pet::CostFn cost = [&ctx](const Graph& candidate) {
    std::unique_ptr<Graph> c = candidate.clone();
    fold_constants(*c);
    return ctx.measure(*c);
  };
  pet::SearchOptions so = opts.pet;
  so.verbose = so.verbose || opts.verbose;
  if (so.blocked_values.empty()) so.blocked_values = blocked_values(g, ctx, opts);
  std::unique_ptr<Graph> original = so.min_model_gain >= 0 ? g.clone() : nullptr;
  // The whole-model checks' share of the budget (SearchOptions::
  // model_check_share); a budget of a year or more bounds nothing.
  const double budget = so.budget_seconds;
  const bool bounded = budget < 3e7;
  const std::function<double()> time_left = [&] { return bounded ? budget - pass_watch.seconds() : 1e300; };
  pet::SearchOptions search_opts = so;
  std::vector<std::string> reserve_notes;
  if (original && bounded) {
    const double share = std::clamp(so.model_check_share, 0.0, 1.0);
    if (ctx.model_cost) {
      // The model as it came compiled once, before the first measurement;
      // the check's reserve sized from it (SearchOptions::model_check_share).
      search_opts.check_reserve = [&, share, setup = pass_watch.seconds()]() -> double {
        try {
          // The other model's compile and first run (on the arena the
          // original hands back: runtime::ArenaSharing), a warm-up round,
          // then the rounds.
          const ModelCost m = ctx.model_cost(*original);
          const double other = kCompileMargin * (m.compile_seconds + m.run_seconds), round = 2 * m.run_seconds;
          const double fits = round > 0 ? std::floor((budget * share - other - round) / round) : 0;
          const double rounds = std::clamp(fits, double{kMinCheckRounds}, double{kCheckRounds});
          // The pass's own time before the search counts too; the search's
          // budget itself stays the one given (the database keeps which
          // budget cut a search short, and a second compile with the same
          // one must search no further).
          return setup + other + round * (1 + rounds);
        } catch (const Error& e) {
          reserve_notes.push_back(std::string("the model as it came could not be timed (") + e.what() +
                                  "): nothing searched");
          return 1e300;
        }
      };
    } else {
      search_opts.budget_seconds = budget * (1 - share);
    }
  }
  pet::SearchReport report = pet::optimize_program(g, search_opts, cost, db, ctx.target_key);
  report.notes.insert(report.notes.end(), reserve_notes.begin(), reserve_notes.end());
  if (report.applied > 0) {
    ScopedSeconds t(report.post_seconds);
    post_optimize(g);
  }
  if (report.applied > 0 && original) {
    const bool announce = so.verbose || report.seconds > so.progress_after_seconds;
    pet::ModelCheck all = check_model(g, *original, ctx, db, so.min_model_gain, announce, time_left);
    all.choices = "all " + std::to_string(report.applied) + " choices";
    report.model_checks.push_back(all);
    if (!all.kept) {
      g = std::move(*original->clone());
      report.notes.push_back("the whole model with " + all.choices + ": " + all.why + "; undone");
      int applied = 0;
      // Once more with only the choices that saved much alone (their costs and
      // choices from the database: no new measurement but the model's).
      // Its check is bounded by what is left: tried when that covers half
      // of the first check's time.
      const bool fallback_fits = !bounded || !all.measured || time_left() >= all.seconds / 2;
      if (!fallback_fits) report.notes.push_back("no time left in PET's budget for the fallback's check");
      if (so.fallback_gain > 0 && fallback_fits && applied_below(report, so.fallback_gain)) {
        pet::SearchOptions again = search_opts;
        again.min_candidate_gain = so.fallback_gain;
        again.check_reserve = nullptr;  // the model as it came is compiled already
        if (bounded) again.budget_seconds = std::max(0.0, time_left() / 2);  // the rest for its check
        again.verbose = false;
        again.progress_after_seconds = 1e300;
        const Stopwatch fallback_watch;
        pet::SearchReport r = pet::optimize_program(g, again, cost, db, ctx.target_key);
        report.fallback_seconds = fallback_watch.seconds();
        if (r.applied > 0) {
          {
            ScopedSeconds t(report.post_seconds);
            post_optimize(g);
          }
          pet::ModelCheck some = check_model(g, *original, ctx, db, so.min_model_gain, announce, time_left);
          some.choices = "the " + std::to_string(r.applied) + " choices each " +
                         std::to_string(static_cast<int>(so.fallback_gain * 100)) + "% faster alone";
          report.model_checks.push_back(some);
          if (some.kept) {
            applied = r.applied;
          } else {
            g = std::move(*original);
            report.notes.push_back("the whole model with " + some.choices + ": " + some.why + "; undone");
          }
        }
        // The applied marks: those of the fallback's search when kept.
        for (pet::CandidateRecord& c : report.candidates) {
          bool in_fallback = false;
          for (const pet::CandidateRecord& f : r.candidates)
            in_fallback = in_fallback || (f.applied && f.subprogram == c.subprogram && f.family == c.family);
          c.applied = c.applied && applied > 0 && in_fallback;
        }
      } else {
        for (pet::CandidateRecord& c : report.candidates) c.applied = false;
      }
      report.applied = applied;
    }
  }
  report.pass_seconds = pass_watch.seconds();
  if (opts.dump_pet) std::fprintf(stderr, "%s", report.to_text().c_str());
  return report.applied;
}

}  // namespace tessera
