// The pet pass: PET's search over the model (pet/search.h) with the cost the
// runtime measures, then the post-optimizations PET runs after splicing
// mutants (PET §6.3): reshape/transpose chains moved across elementwise ops
// and cancelled, and every op on weights alone precomputed (the mutants'
// weight derivations: padded, concatenated, reshaped kernels).
#include <cstdio>

#include "opt/pass_manager.h"
#include "opt/passes.h"
#include "pet/pet_db.h"

namespace tessera {

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
  const pet::SearchReport report = pet::optimize_program(g, so, cost, db, ctx.target_key);
  if (report.applied > 0) {
    simplify_rt(g);
    fold_constants(g);
  }
  if (opts.dump_pet) std::fprintf(stderr, "%s", report.to_text().c_str());
  return report.applied;
}

}  // namespace tessera
