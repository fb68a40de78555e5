// The pet pass: PET's search over the model (pet/search.h) with the cost the
// runtime measures, then the post-optimizations PET runs after splicing
// mutants (PET §6.3): reshape/transpose chains moved across elementwise ops
// and cancelled, and every op on weights alone precomputed (the mutants'
// weight derivations: padded, concatenated, reshaped kernels). Last, the
// whole model with the choices is timed against the original and the
// choices undone unless they pay (SearchOptions::min_model_gain).
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "opt/pass_manager.h"
#include "opt/passes.h"
#include "pet/pet_db.h"
#include "support/error.h"

namespace tessera {

namespace {

// The database key of a whole model's time on the target.
std::string model_key(const std::string& target, const Graph& g) {
  char h[24];
  std::snprintf(h, sizeof h, "%016" PRIx64, structural_hash(g));
  return target + ":model:" + h;
}

// Seconds of `g` on the target: from the database, else measured and kept.
double model_seconds(const Graph& g, const PassContext& ctx, pet::PetDb& db, bool announce, bool& measured) {
  const std::string key = model_key(ctx.target_key, g);
  if (std::optional<double> s = db.cost(key)) return *s;
  if (announce) std::fprintf(stderr, "PET: timing the whole model %s its replacements\n", measured ? "with" : "without");
  measured = true;
  const double s = ctx.measure(g);
  db.record_cost(key, s);
  return s;
}

// Times the model with the search's choices (`g`) against `original`; puts
// the original back when the choices do not make it min_gain faster.
// `announce`: say so on stderr before each measurement (a long search does).
void check_whole_model(Graph& g, Graph& original, const PassContext& ctx, pet::PetDb& db, double min_gain,
                       bool announce, pet::SearchReport& report) {
  const auto start = std::chrono::steady_clock::now();
  report.model_checked = true;
  std::string why;
  try {
    report.model_before = model_seconds(original, ctx, db, announce, report.model_measured);
    report.model_after = model_seconds(g, ctx, db, announce, report.model_measured);
    if (report.model_after >= report.model_before * (1 - min_gain))
      why = "the whole model with the choices was not " + std::to_string(static_cast<int>(min_gain * 100)) +
            "% faster than the original";
  } catch (const Error& e) {
    // Unverified choices are not kept (a model the timer cannot run, e.g.).
    why = std::string("the whole model could not be timed (") + e.what() + ")";
  }
  report.check_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (why.empty()) return;
  report.model_reverted = true;
  g = std::move(original);
  report.notes.push_back(why + ": " + std::to_string(report.applied) + " replacements undone");
  report.applied = 0;
  for (pet::CandidateRecord& c : report.candidates) c.applied = false;
}

}  // namespace

int run_pet(Graph& g, const PassContext& ctx) {
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
    simplify_rt(g);
    fold_constants(g);
    if (original)
      check_whole_model(g, *original, ctx, db, so.min_model_gain,
                        so.verbose || report.seconds > so.progress_after_seconds, report);
  }
  if (opts.dump_pet) std::fprintf(stderr, "%s", report.to_text().c_str());
  return report.applied;
}

}  // namespace tessera
