// PET's program optimizer: candidates per subprogram, then a beam search
// over the subprograms (pet/search.h says what keeps it within its budget).
#include "pet/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "pet/corrector.h"
#include "pet/estimate.h"
#include "pet/fused_consumers.h"
#include "pet/graph_line.h"
#include "pet/layout_context.h"
#include "pet/mutants.h"
#include "pet/subprogram.h"
#include "pet/verifier.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera::pet {

namespace {

// A candidate measured this much slower than the original counts towards
// SearchOptions::stop_after_losers.
constexpr double kClearlySlower = 1.1;

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A candidate replacement of one subprogram.
struct Candidate {
  std::string family;
  std::shared_ptr<Graph> graph;  // same inputs and outputs as the subprogram (weights as inputs), corrected
  uint64_t hash = 0;             // structural hash of `graph` (weights are inputs: contents play no part)
  bool partial = false;
  int boxes = 0;
  int64_t wrong_elements = 0;
  double seconds = -1;           // measured; < 0: not measured
  std::vector<uint64_t> path;    // hashes of the mutants from the original to this one
  int record = -1;               // its line in the report (by index: Found's, then the report's)
};

// A mutant waiting to be verified, measured or mutated again, ordered by
// `key`: its static estimate (before verification that of the mutant alone, a
// lower bound of the corrected one's), ties in generation order.
struct Pending {
  double key = 0;
  size_t seq = 0;
  Mutant mutant;                 // family: the chain from the original ("D2H+D2W")
  std::vector<uint64_t> path;
  std::optional<Candidate> verified;
  bool dead = false;             // verified and not usable
};

// What the search learned about one structure of subprogram: shared by every
// subprogram of that structure (their mutants, verdicts and costs are the
// same, the weights being inputs).
struct Found {
  double original_seconds = -1;         // < 0: not measured (no candidate was)
  std::vector<Candidate> candidates;    // measured and cheaper than the original, cheapest first
  std::vector<CandidateRecord> records; // every candidate measured, for the report
  int index = -1;                       // the subprogram it was found for
};

// What the beam search sees of one subprogram.
struct Entry {
  const Subprogram* sp = nullptr;
  int index = -1;  // in model order
  std::string label;
  double original_seconds = -1;
  std::vector<Candidate> candidates;
};

int64_t output_elements(const Graph& g) {
  int64_t n = 0;
  for (const Value* v : g.outputs()) {
    int64_t e = 1;
    for (int64_t d : v->type.dims) e *= d;
    n += e;
  }
  return n;
}

// Whether `a` and `b` have the same inputs and outputs (count, dtype, dims).
bool same_signature(const Graph& a, const Graph& b) {
  auto same = [](const std::vector<Value*>& x, const std::vector<Value*>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i]->type.dtype != y[i]->type.dtype || x[i]->type.dims != y[i]->type.dims) return false;
    return true;
  };
  return same(a.inputs(), b.inputs()) && same(a.outputs(), b.outputs());
}

// The candidate with the subprogram's weights bound as constants: what the
// target compiles (its weight derivations then fold like any constants).
std::unique_ptr<Graph> bind_weights(const Graph& candidate, const Subprogram& sp) {
  std::unique_ptr<Graph> g = candidate.clone();
  std::vector<Value*>& inputs = g->mutable_inputs();
  TESSERA_CHECK(inputs.size() == sp.num_activations + sp.weight_tensors.size(), "pet: candidate for ",
                sp.describe(), " has ", inputs.size(), " inputs, expected ",
                sp.num_activations + sp.weight_tensors.size());
  for (size_t i = sp.num_activations; i < inputs.size(); ++i) {
    inputs[i]->constant = sp.weight_tensors[i - sp.num_activations];
    inputs[i]->is_graph_input = false;
  }
  inputs.resize(sp.num_activations);
  return g;
}

class Search {
 public:
  Search(Graph& g, const SearchOptions& o, const CostFn& cost, PetDb& db, const std::string& target)
      : g_(g), o_(o), cost_(cost), db_(db), target_(target) {
    // The budget's end as a clock time, for the mutant generator (a budget
    // of a year or more: no deadline).
    if (o_.budget_seconds < 3e7)
      deadline_ = Stopwatch::Clock::now() + std::chrono::duration_cast<Stopwatch::Clock::duration>(
                                                std::chrono::duration<double>(std::max(0.0, o_.budget_seconds)));
  }

