// The text `--dump-pet` prints for a search (pet/search.h). Its first lines
// are parsed by bench/pet_report.py: keep their form.
#include <sstream>

#include "pet/search.h"

namespace tessera::pet {

std::string SearchReport::to_text() const {
  std::ostringstream o;
  o.precision(3);
  o << "PET: " << searched << " subprograms searched, " << mutants << " mutants (" << equivalent << " equivalent, "
    << partial << " partially equivalent, " << different << " different), " << measured << " measured, " << db_hits
    << " costs from the database, " << applied << " applied; " << seconds << " s"
    << (budget_exhausted ? " (budget spent)" : "") << " (generating " << generate_seconds << " s, verifying "
    << verify_seconds << " s, correcting " << correct_seconds << " s, measuring " << measure_seconds << " s)\n";
  o << "  of " << subprograms << " subprograms found: " << shared << " shared with an identical one, " << replayed
    << " replayed from the database (" << rebuilt << " rebuilt from its graphs), " << left_to_larger_budget
    << " left to a larger budget (the database's note: cut under one no smaller), " << without_mutants << " without a mutant; " << verified << " of " << mutants
    << " mutants verified (the rest estimated to lose or not needed); finding subprograms " << find_seconds
    << " s, choosing and splicing " << apply_seconds << " s\n";
  if (budget_exhausted) o << "  budget: " << budget_note << "\n";
  if (cost_before > 0)
    o << "  summed cost of the subprograms: " << cost_before * 1e3 << " ms -> " << cost_after * 1e3 << " ms\n";
  if (pass_seconds > 0) {
    double checks = check_baseline_seconds;
    for (const ModelCheck& m : model_checks) checks += m.seconds;
    o << "  PET in all: " << pass_seconds << " s: the search " << seconds << " s (within its share of the budget), "
      << "post-optimizations " << post_seconds << " s, whole-model checks " << checks << " s, the fallback's search "
      << fallback_seconds << " s\n";
    if (check_baseline_seconds > 0)
      o << "  the model as it came, compiled and run for the check before the search's first measurement: "
        << check_baseline_seconds << " s; " << check_reserve_seconds << " s kept for the check from then\n";
    for (const ModelCheck& m : model_checks)
      o << "  whole-model check of " << m.choices << ": " << m.seconds << " s, " << m.time_left
        << " s of the budget left when it began (its runs bounded by it)\n";
  }
  for (const ModelCheck& m : model_checks) {
    o << "  whole model with " << m.choices << ": " << m.before * 1e3 << " ms -> " << m.after * 1e3 << " ms (";
    if (m.measured)
      o << "measured, " << m.seconds << " s";
    else
      o << "from the database";
    o << "; ratio " << m.ratio << ", upper quartile " << m.ratio_high << "): " << (m.kept ? "kept" : "undone") << "\n";
  }
  std::string last;
  for (const CandidateRecord& c : candidates) {
    if (c.subprogram != last) {
      o << "  " << c.subprogram;
      if (c.same_as >= 0) o << " [as subprogram " << c.same_as + 1 << ", same structure]";
      o << ": original " << c.original_seconds * 1e3 << " ms\n";
      last = c.subprogram;
    }
    o << "    " << (c.applied ? "* " : "  ") << c.family << (c.partial ? " (partial, " : " (equivalent")
      << (c.partial ? std::to_string(c.boxes) + " boxes corrected" : "") << ") " << c.seconds * 1e3 << " ms\n";
  }
  for (const std::string& n : notes) o << "  note: " << n << "\n";
  return o.str();
}

}  // namespace tessera::pet
