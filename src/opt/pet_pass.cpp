// The pet pass: PET's search over the model (pet/search.h) with the cost the
// runtime measures, then the post-optimizations PET runs after splicing
// mutants (PET §6.3): reshape/transpose chains moved across elementwise ops
// and cancelled, and every op on weights alone precomputed (the mutants'
// weight derivations: padded, concatenated, reshaped kernels). Last, the
// whole model with the choices is timed against the original, both as the
// runtime will deploy them (PassContext::measure_model), and the
// choices undone unless they pay (SearchOptions::min_model_gain); then once
// more with only the choices that saved much alone (fallback_gain).
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "opt/pass_manager.h"
#include "opt/passes.h"
#include "pet/pet_db.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera {

namespace {

// The database key of a whole model's time on the target, as deployed or
// (without PassContext::measure_model) compiled as candidates are.
std::string model_key(const PassContext& ctx, const Graph& g) {
  char h[24];
  std::snprintf(h, sizeof h, "%016" PRIx64, structural_hash(g));
  return ctx.target_key + (ctx.measure_model ? ":deployed-model:" : ":model:") + h;
}

// Seconds of `g` on the target: from the database, else measured and kept.
// `announce`: name it on stderr before measuring.
double model_seconds(const Graph& g, const PassContext& ctx, pet::PetDb& db, const char* announce, bool& measured) {
  const std::string key = model_key(ctx, g);
  if (std::optional<double> s = db.cost(key)) return *s;
  if (announce) std::fprintf(stderr, "PET: timing the whole model %s\n", announce);
  measured = true;
  const double s = ctx.measure_model ? ctx.measure_model(g) : ctx.measure(g);
  db.record_cost(key, s);
  return s;
}

// PET's post-optimizations of a graph the search spliced candidates into.
void post_optimize(Graph& g) {
  simplify_rt(g);
  fold_constants(g);
}

// Times `g` (choices spliced in) against `original`: kept when it is at
// least min_gain faster. `announce`: say so on stderr before measuring.
pet::ModelCheck check_model(const Graph& g, const Graph& original, const PassContext& ctx, pet::PetDb& db,
                            double min_gain, bool announce) {
  const auto start = std::chrono::steady_clock::now();
  pet::ModelCheck m;
  try {
    m.before = model_seconds(original, ctx, db, announce ? "as it came" : nullptr, m.measured);
    m.after = model_seconds(g, ctx, db, announce ? "with PET's choices" : nullptr, m.measured);
    m.kept = m.after < m.before * (1 - min_gain);
    if (!m.kept) m.why = "not " + std::to_string(static_cast<int>(min_gain * 100)) + "% faster than the original";
  } catch (const Error& e) {
    // Unverified choices are not kept (a model the timer cannot run, e.g.).
    m.why = std::string("could not be timed (") + e.what() + ")";
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
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
  std::unique_ptr<Graph> original = so.min_model_gain >= 0 ? g.clone() : nullptr;
  pet::SearchReport report = pet::optimize_program(g, so, cost, db, ctx.target_key);
  if (report.applied > 0) {
    ScopedSeconds t(report.post_seconds);
    post_optimize(g);
  }
  if (report.applied > 0 && original) {
    const bool announce = so.verbose || report.seconds > so.progress_after_seconds;
    pet::ModelCheck all = check_model(g, *original, ctx, db, so.min_model_gain, announce);
    all.choices = "all " + std::to_string(report.applied) + " choices";
    report.model_checks.push_back(all);
    if (!all.kept) {
      g = std::move(*original->clone());
      report.notes.push_back("the whole model with " + all.choices + ": " + all.why + "; undone");
      int applied = 0;
      // Once more with only the choices that saved much alone (their costs and
      // choices from the database: no new measurement but the model's).
      if (so.fallback_gain > 0 && applied_below(report, so.fallback_gain)) {
        pet::SearchOptions again = so;
        again.min_candidate_gain = so.fallback_gain;
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
          pet::ModelCheck some = check_model(g, *original, ctx, db, so.min_model_gain, announce);
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
