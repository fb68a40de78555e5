// PET's program optimizer: candidates per subprogram, then a beam search
// over the subprograms (pet/search.h).
#include "pet/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "ops/registry.h"
#include "pet/corrector.h"
#include "pet/mutants.h"
#include "pet/subprogram.h"
#include "pet/verifier.h"
#include "support/error.h"

namespace tessera::pet {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A candidate replacement of one subprogram.
struct Candidate {
  std::string family;
  std::shared_ptr<Graph> graph;  // same inputs and outputs as the subprogram (weights as inputs), corrected
  std::shared_ptr<Graph> mutant; // as generated (mutated again in the next round)
  uint64_t hash = 0;             // structural hash of `graph` (weights are inputs: contents play no part)
  bool partial = false;
  int boxes = 0;
  int64_t wrong_elements = 0;
  double seconds = -1;           // measured; < 0: not measured
  double estimate = 0;           // static guess, to order measurements
  std::vector<uint64_t> path;    // hashes of the mutants from the original to `mutant`
};

// What the search knows about one subprogram.
struct Entry {
  const Subprogram* sp = nullptr;
  std::string label;
  double original_seconds = -1;
  std::vector<Candidate> candidates;  // measured, cheaper than the original
};

std::string describe(const Subprogram& sp) { return sp.describe(); }

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

// A rough static estimate of a candidate's time, only to order candidates
// for measurement (the search decides by measurements): multiply-adds at a
// rate that is higher for convolutions the Winograd pass can take (3x3,
// stride 1, dilation 1), bytes moved by the data-movement ops, and a fixed
// cost per kernel. Weight-only ops are free: they fold at compile time.
double estimate(const Graph& g, size_t num_activations) {
  std::set<const Value*> weight_only;
  for (size_t i = num_activations; i < g.inputs().size(); ++i) weight_only.insert(g.inputs()[i]);
  double s = 0;
  for (const auto& n : g.nodes()) {
    bool weights = true;
    for (const Value* v : n->inputs)
      if (v && !v->constant && !weight_only.count(v)) weights = false;
    if (weights) {
      for (const Value* v : n->outputs)
        if (v) weight_only.insert(v);
      continue;
    }
    double rate = 40e9;  // FLOP/s of a direct convolution or product
    if (n->op_type == "Conv") {
      const Attribute* k = n->attr("kernel_shape");
      const Attribute* st = n->attr("strides");
      const Attribute* d = n->attr("dilations");
      auto all = [](const Attribute* a, int64_t v) {
        if (!a) return v == 1;
        for (int64_t x : a->ints) if (x != v) return false;
        return true;
      };
      const Value* w = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
      const bool k3 = k ? all(k, 3) : (w && w->type.dims.size() == 4 && w->type.dims[2] == 3 && w->type.dims[3] == 3);
      if (k3 && all(st, 1) && all(d, 1)) rate *= 2;  // Winograd F(2x2) or better
    }
    s += node_flops(*n) / rate + node_bytes(*n) / 20e9 + 20e-6;
  }
  return s;
}

int64_t output_elements(const Graph& g) {
  int64_t n = 0;
  for (const Value* v : g.outputs()) {
    int64_t e = 1;
    for (int64_t d : v->type.dims) e *= d;
    n += e;
  }
  return n;
}

class Search {
 public:
  Search(Graph& g, const SearchOptions& o, const CostFn& cost, PetDb& db, const std::string& target)
      : g_(g), o_(o), cost_(cost), db_(db), target_(target), start_(Clock::now()) {}

