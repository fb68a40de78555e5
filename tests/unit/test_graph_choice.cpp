// Graph-level tuning choices (tune/graph_choice.h): their records' keys and
// texts round-trip, the records choose the fastest tile measured below the
// estimate's model (never a failed or rejected one), the phase measures each
// alternative once (a resumed phase re-measures nothing), never tries F(4x4)
// where its error bound does not hold, and compiling with the records
// applies their choice — the graph has or lacks the Winograd nodes, and its
// outputs are the reference interpreter's on the original graph.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "codegen/llvm/jit.h"
#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "interp/interpreter.h"
#include "ops/op_attrs.h"
#include "opt/winograd.h"
#include "random_tensor.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "support/target.h"
#include "temp_folder.h"
#include "tessera/runtime.h"
#include "tune/graph_choice.h"
#include "tune/measure.h"
#include "tune/model_config.h"
#include "tune/record.h"

using namespace tessera;
using namespace tessera::tune;
using tessera::testing::random_f32;

namespace {

std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("graph-choice");
  return folder.path(name);
}

Value* conv3x3(Graph& g, Value* x, const std::string& name, uint32_t seed) {
  AttrMap a;
  a["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* w = g.add_constant(name + ".w", random_f32({16, 16, 3, 3}, seed, -0.3f, 0.3f));
  Value* b = g.add_constant(name + ".b", random_f32({16}, seed + 1));
  return g.add_node("Conv", {x, w, b}, {name}, a, name)->outputs[0];
}

Value* relu(Graph& g, Value* x, const std::string& name) { return g.add_node("Relu", {x}, {name}, {}, name)->outputs[0]; }

// x [1,16,20,20] -> c0 -> Relu -> c1 (-> + the ReLU's output when
// `residual`) -> Relu: two convolutions of one geometry. With the residual
// add, c1 ends a branch (F(4x4) allowed there); in the plain chain neither does.
std::unique_ptr<Graph> two_convs(bool residual) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 20, 20}, true});
  Value* a = relu(*g, conv3x3(*g, x, "c0", 10), "r0");
  Value* b = conv3x3(*g, a, "c1", 20);
  if (residual) b = g->add_node("Add", {b, a}, {"sum"}, {}, "sum")->outputs[0];
  g->add_output(relu(*g, b, "r1"));
  infer_graph(*g);
  return g;
}

std::string model_file(bool residual) {
  const std::string path = temp_path(residual ? "residual.onnx" : "chain.onnx");
  if (!std::filesystem::exists(path)) export_onnx_file(*two_convs(residual), path);
  return path;
}

std::string host_target() { return Target::for_isa(codegen::host_isa()).to_string(); }

ModelConfig config_of(const std::string& model) {
  ModelConfig c;
  c.model = model;
  c.isa = codegen::host_isa();
  c.threads = 1;
  return c;
}

GraphPhaseOptions quick_phase() {
  GraphPhaseOptions o;
  o.max_seconds = 120;
  o.runs = 3;
  o.budget_seconds = 120;
  return o;
}

// A measured choice: the model's time `ratio` of the estimate's (1 s).
Record choice_record(const std::string& geometry, int tile, double ratio, const std::string& target) {
  Record r;
  r.task_key = winograd_choice_key(geometry);
  r.task = "Winograd choice " + geometry;
  r.target = target;
  r.schedule = winograd_choice_text(tile);
  r.costs = {ratio};
  r.baseline = {1.0};
  return r;
}

// A choice recorded without costs: an error or a SlowerInModel verdict.
Record choice_without_costs(const std::string& geometry, int tile, MeasureError error, const std::string& target) {
  Record r = choice_record(geometry, tile, 0, target);
  r.costs.clear();
  r.baseline.clear();
  r.error = error;
  return r;
}

// The phase on two_convs(residual) with the records file at `path`, showing nothing.
GraphPhaseResult run_phase(const std::string& path, bool residual, const GraphPhaseOptions& options = quick_phase()) {
  RecordFile records(path);
  tune::Progress quiet(false);
  return tune_graph_choices(config_of(model_file(residual)), records, host_target(), options, quiet);
}

}  // namespace

TEST(GraphChoice, KeysTextsAndRecordsRoundTrip) {
  const std::string geometry = "n1 c4x16 m4x16 r64 50x50->50x50 pads1,1,1,1";
  EXPECT_EQ(winograd_choice_geometry(winograd_choice_key(geometry)), geometry);
  EXPECT_EQ(winograd_choice_geometry("3f2a/1x16x50x50"), "") << "a task's key is not a choice's";
  for (int tile : kWinogradChoiceTiles) EXPECT_EQ(parse_winograd_choice(winograd_choice_text(tile)), tile);
  for (const char* bad : {"tile=3", "tile=", "tile=22", "2", ""}) EXPECT_THROW(parse_winograd_choice(bad), Error) << bad;
  const Record r = choice_record(geometry, 2, 0.97, host_target());
  const Record back = parse_record(to_json(r));
  EXPECT_EQ(back.task_key, r.task_key);
  EXPECT_EQ(back.schedule, r.schedule);
  EXPECT_EQ(back.target, r.target);
  EXPECT_EQ(back.costs, r.costs);
  EXPECT_EQ(back.baseline, r.baseline);
}

