// The search's openings: after the default, the rules' seed points
// (tune/seeds.h) and the default's one-knob neighbours, in that order and
// without two points of the same schedule, before anything bred or random;
// seeds a task cannot take (a knob it lacks, a value that is not a
// candidate, a point its rule cannot build) are left out.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "random_tensor.h"
#include "frontend/onnx_export.h"
#include "temp_folder.h"
#include "tune/model_config.h"
#include "schedule/schedule_rule.h"
#include "tune/search.h"
#include "tune/seeds.h"
#include "tune/task_space.h"

using namespace tessera;
using namespace tessera::tune;
using tessera::testing::random_f32;

namespace {

// x f32[1,16,14,14] -> Conv 32x16x3x3 (pad 1) -> Relu -> GlobalAveragePool
// -> Flatten -> Gemm 32->10: a blocked convolution with several output
// blocks (AVX2's 8 lanes), a reduction and a small product.
std::unique_ptr<Graph> conv_net() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 14, 14}, true});
  Value* w = g->add_constant("w", random_f32({32, 16, 3, 3}, 3, -0.5f, 0.5f));
  Value* fc = g->add_constant("fc", random_f32({10, 32}, 4, -0.5f, 0.5f));
  AttrMap conv;
  conv["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, w}, {"c"}, conv, "conv")->outputs[0];
  Value* r = g->add_node("Relu", {c}, {"r"}, {}, "relu")->outputs[0];
  Value* p = g->add_node("GlobalAveragePool", {r}, {"p"}, {}, "pool")->outputs[0];
  Value* f = g->add_node("Flatten", {p}, {"f"}, {}, "flatten")->outputs[0];
  AttrMap gemm;
  gemm["transB"] = Attribute::of_int(1);
  Value* y = g->add_node("Gemm", {f, fc}, {"y"}, gemm, "gemm")->outputs[0];
  g->add_output(y);
  return g;
}

// The tasks of conv_net on AVX2, as the tuner opens the model (the
// pipeline's blocked layout and fusion; the tasks point into its graph).
struct Tasks {
  TuningModel model;
  std::vector<runtime::TaskUse> uses;
  Tasks() {
    static const tessera::testing::TempFolder folder("search_openings");
    const std::string path = folder.path("conv_net.onnx");
    export_onnx_file(*conv_net(), path);
    ModelConfig config;
    config.model = path;
    config.isa = Isa::AVX2;
    model = open_model(config);
    uses = model.tasks;
  }
};

const Target& avx2() {
  static const Target t = Target::for_isa(Isa::AVX2);
  return t;
}

std::string text_of(const TaskSpace& space, const schedule::SchedulePoint& p) {
  std::optional<schedule::Schedule> s = space.schedule_at(p);
  return s ? schedule::to_text(*s) : "";
}

// The blocked convolution's stage of a space (its rule has the kb knob); -1 for none.
int kb_stage(const TaskSpace& space) {
  for (size_t s = 0; s < space.stages().size(); ++s)
    for (const schedule::Knob& k : space.stages()[s].knobs)
      if (k.name == "kb" && k.values.size() > 1) return static_cast<int>(s);
  return -1;
}

const schedule::Knob& knob(const TaskSpace& space, int stage, const std::string& name) {
  for (const schedule::Knob& k : space.stages()[static_cast<size_t>(stage)].knobs)
    if (k.name == name) return k;
  throw std::runtime_error("no knob " + name);
}

// The spaces of conv_net's tasks with a blocked convolution's kb choice, with that stage.
struct KbSpace {
  std::unique_ptr<TaskSpace> space;
  int stage = -1;
};
std::vector<KbSpace> kb_spaces(const Tasks& t) {
  std::vector<KbSpace> r;
  for (const runtime::TaskUse& u : t.uses) {
    auto space = std::make_unique<TaskSpace>(*u.task, avx2());
    const int s = kb_stage(*space);
    if (s >= 0) r.push_back({std::move(space), s});
  }
  return r;
}

}  // namespace

// Every seed of the table names a rule that exists, and at most one knob at
// its largest valid value (seed_points could not resolve two).
TEST(SeedTable, NamesRulesAndOneLargestKnob) {
  ASSERT_FALSE(seed_table().empty());
  for (const Seed& seed : seed_table()) {
    EXPECT_NE(schedule::find_rule(seed.rule), nullptr) << seed.rule;
    EXPECT_FALSE(seed.knobs.empty()) << seed.rule;
    EXPECT_LE(std::count_if(seed.knobs.begin(), seed.knobs.end(),
                            [](const SeedKnob& k) { return k.value == kLargestValid; }),
              1)
        << seed.rule;
  }
}

// Each neighbour changes one knob of the default to the candidate next to
// its default (no candidate lies between), and every such value is there.
TEST(TaskSpace, NeighboursAreTheAdjacentValuesOfEachKnob) {
  Tasks t;
  int checked = 0;
  for (const runtime::TaskUse& u : t.uses) {
    TaskSpace space(*u.task, avx2());
    std::set<std::tuple<std::string, std::string, int64_t>> got;
    for (const schedule::SchedulePoint& p : space.neighbours()) {
      ASSERT_EQ(p.stages.size(), 1u) << p.to_text();
      const auto& [stage, values] = *p.stages.begin();
      ASSERT_EQ(values.size(), 1u) << p.to_text();
      EXPECT_TRUE(got.insert({stage, values.begin()->first, values.begin()->second}).second) << p.to_text();
    }
    std::set<std::tuple<std::string, std::string, int64_t>> want;
    for (size_t s = 0; s < space.stages().size(); ++s)
      for (const schedule::Knob& k : space.stages()[s].knobs) {
        if (k.values.size() < 2) continue;
        // The nearest candidate below and above the default, by a scan.
        std::optional<int64_t> below, above;
        for (int64_t v : k.values) {
          if (v < k.default_value && (!below || v > *below)) below = v;
          if (v > k.default_value && (!above || v < *above)) above = v;
        }
        if (below) want.insert({stage_position(s), k.name, *below});
        if (above) want.insert({stage_position(s), k.name, *above});
        ++checked;
      }
    EXPECT_EQ(got, want);
  }
  EXPECT_GT(checked, 3) << "the convolution and the product have free knobs";
}