  SearchReport run() {
    subprograms_ = find_subprograms(g_, SubprogramOptions{});
    for (const Subprogram& sp : subprograms_) {
      if (out_of_time()) {
        report_.budget_exhausted = true;
        report_.notes.push_back("budget spent before " + describe(sp));
        continue;
      }
      entries_.push_back(examine(sp));
      ++report_.subprograms;
    }
    choose_and_apply();
    report_.seconds = elapsed();
    return std::move(report_);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  bool out_of_time() const { return elapsed() > o_.budget_seconds; }

  void progress(const std::string& line) const {
    if (o_.verbose) std::fprintf(stderr, "pet: [%5.1fs] %s\n", elapsed(), line.c_str());
  }

  // The candidate as the target compiles it: weights bound as constants.
  double measure(const Subprogram& sp, const Graph& candidate, uint64_t hash) {
    const std::string key = target_ + ":" + hex(hash);
    if (std::optional<double> s = db_.cost(key)) {
      ++report_.db_hits;
      return *s;
    }
    std::unique_ptr<Graph> bound = bind_weights(candidate, sp);
    const auto t0 = Clock::now();
    const double s = cost_(*bound);
    report_.measure_seconds += since(t0);
    ++report_.measured;
    db_.record_cost(key, s);
    return s;
  }

  // A mutant examined against the original: verified, corrected when
  // partially equivalent; nullopt when it is not usable.
  std::optional<Candidate> check(const Subprogram& sp, const Mutant& m, int64_t elements) {
    VerifyOptions vo;
    vo.tests = o_.verify_tests;
    vo.seed = o_.seed ^ m.hash;
    auto t0 = Clock::now();
    const VerifyResult r = verify(*sp.graph, *m.graph, vo);
    report_.verify_seconds += since(t0);
    Candidate c;
    c.family = m.family;
    c.mutant = m.graph;
    if (r.verdict == Verdict::Equivalent) {
      ++report_.equivalent;
      if (!o_.equivalent) return std::nullopt;
      c.graph = m.graph;
    } else if (r.verdict == Verdict::Partial) {
      ++report_.partial;
      if (!o_.partial ||
          static_cast<double>(r.wrong_elements()) > o_.max_wrong_fraction * static_cast<double>(elements))
        return std::nullopt;
      std::vector<std::vector<Box>> wrong;
      for (const OutputCheck& oc : r.outputs) wrong.push_back(oc.wrong);
      c.partial = true;
      c.boxes = static_cast<int>(r.wrong_boxes());
      c.wrong_elements = r.wrong_elements();
      try {
        t0 = Clock::now();
        c.graph = correct(*sp.graph, *m.graph, wrong);
        report_.correct_seconds += since(t0);
      } catch (const Error& err) {
        report_.notes.push_back(describe(sp) + ": " + m.family + " not corrected (" + err.what() + ")");
        return std::nullopt;
      }
    } else {
      ++report_.different;
      return std::nullopt;
    }
    c.hash = structural_hash(*c.graph);
    c.estimate = estimate(*c.graph, sp.num_activations);
    return c;
  }

  std::vector<Mutant> mutants_of(const Subprogram& sp, const Graph& parent) {
    MutantOptions mo;
    const auto t0 = Clock::now();
    std::vector<Mutant> ms = generate_mutants(parent, sp.num_activations, mo, nullptr, &sp.weight_tensors);
    report_.generate_seconds += since(t0);
    report_.mutants += static_cast<int>(ms.size());
    std::erase_if(ms, [&](const Mutant& m) {
      // Equal only for these weights: the verifier, which draws the weights
      // at random, cannot vouch for such a mutant.
      return m.weight_dependent || (!o_.only_family.empty() && m.family != o_.only_family);
    });
    for (Mutant& m : ms) m.hash = structural_hash(*m.graph);
    return ms;
  }

  // Mutants of `parent` (the original or a mutant of it), examined against
  // the original, each structure once.
  std::vector<Candidate> mutate(const Subprogram& sp, const Graph& parent, const std::vector<uint64_t>& path,
                                std::set<uint64_t>& seen) {
    std::vector<Candidate> out;
    const int64_t elements = output_elements(*sp.graph);
    for (const Mutant& m : mutants_of(sp, parent)) {
      if (!seen.insert(m.hash).second) continue;
      std::optional<Candidate> c = check(sp, m, elements);
      if (!c) continue;
      c->path = path;
      c->path.push_back(m.hash);
      out.push_back(std::move(*c));
    }
    return out;
  }

  // The candidate a earlier search chose, found again by its path of mutant
  // hashes (one generation per step, one verification): no search, and its
  // cost comes from the database.
  std::optional<Candidate> replay(const Subprogram& sp, const std::vector<uint64_t>& path) {
    std::shared_ptr<Graph> parent = sp.graph;
    std::string family;
    const Mutant* last = nullptr;
    std::vector<Mutant> ms;
    for (uint64_t h : path) {
      ms = mutants_of(sp, *parent);
      auto it = std::find_if(ms.begin(), ms.end(), [&](const Mutant& m) { return m.hash == h; });
      if (it == ms.end()) return std::nullopt;  // the generator changed: search again
      family += (family.empty() ? "" : "+") + it->family;
      parent = it->graph;
      last = &*it;
    }
    if (!last) return std::nullopt;
    Mutant m = *last;
    m.family = family;
    std::optional<Candidate> c = check(sp, m, output_elements(*sp.graph));
    if (c) c->path = path;
    return c;
  }

  Entry examine(const Subprogram& sp) {
    Entry e;
    e.sp = &sp;
    e.label = describe(sp);
    const std::string choice_key = target_ + ":" + hex(sp.hash);
    try {
      e.original_seconds = measure(sp, *sp.graph, structural_hash(*sp.graph));
    } catch (const Error& err) {
      report_.notes.push_back(e.label + ": not measured (" + err.what() + ")");
      return e;
    }
    std::vector<Candidate> pool;
    const std::optional<std::vector<uint64_t>> cached = db_.choice(choice_key);
    if (cached && cached->empty()) {
      progress(e.label + ": original kept (database)");
      return e;
    }
    if (cached)
      if (std::optional<Candidate> c = replay(sp, *cached)) pool.push_back(std::move(*c));
    if (pool.empty()) {
      std::set<uint64_t> seen{structural_hash(*sp.graph)};
      pool = mutate(sp, *sp.graph, {}, seen);
      // Rounds of mutating the mutants of the round before (PET's iterative
      // GetMutants), each examined against the original.
      std::vector<Candidate> frontier = pool;
      for (int round = 1; round < o_.rounds && !frontier.empty() && !out_of_time(); ++round) {
        std::vector<Candidate> next;
        const size_t n = std::min<size_t>(frontier.size(), static_cast<size_t>(o_.mutants_per_round));
        for (size_t i = 0; i < n; ++i)
          for (Candidate& c : mutate(sp, *frontier[i].mutant, frontier[i].path, seen)) {
            c.family = frontier[i].family + "+" + c.family;
            next.push_back(std::move(c));
          }
        pool.insert(pool.end(), next.begin(), next.end());
        frontier = std::move(next);
      }
    }
    // The likeliest first, by the static estimate; those estimated much
    // slower than the original are not measured at all.
    const double original_estimate = estimate(*sp.graph, sp.num_activations);
    if (o_.max_estimate_ratio > 0)
      std::erase_if(pool, [&](const Candidate& c) { return c.estimate > o_.max_estimate_ratio * original_estimate; });
    std::stable_sort(pool.begin(), pool.end(),
                     [](const Candidate& a, const Candidate& b) { return a.estimate < b.estimate; });
    int measured = 0;
    for (Candidate& c : pool) {
      if (measured >= o_.max_measured || out_of_time()) break;
      try {
        c.seconds = measure(sp, *c.graph, c.hash);
      } catch (const Error& err) {
        report_.notes.push_back(e.label + ": " + c.family + " not measured (" + err.what() + ")");
        continue;
      }
      ++measured;
      report_.candidates.push_back(
          {e.label, c.family, c.partial, c.boxes, c.wrong_elements, c.seconds, e.original_seconds, false});
      if (c.seconds < e.original_seconds) e.candidates.push_back(std::move(c));
    }
    std::sort(e.candidates.begin(), e.candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
    char ratio[32] = "";
    if (!e.candidates.empty()) std::snprintf(ratio, sizeof ratio, " %.2fx", e.candidates[0].seconds / e.original_seconds);
    progress(e.label + ": " + std::to_string(pool.size()) + " candidates, " + std::to_string(measured) +
             " measured, " + (e.candidates.empty() ? std::string("original kept") : "best " + e.candidates[0].family + ratio));
    if (!out_of_time()) db_.record_choice(choice_key, e.candidates.empty() ? std::vector<uint64_t>{} : e.candidates[0].path);
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
    std::vector<State> beam{State{}};
    for (const Entry& e : entries_) {
      std::vector<State> next;
      for (const State& s : beam) {
        State keep = s;
        keep.pick.push_back(-1);
        next.push_back(std::move(keep));
        for (size_t c = 0; c < e.candidates.size(); ++c) {
          bool overlaps = false;
          for (const Node* n : e.sp->nodes) overlaps = overlaps || s.used.count(n);
          if (overlaps) break;
          State t = s;
          t.pick.push_back(static_cast<int>(c));
          t.used.insert(e.sp->nodes.begin(), e.sp->nodes.end());
          t.saved += e.original_seconds - e.candidates[c].seconds;
          next.push_back(std::move(t));
        }
      }
      std::stable_sort(next.begin(), next.end(), [](const State& a, const State& b) { return a.saved > b.saved; });
      if (next.size() > static_cast<size_t>(std::max(1, o_.beam))) next.resize(static_cast<size_t>(std::max(1, o_.beam)));
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
      for (CandidateRecord& r : report_.candidates)
        if (r.subprogram == e.label && r.family == c.family && r.seconds == c.seconds) r.applied = true;
      progress("applied " + c.family + " to " + e.label);
    }
  }

  Graph& g_;
  const SearchOptions& o_;
  const CostFn& cost_;
  PetDb& db_;
  std::string target_;
  Clock::time_point start_;
  std::vector<Subprogram> subprograms_;
  std::vector<Entry> entries_;
  SearchReport report_;
};

}  // namespace

std::string SearchReport::to_text() const {
  std::ostringstream o;
  o.precision(3);
  o << "PET: " << subprograms << " subprograms searched, " << mutants << " mutants (" << equivalent
    << " equivalent, " << partial << " partially equivalent, " << different << " different), " << measured
    << " measured, " << db_hits << " costs from the database, " << applied << " applied; " << seconds << " s"
    << (budget_exhausted ? " (budget spent)" : "") << " (generating " << generate_seconds << " s, verifying "
    << verify_seconds << " s, correcting " << correct_seconds << " s, measuring " << measure_seconds << " s)\n";
  if (cost_before > 0)
    o << "  summed cost of the subprograms: " << cost_before * 1e3 << " ms -> " << cost_after * 1e3 << " ms\n";
  std::string last;
  for (const CandidateRecord& c : candidates) {
    if (c.subprogram != last) {
      o << "  " << c.subprogram << ": original " << c.original_seconds * 1e3 << " ms\n";
      last = c.subprogram;
    }
    o << "    " << (c.applied ? "* " : "  ") << c.family << (c.partial ? " (partial, " : " (equivalent")
      << (c.partial ? std::to_string(c.boxes) + " boxes corrected" : "") << ") " << c.seconds * 1e3 << " ms\n";
  }
  for (const std::string& n : notes) o << "  note: " << n << "\n";
  return o.str();
}

SearchReport optimize_program(Graph& g, const SearchOptions& opts, const CostFn& cost, PetDb& db,
                              const std::string& target) {
  return Search(g, opts, cost, db, target).run();
}

}  // namespace tessera::pet