  SearchReport run() {
    {
      ScopedSeconds t(report_.find_seconds);
      subprograms_ = find_subprograms(g_, SubprogramOptions{});
      for (Subprogram& sp : subprograms_) {
        sp.context = layout_context(sp, o_.blocked_values);
        if (o_.max_fused_consumers > 0)
          find_fused_consumers(g_, sp, context_outputs(sp.context), static_cast<size_t>(o_.max_fused_consumers));
      }
    }
    report_.subprograms = static_cast<int>(subprograms_.size());
    // The costliest subprograms first, by the static estimate: the budget
    // goes where the time is (CSRNet's dilated back end comes last in the
    // model and first here). The beam search takes them in model order.
    std::vector<double> cost(subprograms_.size());
    for (size_t i = 0; i < subprograms_.size(); ++i)
      cost[i] = estimate_seconds(*subprograms_[i].graph, subprograms_[i].num_activations);
    std::vector<size_t> order(subprograms_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
    std::vector<char> examined(subprograms_.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      if (out_of_time()) break;
      // Once the budget has cut a search short, only subprograms that need
      // no measurement (their structure searched already) are taken.
      if (cut_at_ >= 0 && (!o_.share_by_structure || !found_.count(keyed(subprograms_[i])))) continue;
      show_progress(k, i, false);
      entries_.push_back(examine(subprograms_[i], static_cast<int>(i)));
      examined[i] = 1;
      ++report_.searched;
    }
    if (cut_at_ >= 0 || report_.searched < report_.subprograms) {
      stop();
      record_not_reached(examined);
    }
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry& a, const Entry& b) { return a.index < b.index; });
    {
      ScopedSeconds t(report_.apply_seconds);
      choose_and_apply();
    }
    report_.seconds = watch_.seconds() - report_.check_baseline_seconds;
    show_progress(0, 0, true);
    return std::move(report_);
  }

 private:
  // A graph's hash (the subprogram's or a candidate's) keyed by what it is
  // measured beside: the layout its neighbours hold its values in and the
  // consumers fused after it. Keys costs in the database and the subprograms
  // shared by structure.
  static uint64_t in_context(uint64_t hash, const Subprogram& sp) {
    return hash_with_context(hash_with_context(hash, sp.context), sp.consumers_hash);
  }
  static uint64_t keyed(const Subprogram& sp) { return in_context(sp.hash, sp); }
  // The database key of a graph hash already in context.
  std::string db_key(uint64_t keyed_hash) const { return target_ + ":" + hex(keyed_hash); }

  double time_left() const { return o_.budget_seconds - watch_.seconds() - check_reserve_; }
  // Asks SearchOptions::check_reserve once, before the first measurement:
  // what the whole-model check will need is kept out of the budget from then.
  void reserve_for_check() {
    if (reserve_asked_ || !o_.check_reserve) return;
    reserve_asked_ = true;
    ScopedSeconds t(report_.check_baseline_seconds);
    check_reserve_ = std::max(0.0, o_.check_reserve());
    report_.check_reserve_seconds = check_reserve_;
    // The mutant generator's deadline moves with it.
    if (deadline_ != Stopwatch::Clock::time_point::max())
      deadline_ -= std::chrono::duration_cast<Stopwatch::Clock::duration>(
          std::chrono::duration<double>(std::min(check_reserve_, 1e7)));
  }
  bool out_of_time() const { return time_left() <= 0; }

  // The search's own budget: what it was given less the check's reserve
  // and the model compiled for the check.
  double searchs_budget() const {
    return std::max(0.0, o_.budget_seconds - std::min(check_reserve_, 1e7) - report_.check_baseline_seconds);
  }

  // Notes where the budget ended the search: inside subprogram cut_at_
  // (when one was cut short), and how many were not searched.
  void stop() {
    report_.budget_exhausted = true;
    const size_t n = subprograms_.size();
    const size_t not_searched = n - static_cast<size_t>(report_.searched);
    char buf[240];
    if (cut_at_ >= 0)
      std::snprintf(buf, sizeof buf,
                    "the budget of %.1f s ended the search inside subprogram %d of %zu (what it measured kept); "
                    "%zu of %zu not searched (the costliest by the static estimate were taken first)",
                    searchs_budget(), cut_at_ + 1, n, not_searched, n);
    else
      std::snprintf(buf, sizeof buf,
                    "the budget of %.1f s ended the search; %zu of %zu subprograms not searched (the costliest by "
                    "the static estimate were taken first)",
                    searchs_budget(), not_searched, n);
    report_.budget_note = buf;
  }

  // Notes in the database the subprograms the budget left unsearched (by
  // structure, unless a complete choice for it is there already), under
  // this budget: a later search with no larger budget keeps their originals
  // without searching them (pet_db.h, "cut").
  void record_not_reached(const std::vector<char>& examined) {
    std::set<uint64_t> done;
    for (size_t i = 0; i < subprograms_.size(); ++i) {
      const uint64_t h = keyed(subprograms_[i]);
      if (examined[i] || found_.count(h) || !done.insert(h).second) continue;
      const std::string key = db_key(h);
      const std::optional<double> before = db_.cut(key);
      if (!before && db_.choice(key)) continue;  // searched to the end by an earlier compile: replayed
      db_.record_cut(key, std::max(o_.budget_seconds, before.value_or(0)));
    }
  }

  // Progress on stderr: every subprogram when verbose, else every 2 s once
  // the search has run progress_after_seconds; and the end of a long search.
  void show_progress(size_t k, size_t i, bool done) {
    const double now = watch_.seconds();
    const bool long_search = now >= o_.progress_after_seconds;
    if (!o_.verbose && !(long_search && (done ? shown_ : now - last_shown_ >= 2))) return;
    last_shown_ = now;
    shown_ = true;
    int better = 0;
    for (const Entry& e : entries_) better += !e.candidates.empty();
    if (done)
      std::fprintf(stderr, "pet: [%5.1fs] searched %d of %zu subprograms, %d with a faster candidate, %d applied%s\n", now,
                   report_.searched, subprograms_.size(), better, report_.applied,
                   report_.budget_exhausted ? " (budget spent)" : "");
    else
      std::fprintf(stderr, "pet: [%5.1fs] subprogram %zu/%zu (#%zu): %s; %d faster so far, %d measured\n", now, k + 1,
                   subprograms_.size(), i + 1, subprograms_[i].describe().c_str(), better, report_.measured);
  }

  void note(const std::string& line) const {
    if (o_.verbose) std::fprintf(stderr, "pet: [%5.1fs] %s\n", watch_.seconds(), line.c_str());
  }

  // Seconds of a candidate (weights bound as constants), from the database
  // or measured and recorded; throws when the cost function does.
  double measure(const Subprogram& sp, const Graph& candidate, uint64_t hash) {
    const std::string key = db_key(in_context(hash, sp));
    if (std::optional<double> s = db_.cost(key)) {
      ++report_.db_hits;
      return *s;
    }
    std::unique_ptr<Graph> bound = bind_weights(candidate, sp);
    add_layout_context(*bound, sp.context);
    add_fused_consumers(*bound, g_, sp);
    Stopwatch w;
    const double s = cost_(*bound);
    const double took = w.seconds();
    report_.measure_seconds += took;
    longest_measure_ = std::max(longest_measure_, took);
    ++report_.measured;
    if (took > 1) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "measuring took %.2f s (%.3f ms a run)", took, s * 1e3);
      note(sp.describe() + ": " + buf);
    }
    db_.record_cost(key, s);
    return s;
  }

  // Whether a measurement may start: time is left and, from the
  // measurements so far (the longest of them: an original, or a candidate
  // with corrections, takes longer than the mean), it would end within the
  // budget.
  bool may_measure() const { return time_left() > longest_measure_; }

  // Verifies a mutant against the original (planned once per subprogram in
  // `verifier`), corrects it when partially equivalent; nullopt when it is
  // not usable.
  std::optional<Candidate> check(const Subprogram& sp, Verifier& verifier, const Mutant& m, int64_t elements) {
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
  std::vector<Mutant> mutants_of(const Subprogram& sp, const Graph& parent, bool dfs = true) {
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

  // The candidate an earlier search chose, rebuilt from the graph the
  // database keeps for it (pet_db.h, "graph"): no generation, no
  // verification. nullopt when there is none for this choice or it does not
  // decode to the graph recorded (then the choice is replayed).
  std::optional<Candidate> rebuild(const Subprogram& sp, const std::string& key, const std::vector<uint64_t>& path) {
    const std::optional<PetDb::Chosen> chosen = db_.chosen(key);
    if (!chosen || chosen->path != path) return std::nullopt;
    Candidate c;
    try {
      c.graph = decode_graph_line(chosen->graph);
    } catch (const Error& e) {
      report_.notes.push_back(sp.describe() + ": the database's graph of its choice not read (" + e.what() +
                              "); replayed");
      return std::nullopt;
    }
    c.hash = structural_hash(*c.graph);
    if (c.hash != chosen->hash || !same_signature(*c.graph, *sp.graph)) {
      report_.notes.push_back(sp.describe() + ": the database's graph of its choice is not the one recorded; replayed");
      return std::nullopt;
    }
    c.family = chosen->family;
    c.partial = chosen->partial;
    c.boxes = chosen->boxes;
    c.wrong_elements = chosen->wrong_elements;
    c.path = path;
    ++report_.rebuilt;
    return c;
  }

  // Keeps the chosen candidate's graph for the next compile (nothing when
  // it cannot be written as a line).
  void record_graph(const std::string& key, const Candidate& c) {
    std::optional<std::string> line = encode_graph_line(*c.graph);
    if (!line) return;
    db_.record_chosen(key, {c.path, c.family, c.partial, c.boxes, c.wrong_elements, c.hash, std::move(*line)});
  }

  // The candidate an earlier search chose, found again by its path of mutant
  // hashes (one generation per step, one verification): no search, and its
  // cost comes from the database.
  std::optional<Candidate> replay(const Subprogram& sp, const std::vector<uint64_t>& path) {
    std::shared_ptr<Graph> parent = sp.graph;
    std::string family;
    std::optional<Mutant> last;
    for (uint64_t h : path) {
      if (out_of_time()) return std::nullopt;
      auto has_h = [&](const Mutant& m) { return m.hash == h; };
      std::vector<Mutant> ms = mutants_of(sp, *parent, /*dfs=*/false);
      auto it = std::find_if(ms.begin(), ms.end(), has_h);
      if (it == ms.end()) {
        ms = mutants_of(sp, *parent);
        it = std::find_if(ms.begin(), ms.end(), has_h);
      }
      if (it == ms.end()) return std::nullopt;  // the generator changed: search again
      family += (family.empty() ? "" : "+") + it->family;
      parent = it->graph;
      last = *it;
    }
    if (!last) return std::nullopt;
    last->family = family;
    Verifier verifier(*sp.graph, verify_options(sp));
    std::optional<Candidate> c = check(sp, verifier, *last, output_elements(*sp.graph));
    if (c) c->path = path;
    return c;
  }

  // The verifier's random inputs: one seed per subprogram structure (its
  // mutants are functions of the structure, not of the seed). It stops once
  // a mutant is wrong on more elements than the search would correct.
  VerifyOptions verify_options(const Subprogram& sp) const {
    VerifyOptions vo;
    vo.tests = o_.verify_tests;
    vo.seed = o_.seed ^ sp.hash;
    vo.max_wrong_elements =
        o_.partial ? static_cast<int64_t>(o_.max_wrong_fraction * static_cast<double>(output_elements(*sp.graph))) : 0;
    return vo;
  }

  // Measures `c` and the original (once) for `f`: false when the budget
  // or a failing measurement stops it.
  bool measure_candidate(const Subprogram& sp, Found& f, Candidate& c, bool& original_failed) {
    if ((f.original_seconds < 0 && !db_.cost(db_key(in_context(sp.hash, sp)))) || !db_.cost(db_key(in_context(c.hash, sp))))
      reserve_for_check();
    if (f.original_seconds < 0) {
      if (original_failed || !may_measure()) return false;
      try {
        f.original_seconds = measure(sp, *sp.graph, sp.hash);
      } catch (const Error& err) {
        report_.notes.push_back(sp.describe() + ": not measured (" + err.what() + ")");
        original_failed = true;
        return false;
      }
    }
    if (!may_measure()) return false;
    try {
      c.seconds = measure(sp, *c.graph, c.hash);
    } catch (const Error& err) {
      report_.notes.push_back(sp.describe() + ": " + c.family + " not measured (" + err.what() + ")");
      return false;
    }
    c.record = static_cast<int>(f.records.size());
    f.records.push_back({"", c.family, c.partial, c.boxes, c.wrong_elements, c.seconds, f.original_seconds, false, -1});
    return true;
  }

  // The search proper for one subprogram: rounds of mutants; verified,
  // corrected and measured lazily, likeliest first by the static estimate
  // (before verification a mutant's own estimate stands in: a lower bound of
  // its corrected form's). Round 0 mutates the original, each later round
  // the mutants_per_round likeliest usable mutants of the round before (PET's
  // iterative GetMutants); then at most max_measured candidates are
  // measured. A mutant estimated past the limit is never verified. `cut` is
  // set when the budget cut the search short.
  Found search(const Subprogram& sp, bool& cut) {
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

  // The database's choice for a subprogram, replayed; nullopt when it has
  // none or the replay fails (then the subprogram is searched).
  std::optional<Found> from_database(const Subprogram& sp, const std::string& choice_key) {
    const std::optional<std::vector<uint64_t>> cached = db_.choice(choice_key);
    if (!cached) return std::nullopt;
    Found f;
    if (cached->empty()) {  // the original was kept: nothing to measure
      if (std::optional<double> s = db_.cost(db_key(keyed(sp)))) f.original_seconds = *s;
      return f;
    }
    std::optional<Candidate> c = rebuild(sp, choice_key, *cached);
    if (!c) {
      c = replay(sp, *cached);
      if (!c) return std::nullopt;
      record_graph(choice_key, *c);  // the next compile rebuilds it directly
    }
    bool original_failed = false;
    if (!measure_candidate(sp, f, *c, original_failed)) return std::nullopt;
    if (c->seconds < f.original_seconds) f.candidates.push_back(*c);
    return f;
  }

  Entry examine(const Subprogram& sp, int index) {
    Entry e;
    e.sp = &sp;
    e.index = index;
    e.label = sp.describe();
    const Found* f = nullptr;
    auto shared = o_.share_by_structure ? found_.find(keyed(sp)) : found_.end();
    std::optional<Found> local;
    if (shared != found_.end()) {
      f = &shared->second;
      ++report_.shared;
    } else {
      const std::string choice_key = db_key(keyed(sp));
      bool cut = false;
      // A budget no larger than the one that cut this subprogram's search
      // (or never reached it) before would cut it again: its choice so far
      // (or the original) is kept and nothing is measured. A larger budget
      // searches it again, with the costs measured before from the database.
      const std::optional<double> cut_before = db_.cut(choice_key);
      const bool resume = cut_before && o_.budget_seconds > *cut_before;
      if (!resume) local = from_database(sp, choice_key);
      if (local) {
        ++report_.replayed;
      } else if (cut_before && !resume) {
        local = Found{};
        if (std::optional<double> s = db_.cost(db_key(keyed(sp)))) local->original_seconds = *s;
        ++report_.left_to_larger_budget;
      } else {
        local = search(sp, cut);
        const std::vector<uint64_t> best =
            local->candidates.empty() ? std::vector<uint64_t>{} : local->candidates[0].path;
        db_.record_choice(choice_key, best);
        if (!local->candidates.empty()) record_graph(choice_key, local->candidates[0]);
        if (!cut) {
          if (cut_before) db_.record_cut(choice_key, std::nullopt);
        } else {
          db_.record_cut(choice_key, std::max(o_.budget_seconds, cut_before.value_or(0)));
          if (cut_at_ < 0) cut_at_ = index;
        }
      }
      local->index = index;
      if (o_.share_by_structure && !cut) f = &found_.emplace(keyed(sp), std::move(*local)).first->second;
      else f = &*local;
    }
    // The entry: the found candidates, their report lines under this label.
    e.original_seconds = f->original_seconds;
    const int base = static_cast<int>(report_.candidates.size());
    for (CandidateRecord r : f->records) {
      r.subprogram = e.label;
      r.same_as = f->index == index ? -1 : f->index;
      report_.candidates.push_back(std::move(r));
    }
    for (Candidate c : f->candidates) {
      c.record += base;
      e.candidates.push_back(std::move(c));
    }
    if (!e.candidates.empty() || !f->records.empty()) {
      char ratio[32] = "";
      if (!e.candidates.empty())
        std::snprintf(ratio, sizeof ratio, " %.2fx", e.candidates[0].seconds / e.original_seconds);
      note(e.label + ": " + std::to_string(f->records.size()) + " measured, " +
           (e.candidates.empty() ? std::string("original kept") : "best " + e.candidates[0].family + ratio));
    }
    return e;
  }

  // Beam search over the subprograms in order: a state is a choice per
  // subprogram so far (-1: the original); overlapping subprograms (a region's
  // subsets, parallel groups) cannot both be replaced.
  void choose_and_apply() {
    struct State {
      std::vector<int> pick;       // per entry
      std::set<const Node*> used;  // nodes of replaced subprograms
      double saved = 0;            // seconds saved
    };
    const size_t width = static_cast<size_t>(std::max(1, o_.beam));
    std::vector<State> beam{State{}};
    for (const Entry& e : entries_) {
      std::vector<State> next;
      for (const State& s : beam) {
        State keep = s;
        keep.pick.push_back(-1);
        next.push_back(std::move(keep));
        bool overlaps = false;
        for (const Node* n : e.sp->nodes) overlaps = overlaps || s.used.count(n);
        if (overlaps) continue;
        for (size_t c = 0; c < e.candidates.size(); ++c) {
          if (e.candidates[c].seconds > e.original_seconds * (1 - o_.min_candidate_gain)) continue;
          State t = s;
          t.pick.push_back(static_cast<int>(c));
          t.used.insert(e.sp->nodes.begin(), e.sp->nodes.end());
          t.saved += e.original_seconds - e.candidates[c].seconds;
          next.push_back(std::move(t));
        }
      }
      std::stable_sort(next.begin(), next.end(), [](const State& a, const State& b) { return a.saved > b.saved; });
      if (next.size() > width) next.resize(width);
      beam = std::move(next);
    }
    const State& best = beam.front();
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.original_seconds > 0) report_.cost_before += e.original_seconds;
      const int pick = i < best.pick.size() ? best.pick[i] : -1;
      if (pick < 0) {
        if (e.original_seconds > 0) report_.cost_after += e.original_seconds;
        continue;
      }
      const Candidate& c = e.candidates[static_cast<size_t>(pick)];
      report_.cost_after += c.seconds;
      splice(g_, *e.sp, *c.graph);
      ++report_.applied;
      report_.candidates[static_cast<size_t>(c.record)].applied = true;
      note("applied " + c.family + " to " + e.label);
    }
  }

  Graph& g_;
  const SearchOptions& o_;
  const CostFn& cost_;
  PetDb& db_;
  std::string target_;
  Stopwatch watch_;
  Stopwatch::Clock::time_point deadline_ = Stopwatch::Clock::time_point::max();
  double longest_measure_ = 0;  // seconds of the longest measurement so far
  bool reserve_asked_ = false;
  double check_reserve_ = 0;  // seconds kept for the whole-model check (reserve_for_check)
  int cut_at_ = -1;  // the subprogram the budget cut short, if any
  double last_shown_ = 0;
  bool shown_ = false;
  std::vector<Subprogram> subprograms_;
  std::map<uint64_t, Found> found_;  // by subprogram structure
  std::vector<Entry> entries_;
  SearchReport report_;
};

}  // namespace

SearchReport optimize_program(Graph& g, const SearchOptions& opts, const CostFn& cost, PetDb& db,
                              const std::string& target) {
  return Search(g, opts, cost, db, target).run();
}

}  // namespace tessera::pet
