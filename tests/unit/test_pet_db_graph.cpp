// PET's database keeping the chosen candidates' graphs (pet/graph_line.h,
// pet/pet_db.h "graph"): a graph written as a line and read back is the same
// graph (structural hash, and outputs by the reference interpreter); a line
// cut or altered is refused with an Error, never a crash; a second search
// with the database rebuilds its choices with no mutant generated, verified
// or measured and leaves the model the first left; a database of the earlier
// form (no graph lines) or with a corrupted graph or choice is replayed or
// searched again, with the same result.
#include <gtest/gtest.h>

#include <bit>
#include <fstream>
#include <functional>
#include <sstream>

#include "ops/registry.h"
#include "opt/passes.h"
#include "pet/graph_line.h"
#include "pet/mutants.h"
#include "pet/search.h"
#include "pet/subprogram.h"
#include "pet_test_util.h"
#include "support/error.h"
#include "temp_folder.h"

namespace tessera::pet {
namespace {

using testing::pet::ModelBuilder;
using testing::pet::dilation_averse;
using testing::pet::expect_same_outputs;
using testing::pet::random_inputs;

const testing::TempFolder& folder() {
  static const testing::TempFolder f("pet-db-graph");
  return f;
}

// Two dilated convs (D2H: fully equivalent mutants win under
// dilation_averse) then, at batch 2, a plain 3x3 conv (N2H: partially
// equivalent, corrected at the seam).
std::unique_ptr<Graph> model() {
  ModelBuilder b;
  Value* x = b.input("x", {2, 4, 8, 8});
  x = b.relu(b.conv(x, 4, 3, 3, {2, 2, 2, 2}, "d1", 1, 2), "r1");
  x = b.relu(b.conv(x, 5, 3, 3, {2, 2, 2, 2}, "d2", 1, 2), "r2");
  x = b.relu(b.conv(x, 6, 3, 3, {1, 1, 1, 1}, "plain"), "r3");
  b.g->add_output(x);
  infer_graph(*b.g);
  return std::move(b.g);
}

// Dilated convs cost much; otherwise a graph with more nodes is cheaper, so
// the corrected N2H mutant (more nodes than one conv) wins the plain conv.
double cost(const Graph& g) {
  return (testing::pet::has_dilated_conv(g) ? 100.0 : 1.0) / static_cast<double>(g.nodes().size());
}

SearchOptions options() {
  SearchOptions o;
  o.rounds = 1;
  o.max_estimate_ratio = 0;  // the fake costs decide alone
  o.stop_after_losers = 0;
  o.max_measured = 100;  // every candidate measured: the corrected N2H among them
  o.progress_after_seconds = 1e9;
  return o;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& l : lines) out << l << "\n";
}

// The first search of model() with a database file at `path` (made anew):
// the model it leaves.
std::unique_ptr<Graph> first_search(const std::string& path, SearchReport* report = nullptr) {
  std::filesystem::remove(path);
  std::unique_ptr<Graph> g = model();
  PetDb db(path);
  SearchReport r = optimize_program(*g, options(), cost, db, "test");
  if (report) *report = std::move(r);
  return g;
}

TEST(PetGraphLine, EveryMutantReadsBackAsTheSameGraph) {
  std::unique_ptr<Graph> g = model();
  const std::vector<Subprogram> sps = find_subprograms(*g, SubprogramOptions{});
  int checked = 0;
  for (const Subprogram& sp : sps)
    for (const Mutant& m : generate_mutants(sp)) {
      const std::optional<std::string> line = encode_graph_line(*m.graph);
      ASSERT_TRUE(line) << m.family;
      EXPECT_EQ(line->find('\t'), std::string::npos);
      EXPECT_EQ(line->find('\n'), std::string::npos);
      std::unique_ptr<Graph> back = decode_graph_line(*line);
      EXPECT_EQ(structural_hash(*back), structural_hash(*m.graph)) << m.family;
      // Written again, the same line: nothing lost or added.
      EXPECT_EQ(encode_graph_line(*back), line) << m.family;
      expect_same_outputs(*m.graph, *back, random_inputs(*m.graph, 5), 0);
      ++checked;
    }
  EXPECT_GT(checked, 10);
}

TEST(PetGraphLine, ConstantsAttributesAndOddNamesSurvive) {
  Graph g;
  g.opset = 17;
  Value* x = g.add_input("x in%.\x01", {DType::F32, {2, 3}, true});
  std::vector<float> mask(6, 0.0f);
  mask[1] = 1.0f, mask[2] = -0.0f, mask[5] = 1e-30f;
  Value* m = g.add_constant("mask", Tensor::from<float>({2, 3}, mask));
  Tensor cond(DType::Bool, {2, 3});
  for (int i : {0, 3, 4}) cond.data<bool>()[i] = true;
  Value* y = g.add_node("Mul", {x, m}, {"y"}, {}, "mul")->outputs[0];
  Value* z = g.add_node("Where", {g.add_constant("cond", cond), y, x}, {"-"}, {}, "")->outputs[0];
  AttrMap a;
  a["perm"] = Attribute::of_ints({1, 0});
  a["note"] = Attribute::of_string("a b\tc");  // attributes Transpose ignores
  a["fs"] = Attribute::of_floats({0.1f, -2.5f});
  g.add_output(g.add_node("Transpose", {z}, {"."}, a, "t")->outputs[0]);
  infer_graph(g);
  const std::optional<std::string> line = encode_graph_line(g);
  ASSERT_TRUE(line);
  std::unique_ptr<Graph> back = decode_graph_line(*line);
  EXPECT_EQ(structural_hash(*back), structural_hash(g));
  EXPECT_EQ(back->inputs()[0]->name, "x in%.\x01");
  EXPECT_EQ(back->outputs()[0]->name, ".");
  EXPECT_EQ(back->nodes().back()->attr("note")->s, "a b\tc");
  EXPECT_EQ(back->nodes().back()->attr("fs")->floats, (std::vector<float>{0.1f, -2.5f}));
  EXPECT_EQ(back->outputs()[0]->type, g.outputs()[0]->type);
  const Tensor& mb = *back->find_value("mask")->constant;
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(std::bit_cast<uint32_t>(mb.data<float>()[i]), std::bit_cast<uint32_t>(mask[i]));
  expect_same_outputs(g, *back, random_inputs(g, 9), 0);
  // A graph with a subgraph attribute is not written (nullopt, no line).
  AttrMap sub;
  sub["body"] = Attribute::of_graph(std::make_shared<Graph>());
  g.add_node("Identity", {x}, {"i"}, sub, "with_subgraph");
  EXPECT_FALSE(encode_graph_line(g));
}

TEST(PetGraphLine, ACutOrAlteredLineIsAnErrorNeverACrash) {
  std::unique_ptr<Graph> g = model();
  const std::vector<Subprogram> sps = find_subprograms(*g, SubprogramOptions{});
  const std::vector<Mutant> ms = generate_mutants(sps.back());
  ASSERT_FALSE(ms.empty());
  const std::string line = *encode_graph_line(*ms.front().graph);
  // Cut after every token: an Error each time (the counts say more follows).
  int refused = 0, tokens = 0;
  for (size_t at = line.find(' '); at != std::string::npos; at = line.find(' ', at + 1), ++tokens) {
    try {
      decode_graph_line(line.substr(0, at));
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, tokens);
  EXPECT_THROW(decode_graph_line("g0" + line.substr(2)), Error);  // another version
  EXPECT_THROW(decode_graph_line(line + " 7"), Error);             // text after the end
  EXPECT_THROW(decode_graph_line(""), Error);
  // Every token replaced by junk, by a huge count, by a negative one: an
  // Error or a graph (some tokens are free-form); never a crash or a hang.
  std::vector<std::string> toks;
  std::istringstream in(line);
  for (std::string t; in >> t;) toks.push_back(t);
  for (const char* junk : {"%zz", "99999999999", "-3", "x"}) {
    for (size_t i = 0; i < toks.size(); ++i) {
      std::string altered;
      for (size_t k = 0; k < toks.size(); ++k) altered += (k ? " " : "") + (k == i ? std::string(junk) : toks[k]);
      try {
        decode_graph_line(altered);
      } catch (const Error&) {
      }
    }
  }
}

TEST(PetDbGraph, ASecondSearchRebuildsItsChoicesWithNoMutantVerifiedOrMeasured) {
  const std::string path = folder().path("second.tsv");
  SearchReport r1;
  std::unique_ptr<Graph> first = first_search(path, &r1);
  ASSERT_EQ(r1.applied, 3) << r1.to_text();
  bool partial_applied = false;
  for (const CandidateRecord& c : r1.candidates) partial_applied = partial_applied || (c.applied && c.partial);
  ASSERT_TRUE(partial_applied) << "the test wants a corrected candidate among the choices\n" << r1.to_text();

  std::unique_ptr<Graph> second = model();
  const std::unique_ptr<Graph> original = model();
  int calls = 0;
  PetDb db(path);  // read back from the file
  const SearchReport r2 =
      optimize_program(*second, options(), [&](const Graph& c) { return ++calls, cost(c); }, db, "test");
  EXPECT_EQ(r2.mutants, 0) << r2.to_text();
  EXPECT_EQ(r2.verified, 0);
  EXPECT_EQ(r2.measured, 0);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(r2.replayed, 3);
  EXPECT_EQ(r2.rebuilt, 3);
  EXPECT_EQ(r2.applied, 3);
  EXPECT_EQ(structural_hash(*second), structural_hash(*first));
  // The report still names each choice's family and kind.
  for (const CandidateRecord& c : r1.candidates) {
    if (!c.applied) continue;
    bool found = false;
    for (const CandidateRecord& d : r2.candidates)
      found = found || (d.applied && d.family == c.family && d.partial == c.partial && d.boxes == c.boxes);
    EXPECT_TRUE(found) << c.family;
  }
  fold_constants(*second);
  expect_same_outputs(*original, *second, random_inputs(*original, 3), 1e-5);
}

TEST(PetDbGraph, ADatabaseWithoutGraphsIsReplayedAndGainsThem) {
  const std::string path = folder().path("old.tsv");
  std::unique_ptr<Graph> first = first_search(path);
  // The earlier form: no "graph" lines.
  std::vector<std::string> lines = read_lines(path);
  std::erase_if(lines, [](const std::string& l) { return l.rfind("graph\t", 0) == 0; });
  write_lines(path, lines);
  {
    std::unique_ptr<Graph> g = model();
    PetDb db(path);
    const SearchReport r = optimize_program(*g, options(), cost, db, "test");
    EXPECT_EQ(r.replayed, 3);
    EXPECT_EQ(r.rebuilt, 0);
    EXPECT_GT(r.mutants, 0);  // the paths' mutants generated again
    EXPECT_EQ(r.measured, 0);
    EXPECT_EQ(structural_hash(*g), structural_hash(*first));
  }
  std::unique_ptr<Graph> g = model();
  PetDb db(path);
  const SearchReport r = optimize_program(*g, options(), cost, db, "test");
  EXPECT_EQ(r.rebuilt, 3);
  EXPECT_EQ(r.mutants, 0);
  EXPECT_EQ(structural_hash(*g), structural_hash(*first));
}

// Rewrites the last field of every "graph" line with `alter`.
void alter_graphs(const std::string& path, const std::function<std::string(const std::string&)>& alter) {
  std::vector<std::string> lines = read_lines(path);
  for (std::string& l : lines)
    if (l.rfind("graph\t", 0) == 0) {
      const size_t tab = l.rfind('\t');
      l = l.substr(0, tab + 1) + alter(l.substr(tab + 1));
    }
  write_lines(path, lines);
}

TEST(PetDbGraph, ACorruptedGraphIsReplayedInsteadWithTheSameResult) {
  const std::unique_ptr<Graph> original = model();
  using Alter = std::function<std::string(const std::string&)>;
  const std::vector<std::pair<std::string, Alter>> corruptions = {
      {"cut in half", [](const std::string& s) { return s.substr(0, s.size() / 2); }},
      {"an attribute changed (still well-formed)",
       [](const std::string& s) {
         // Conv's "group" attribute: kind 1 (Int), value 1 -> 2.
         const size_t at = s.find(" group 1 1 ");
         if (at == std::string::npos) ADD_FAILURE() << "no group attribute in " << s;
         return at == std::string::npos ? s : s.substr(0, at) + " group 1 2" + s.substr(at + 10);
       }},
      {"a foreign version", [](const std::string& s) { return "g9" + s.substr(2); }},
  };
  for (const auto& [what, alter] : corruptions) {
    const std::string path = folder().path("corrupt.tsv");
    std::unique_ptr<Graph> first = first_search(path);
    alter_graphs(path, alter);
    std::unique_ptr<Graph> g = model();
    PetDb db(path);
    const SearchReport r = optimize_program(*g, options(), cost, db, "test");
    EXPECT_EQ(r.rebuilt, 0) << what;
    EXPECT_EQ(r.replayed, 3) << what;
    EXPECT_EQ(structural_hash(*g), structural_hash(*first)) << what;
    fold_constants(*g);
    expect_same_outputs(*original, *g, random_inputs(*original, 4), 1e-5);
  }
}

TEST(PetDbGraph, AChoiceThatNoLongerMatchesIsSearchedAgain) {
  const std::string path = folder().path("choice.tsv");
  std::unique_ptr<Graph> first = first_search(path);
  // Every non-empty choice path now names a mutant no generator makes; its
  // graph line (tied to the old path) is not used either.
  std::vector<std::string> lines = read_lines(path);
  for (std::string& l : lines)
    if (l.rfind("choice\t", 0) == 0 && l.substr(l.rfind('\t') + 1) != "-") l = l.substr(0, l.rfind('\t') + 1) + "123abc";
  write_lines(path, lines);
  std::unique_ptr<Graph> g = model();
  PetDb db(path);
  const SearchReport r = optimize_program(*g, options(), cost, db, "test");
  EXPECT_EQ(r.replayed, 0);
  EXPECT_EQ(r.rebuilt, 0);
  EXPECT_GT(r.verified, 0);   // searched again ...
  EXPECT_EQ(r.measured, 0);   // ... with the costs measured before
  EXPECT_EQ(structural_hash(*g), structural_hash(*first));
}

}  // namespace
}  // namespace tessera::pet
