// The choices an earlier search kept in the database, rebuilt from their
// graphs or replayed by their paths of mutants (pet/search_internal.h).
#include <algorithm>

#include "pet/graph_line.h"
#include "pet/search_internal.h"
#include "support/error.h"

namespace tessera::pet::search_detail {

namespace {

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

}  // namespace

// The candidate an earlier search chose, rebuilt from the graph the
// database keeps for it (pet_db.h, "graph"): no generation, no
// verification. nullopt when there is none for this choice or it does not
// decode to the graph recorded (then the choice is replayed).
std::optional<Candidate> Search::rebuild(const Subprogram& sp, const std::string& key, const std::vector<uint64_t>& path) {
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
void Search::record_graph(const std::string& key, const Candidate& c) {
  std::optional<std::string> line = encode_graph_line(*c.graph);
  if (!line) return;
  db_.record_chosen(key, {c.path, c.family, c.partial, c.boxes, c.wrong_elements, c.hash, std::move(*line)});
}

// The candidate an earlier search chose, found again by its path of mutant
// hashes (one generation per step, one verification): no search, and its
// cost comes from the database.
std::optional<Candidate> Search::replay(const Subprogram& sp, const std::vector<uint64_t>& path) {
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

// The database's choice for a subprogram, replayed; nullopt when it has
// none or the replay fails (then the subprogram is searched).
std::optional<Found> Search::from_database(const Subprogram& sp, const std::string& choice_key) {
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

}  // namespace tessera::pet::search_detail
