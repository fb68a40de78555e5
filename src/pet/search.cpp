// PET's program optimizer: candidates per subprogram, then a beam search
// over the subprograms (pet/search.h says what keeps it within its budget).
// The search of one subprogram's mutants is in search_rounds.cpp, the replay
// of the database's choices in search_replay.cpp (pet/search_internal.h).
#include "pet/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <set>

#include "pet/estimate.h"
#include "pet/fused_consumers.h"
#include "pet/layout_context.h"
#include "pet/search_internal.h"
#include "pet/subprogram.h"
#include "support/error.h"
#include "support/stopwatch.h"

namespace tessera::pet {

namespace search_detail {

namespace {

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

}  // namespace

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
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

Search::Search(Graph& g, const SearchOptions& o, const CostFn& cost, PetDb& db, const std::string& target)
    : g_(g), o_(o), cost_(cost), db_(db), target_(target) {
  // The budget's end as a clock time, for the mutant generator (a budget
  // of a year or more: no deadline).
  if (o_.budget_seconds < 3e7)
    deadline_ = Stopwatch::Clock::now() + std::chrono::duration_cast<Stopwatch::Clock::duration>(
                                              std::chrono::duration<double>(std::max(0.0, o_.budget_seconds)));
}

SearchReport Search::run() {
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

// Asks SearchOptions::check_reserve once, before the first measurement:
// what the whole-model check will need is kept out of the budget from then.
void Search::reserve_for_check() {
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

// The search's own budget: what it was given less the check's reserve
// and the model compiled for the check.
double Search::searchs_budget() const {
  return std::max(0.0, o_.budget_seconds - std::min(check_reserve_, 1e7) - report_.check_baseline_seconds);
}

// Notes where the budget ended the search: inside subprogram cut_at_
// (when one was cut short), and how many were not searched.
void Search::stop() {
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
void Search::record_not_reached(const std::vector<char>& examined) {
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
void Search::show_progress(size_t k, size_t i, bool done) {
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

// A line on stderr when verbose.
void Search::note(const std::string& line) const {
  if (o_.verbose) std::fprintf(stderr, "pet: [%5.1fs] %s\n", watch_.seconds(), line.c_str());
}

// Seconds of a candidate (weights bound as constants), from the database
// or measured and recorded; throws when the cost function does.
double Search::measure(const Subprogram& sp, const Graph& candidate, uint64_t hash) {
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

// Measures `c` and the original (once) for `f`: false when the budget
// or a failing measurement stops it.
bool Search::measure_candidate(const Subprogram& sp, Found& f, Candidate& c, bool& original_failed) {
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

// What the beam search sees of one subprogram: its candidates, searched,
// shared with a subprogram of the same structure or from the database.
Entry Search::examine(const Subprogram& sp, int index) {
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
void Search::choose_and_apply() {
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

}  // namespace search_detail

SearchReport optimize_program(Graph& g, const SearchOptions& opts, const CostFn& cost, PetDb& db,
                              const std::string& target) {
  return search_detail::Search(g, opts, cost, db, target).run();
}

}  // namespace tessera::pet