// The first proposals are the default, then the seed points, then the
// neighbours — each kept only when valid and of a schedule not proposed
// before — and nothing else comes first.
TEST(TaskSearch, ProposesTheDefaultThenSeedsThenNeighbours) {
  Tasks t;
  int with_seeds = 0;
  for (const runtime::TaskUse& u : t.uses) {
    TaskSpace space(*u.task, avx2());
    if (space.free_knobs() == 0) continue;
    std::vector<schedule::SchedulePoint> want{{}};
    for (const schedule::SchedulePoint& p : seed_points(space)) want.push_back(p);
    const size_t seeds_end = want.size();
    for (const schedule::SchedulePoint& p : space.neighbours()) want.push_back(p);
    std::set<std::string> seen;
    std::vector<std::string> want_texts;
    size_t kept_seeds = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string s = text_of(space, want[i]);
      if (s.empty() || !seen.insert(s).second) continue;
      want_texts.push_back(want[i].to_text());
      kept_seeds += i > 0 && i < seeds_end;
    }
    with_seeds += kept_seeds > 0;

    TaskSearch search(space, 5);
    // Asked in small rounds, as the tuner does, with costs observed between.
    std::vector<std::string> got;
    std::set<std::string> schedules;
    while (got.size() < want_texts.size()) {
      std::vector<schedule::SchedulePoint> round = search.propose(3);
      ASSERT_FALSE(round.empty()) << "the openings are not used up";
      for (const schedule::SchedulePoint& p : round) {
        got.push_back(p.to_text());
        EXPECT_TRUE(schedules.insert(text_of(space, p)).second) << "a schedule proposed twice: " << p.to_text();
        search.observe(p, 1.0 + static_cast<double>(got.size()));
      }
    }
    got.resize(want_texts.size());
    EXPECT_EQ(got, want_texts) << u.task->describe();
  }
  EXPECT_GT(with_seeds, 0) << "the convolution takes some of the table's seeds";
}

// A seed at its largest valid value takes the largest candidate that gives
// a valid point: the next larger candidate, if any, does not.
TEST(Seeds, LargestValidIsTheLargestCandidateThatBuilds) {
  Tasks t;
  int checked = 0;
  for (const auto& [space_ptr, s] : kb_spaces(t)) {
    const TaskSpace& space = *space_ptr;
    const std::string pos = stage_position(static_cast<size_t>(s));
    for (int64_t kb : knob(space, s, "kb").values) {
      const std::vector<Seed> table{{"contraction", {{"kb", kb}, {"mr", kLargestValid}}}};
      const std::vector<schedule::SchedulePoint> points = seed_points(space, table);
      ASSERT_EQ(points.size(), 1u) << "kb=" << kb;
      const int64_t mr = points[0].stages.at(pos).at("mr");
      EXPECT_EQ(points[0].stages.at(pos).at("kb"), kb);
      for (int64_t v : knob(space, s, "mr").values) {
        if (v <= mr) continue;
        schedule::SchedulePoint larger = points[0];
        larger.stages[pos]["mr"] = v;
        EXPECT_FALSE(space.schedule_at(larger).has_value()) << "kb=" << kb << " mr=" << v << " builds too";
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1);
}

// Seeds naming a knob the stage lacks, a value that is not a candidate, a
// point the rule cannot build, or another rule, give no point; a valid one
// does.
TEST(Seeds, InvalidSeedsAreSkipped) {
  Tasks t;
  int checked = 0;
  for (const auto& [space_ptr, s] : kb_spaces(t)) {
    const TaskSpace& space = *space_ptr;
    const schedule::Knob& kb = knob(space, s, "kb");
    const schedule::Knob& mr = knob(space, s, "mr");
    int64_t not_candidate = 3;
    while (std::count(kb.values.begin(), kb.values.end(), not_candidate)) ++not_candidate;
    // The most blocks with the most rows: beyond the registers.
    schedule::SchedulePoint too_large;
    too_large.stages[stage_position(static_cast<size_t>(s))] = {{"kb", kb.values.back()}, {"mr", mr.values.back()}};
    ASSERT_FALSE(space.schedule_at(too_large).has_value()) << "a point the rule cannot build: " << too_large.to_text();

    EXPECT_TRUE(seed_points(space, {{"contraction", {{"no_such_knob", 1}}}}).empty());
    EXPECT_TRUE(seed_points(space, {{"contraction", {{"kb", not_candidate}}}}).empty()) << not_candidate;
    EXPECT_TRUE(seed_points(space, {{"contraction", {{"kb", kb.values.back()}, {"mr", mr.values.back()}}}}).empty());
    EXPECT_TRUE(seed_points(space, {{"generic", {{"kb", kb.values.front()}}}}).empty()) << "another rule's seed";
    EXPECT_EQ(seed_points(space, {{"contraction", {{"kb", kb.values.front()}}}}).size(), 1u);
    ++checked;
  }
  EXPECT_GT(checked, 0) << "conv_net has a blocked convolution with a kb choice";
}
