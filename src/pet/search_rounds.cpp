// One subprogram's search (pet/search_internal.h): rounds of mutants,
// verified and corrected lazily, likeliest first by the static estimate,
// then the likeliest candidates measured.
#include <algorithm>
#include <set>

#include "pet/corrector.h"
#include "pet/estimate.h"
#include "pet/search_internal.h"
#include "support/error.h"

namespace tessera::pet::search_detail {

namespace {

// A candidate measured this much slower than the original counts towards
// SearchOptions::stop_after_losers.
constexpr double kClearlySlower = 1.1;

}  // namespace

// Verifies a mutant against the original (planned once per subprogram in
// `verifier`), corrects it when partially equivalent; nullopt when it is
// not usable.
std::optional<Candidate> Search::check(const Subprogram& sp, Verifier& verifier, const Mutant& m, int64_t elements) {
  const Stopwatch w;
  const VerifyResult r = verifier.check(*m.graph);
  const double took = w.seconds();
  report_.verify_seconds += took;
  ++report_.verified;
  if (took > 1) {
    int64_t boxes = 0;
    for (const OutputCheck& oc : r.outputs) boxes += oc.boxes;
    note(sp.describe() + ": verifying " + m.family + " took " + std::to_string(took) + " s (" +
         std::to_string(boxes) + " boxes, " + std::to_string(r.positions) + " positions, " +
         verdict_name(r.verdict) + ")");
  }
  Candidate c;
  c.family = m.family;
  if (r.verdict == Verdict::Equivalent) {
    ++report_.equivalent;
    if (!o_.equivalent) return std::nullopt;
    c.graph = m.graph;
  } else if (r.verdict == Verdict::Partial) {
    ++report_.partial;
    if (!o_.partial || r.gave_up ||
        static_cast<double>(r.wrong_elements()) > o_.max_wrong_fraction * static_cast<double>(elements))
      return std::nullopt;
    std::vector<std::vector<Box>> wrong;
    for (const OutputCheck& oc : r.outputs) wrong.push_back(oc.wrong);
    c.partial = true;
    c.boxes = static_cast<int>(r.wrong_boxes());
    c.wrong_elements = r.wrong_elements();
    try {
      ScopedSeconds t(report_.correct_seconds);
      c.graph = correct(*sp.graph, *m.graph, wrong);
    } catch (const Error& err) {
      report_.notes.push_back(sp.describe() + ": " + m.family + " not corrected (" + err.what() + ")");
      return std::nullopt;
    }
  } else {
    ++report_.different;
    return std::nullopt;
  }
  c.hash = structural_hash(*c.graph);
  return c;
}

// The mutants of `parent` (the original or a mutant of it) the search may
// use, with their structural hashes.
// `dfs` false: the fixed families only (a replay tries those first: the
// DFS is most of the generator's time).
std::vector<Mutant> Search::mutants_of(const Subprogram& sp, const Graph& parent, bool dfs) {
  MutantOptions mo;  // bounded by a count of DFS states: the same mutants under any load
  mo.dfs = dfs;
  mo.deadline = deadline_;  // ... unless the budget ends first (then the search is cut anyway)
  std::vector<Mutant> ms;
  {
    ScopedSeconds t(report_.generate_seconds);
    ms = generate_mutants(parent, sp.num_activations, mo, nullptr, &sp.weight_tensors);
  }
  report_.mutants += static_cast<int>(ms.size());
  std::erase_if(ms, [&](const Mutant& m) {
    // Equal only for these weights: the verifier, which draws the weights
    // at random, cannot vouch for such a mutant.
    return m.weight_dependent || (!o_.only_family.empty() && m.family != o_.only_family);
  });
  for (Mutant& m : ms)
    if (!m.hash) m.hash = structural_hash(*m.graph);
  return ms;
}

// The verifier's random inputs: one seed per subprogram structure (its
// mutants are functions of the structure, not of the seed). It stops once
// a mutant is wrong on more elements than the search would correct.
VerifyOptions Search::verify_options(const Subprogram& sp) const {
  VerifyOptions vo;
  vo.tests = o_.verify_tests;
  vo.seed = o_.seed ^ sp.hash;
  vo.max_wrong_elements =
      o_.partial ? static_cast<int64_t>(o_.max_wrong_fraction * static_cast<double>(output_elements(*sp.graph))) : 0;
  return vo;
}

// The search proper for one subprogram: rounds of mutants; verified,
// corrected and measured lazily, likeliest first by the static estimate
// (before verification a mutant's own estimate stands in: a lower bound of
// its corrected form's). Round 0 mutates the original, each later round
// the mutants_per_round likeliest usable mutants of the round before (PET's
// iterative GetMutants); then at most max_measured candidates are
// measured. A mutant estimated past the limit is never verified. `cut` is
// set when the budget cut the search short.
Found Search::search(const Subprogram& sp, bool& cut) {
  Found f;
  cut = false;
  const double original_estimate = estimate_seconds(*sp.graph, sp.num_activations);
  const double limit = o_.max_estimate_ratio > 0 ? o_.max_estimate_ratio * original_estimate : -1;
  const int64_t elements = output_elements(*sp.graph);
  std::unique_ptr<Verifier> verifier_once;  // made when the first mutant is verified
  std::vector<Pending> pending;
  std::set<uint64_t> seen{sp.hash};
  // The mutants of `parent`, waiting (by value: `pending` grows while a
  // parent in it is expanded); the number generated.
  auto expand = [&](std::shared_ptr<const Graph> parent, std::string prefix, std::vector<uint64_t> path) {
    std::vector<Mutant> ms = mutants_of(sp, *parent);
    for (Mutant& m : ms) {
      if (!seen.insert(m.hash).second) continue;
      Pending p;
      p.key = estimate_seconds(*m.graph, sp.num_activations);
      if (limit >= 0 && p.key > limit) continue;  // cannot win, nor be a parent
      p.seq = pending.size();
      p.path = path;
      p.path.push_back(m.hash);
      m.family = prefix.empty() ? m.family : prefix + "+" + m.family;
      p.mutant = std::move(m);
      pending.push_back(std::move(p));
    }
    return ms.size();
  };
  // The likeliest waiting mutant from `from` on that is usable and not
  // `taken`, verifying on the way (a verified mutant's key becomes its
  // corrected estimate and it waits again); nullopt when none is left
  // within the limit or the budget ended.
  auto likeliest = [&](size_t from, const std::vector<char>& taken) -> std::optional<size_t> {
    for (;;) {
      if (out_of_time()) {
        cut = true;
        return std::nullopt;
      }
      size_t best = pending.size();
      for (size_t i = from; i < pending.size(); ++i)
        if (!pending[i].dead && !taken[i] &&
            (best == pending.size() || pending[i].key < pending[best].key ||
             (pending[i].key == pending[best].key && pending[i].seq < pending[best].seq)))
          best = i;
      if (best == pending.size()) return std::nullopt;
      Pending& p = pending[best];
      if (limit >= 0 && p.key > limit) return std::nullopt;  // so is every other one
      if (p.verified) return best;
      if (!verifier_once) {
        ScopedSeconds t(report_.verify_seconds);  // planning the original is verification's work
        verifier_once = std::make_unique<Verifier>(*sp.graph, verify_options(sp));
      }
      p.verified = check(sp, *verifier_once, p.mutant, elements);
      if (!p.verified) {
        p.dead = true;
        continue;
      }
      p.verified->path = p.path;
      p.key = estimate_seconds(*p.verified->graph, sp.num_activations);
    }
  };
  if (expand(sp.graph, "", {}) == 0) ++report_.without_mutants;
  size_t round_start = 0;
  for (int round = 1; round < o_.rounds && !out_of_time(); ++round) {
    std::vector<char> taken(pending.size(), 0);
    std::vector<size_t> parents;
    while (parents.size() < static_cast<size_t>(std::max(0, o_.mutants_per_round)))
      if (std::optional<size_t> i = likeliest(round_start, taken)) {
        taken[*i] = 1;
        parents.push_back(*i);
      } else {
        break;
      }
    round_start = pending.size();
    for (size_t i : parents) {
      if (out_of_time()) break;
      expand(pending[i].mutant.graph, pending[i].mutant.family, pending[i].path);
    }
    if (parents.empty()) break;
  }
  if (out_of_time()) cut = true;
  bool original_failed = false;
  int measured = 0, losers = 0;
  std::vector<char> taken(pending.size(), 0);
  while (measured < o_.max_measured && !cut && (o_.stop_after_losers <= 0 || losers < o_.stop_after_losers)) {
    std::optional<size_t> i = likeliest(0, taken);
    if (!i) break;
    taken[*i] = 1;
    Candidate& c = *pending[*i].verified;
    if (!measure_candidate(sp, f, c, original_failed)) {
      if (original_failed) break;
      if (!may_measure()) cut = true;
      continue;
    }
    ++measured;
    if (c.seconds < f.original_seconds) f.candidates.push_back(c);
    // A loser is clearly slower (beyond a shared machine's noise); a near
    // miss keeps the next candidates coming.
    losers = c.seconds > kClearlySlower * f.original_seconds ? losers + 1 : 0;
  }
  std::sort(f.candidates.begin(), f.candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return f;
}

}  // namespace tessera::pet::search_detail