// Hand-written records: each geometry's choice is its fastest tile below the
// estimate's model, skipping errors, SlowerInModel verdicts and other machines.
TEST(GraphChoice, RecordsChooseTheFastestBelowTheEstimate) {
  const std::string path = temp_path("choose.jsonl");
  std::filesystem::remove(path);
  const std::string here = host_target();
  {
    RecordFile f(path);
    f.append(choice_record("a", 0, 0.90, here));
    f.append(choice_record("a", 2, 0.95, here));
    f.append(choice_record("slower", 0, 1.10, here));
    f.append(choice_record("rejected", 2, 0.80, here));
    f.append(choice_without_costs("rejected", 2, MeasureError::SlowerInModel, here));
    f.append(choice_record("rejected", 0, 0.99, here));
    f.append(choice_without_costs("wrong", 4, MeasureError::WrongOutput, here));
    f.append(choice_record("elsewhere", 2, 0.5, here + " (another machine)"));
  }
  const std::map<std::string, int> got = recorded_winograd_choices(RecordFile(path), here);
  EXPECT_EQ(got, (std::map<std::string, int>{{"a", 0}, {"rejected", 0}}));
}

// The phase on a residual block: every alternative that changes the graph
// is measured once, paired with the estimate's model (or recorded as an
// error); a second phase on the same records measures nothing. On a plain
// chain F(4x4) is never tried.
TEST(GraphChoice, PhaseMeasuresEachAlternativeOnceAndNeverAnUnboundedLargeTile) {
  const std::string path = temp_path("phase.jsonl");
  std::filesystem::remove(path);
  const GraphPhaseResult first = run_phase(path, true);
  ASSERT_EQ(first.choices.size(), 1u) << "one geometry";
  EXPECT_EQ(first.choices[0].convs, 2);
  EXPECT_GT(first.measured, 0);
  EXPECT_EQ(first.errors, 0) << "every alternative computes the estimate's outputs within 1e-4";
  const std::vector<Record> written = RecordFile(path).records();
  EXPECT_EQ(static_cast<int>(written.size()), first.measured);
  std::set<std::string> tiles;
  for (const Record& r : written) {
    EXPECT_EQ(winograd_choice_geometry(r.task_key), first.choices[0].geometry);
    EXPECT_TRUE(r.paired()) << r.schedule;
    EXPECT_TRUE(tiles.insert(r.schedule).second) << "measured twice: " << r.schedule;
  }
  const GraphPhaseResult again = run_phase(path, true);
  EXPECT_EQ(again.measured, 0);
  EXPECT_EQ(again.reused, first.measured);
  EXPECT_EQ(RecordFile(path).records().size(), written.size());
  EXPECT_EQ(again.applied, first.applied);

  const std::string chain = temp_path("chain.jsonl");
  std::filesystem::remove(chain);
  const GraphPhaseResult plain = run_phase(chain, false);
  ASSERT_EQ(plain.choices.size(), 1u);
  const RecordFile chain_records(chain);
  for (const Record& r : chain_records.records()) EXPECT_NE(r.schedule, winograd_choice_text(4)) << "F(4x4) tried on a plain chain";
  EXPECT_EQ(plain.choices[0].tried.find("F(4x4)"), std::string::npos) << plain.choices[0].tried;
}

// Compiling with records applies their choice: direct leaves no Winograd
// node, F(2x2) puts the product in; F(4x4) recorded for a plain chain's
// geometry is not applied. The outputs are the interpreter's on the
// original graph.
TEST(GraphChoice, CompileAppliesTheRecordedChoice) {
  const std::string target = host_target();
  std::string geometry;
  {
    const std::string path = temp_path("list.jsonl");
    std::filesystem::remove(path);
    GraphPhaseOptions none = quick_phase();
    none.max_seconds = 0;  // lists the geometries, measures nothing
    const GraphPhaseResult r = run_phase(path, true, none);
    ASSERT_EQ(r.choices.size(), 1u);
    EXPECT_EQ(r.measured, 0);
    geometry = r.choices[0].geometry;
  }
  std::vector<Tensor> ins{random_f32({1, 16, 20, 20}, 30)};
  for (bool residual : {true, false}) {
    std::vector<Tensor> want = interpret(*two_convs(residual), ins);
    for (int tile : kWinogradChoiceTiles) {
      SCOPED_TRACE(std::string(residual ? "residual" : "chain") + ", tile " + std::to_string(tile));
      const std::string path = temp_path("apply.jsonl");
      std::filesystem::remove(path);
      RecordFile(path).append(choice_record(geometry, tile, 0.5, target));
      CompileOptions co;
      co.records = path;
      co.threads = 1;
      CompiledModel m = CompiledModel::compile(model_file(residual), co);
      std::vector<Tensor> got = m.run(ins);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_LE(relative_difference(got[0], want[0]), 1e-4);
      int products = 0;
      for (const StepProfile& p : m.profile(ins, 1))
        for (size_t at = p.op.find("WinogradGemm"); at != std::string::npos; at = p.op.find("WinogradGemm", at + 1))
          ++products;
      // The pass with the recorded choice, on the graph compile sees.
      runtime::ExecutorOptions eo;
      eo.threads = 1;
      eo.passes.winograd_tiles = recorded_winograd_choices(RecordFile(path), target);
      runtime::Executor ex(load_model(model_file(residual), {}), eo);
      int large = 0;
      for (const auto& n : ex.graph().nodes())
        if (n->op_type == "WinogradOutput" && OpAttrs(*n, kAnyOpset).i("tile") == 4) ++large;
      if (tile == 0) {
        EXPECT_EQ(products, 0);
      } else if (tile == 2) {
        EXPECT_EQ(products, 2);
      } else if (residual) {
        EXPECT_GE(products, 1);
      }
      if (!residual) {
        EXPECT_EQ(large, 0) << "F(4x4) applied where its bound does not hold";
      }
      if (residual && tile == 4) {
        EXPECT_EQ(large, 1) << "c1 ends the branch: it takes the recorded F(4x4)";
      }
    }
  }
}
