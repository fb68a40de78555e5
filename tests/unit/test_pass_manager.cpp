// The pass manager (opt/pass_manager.h) and the pipelines (opt/pipeline.h):
// the table, graphs identical to calling the passes directly in the order
// the driver used to, flags that skip passes, dumps, verification, errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "ops/registry.h"
#include "opt/pass_manager.h"
#include "opt/passes.h"
#include "opt/pipeline.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "tessera/runtime.h"
#include "zoo/zoo.h"

namespace tessera {
namespace {

// Zoo models with convolutions (blocked layout, Winograd), squeeze-free and
// transformer graphs (simplifications, mathematical-property rewrites).
const char* const kModels[] = {"resnet18", "mobilenet_v2", "squeezenet1_1", "gpt2_tiny"};

// The load-time passes as load_model called them before the manager.
void load_passes_directly(Graph& g) {
  fold_constants(g);
  fold_batchnorm(g);
  simplify_graph(g);
  rewrite_math_properties(g);
}

// The target passes as the executor's constructor called them (>= 8 lanes).
void target_passes_directly(Graph& g, int64_t lanes) {
  to_blocked_layout(g, lanes);
  to_winograd(g);
  fold_channel_scales(g);
}

void expect_same_graph(const Graph& got, const Graph& want) {
  EXPECT_EQ(structural_hash(got), structural_hash(want));
  EXPECT_EQ(print_graph(got), print_graph(want));
}

const PassRecord& record_of(const std::vector<PassRecord>& records, const std::string& name) {
  for (const PassRecord& r : records)
    if (r.name == name) return r;
  throw std::runtime_error("no record of pass " + name);
}

TEST(PassManager, TableHasEveryPassOnceAndThePipelinesListThemAll) {
  const PassRegistry& reg = PassRegistry::global();
  std::map<std::string, int> listed;
  for (const auto* pipeline : {&load_pipeline(), &target_pipeline()})
    for (const std::string& name : *pipeline) {
      ++listed[name];
      const Pass* p = reg.find(name);
      ASSERT_TRUE(p) << name;
      EXPECT_EQ(p->stage, pipeline == &load_pipeline() ? PassStage::Load : PassStage::Target) << name;
    }
  // Registered ahead of the stage that will run them: rt-simplify runs after PET (issue 19).
  const std::set<std::string> awaiting_a_pipeline = {"rt-simplify"};
  for (const Pass& p : reg.passes()) {
    EXPECT_EQ(listed[p.name], awaiting_a_pipeline.count(p.name) ? 0 : 1)
        << p.name << " must be in exactly one pipeline, once";
    EXPECT_FALSE(p.flag.empty() || p.description.empty()) << p.name;
    EXPECT_EQ(p.description.find('\n'), std::string::npos) << p.name;
    if (!p.needs.empty()) {
      EXPECT_TRUE(reg.find(p.needs)) << p.name;
    }
  }
  EXPECT_EQ(listed.size(), reg.passes().size());
  // The flags the CLI had before the manager keep their passes.
  std::map<std::string, std::vector<std::string>> flags;
  for (const PassFlag& f : pass_flags()) flags[f.flag] = f.passes;
  EXPECT_EQ(flags["rewrite"], (std::vector<std::string>{"simplify", "math-rewrite"}));
  EXPECT_EQ(flags["blocked-layout"], std::vector<std::string>{"blocked-layout"});
  EXPECT_EQ(flags["winograd"], std::vector<std::string>{"winograd"});
  std::string table = print_pass_table();
  for (const Pass& p : reg.passes()) {
    EXPECT_NE(table.find(p.name), std::string::npos) << table;
    EXPECT_NE(table.find("--no-" + p.flag), std::string::npos) << table;
  }
}

TEST(PassManager, LoadPipelineGivesTheGraphOfTheDirectCalls) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    auto want = build_zoo_model(name);
    load_passes_directly(*want);
    expect_same_graph(*load_model(std::string("zoo:") + name), *want);
  }
}

// An ONNX file: import infers types only; folding is the pipeline's.
TEST(PassManager, LoadPipelineOnAnOnnxFileGivesTheGraphOfTheDirectCalls) {
  namespace fs = std::filesystem;
  std::string path = (fs::temp_directory_path() / ("tessera_passes_" + std::to_string(::getpid()) + ".onnx")).string();
  auto model = build_zoo_model("mobilenet_v2");
  infer_graph(*model);
  export_onnx_file(*model, path);
  auto want = import_onnx_file(path);
  fold_constants(*want);
  fold_batchnorm(*want);
  simplify_graph(*want);
  rewrite_math_properties(*want);
  auto got = load_model(path);
  fs::remove(path);
  expect_same_graph(*got, *want);
}

TEST(PassManager, TargetPipelineGivesTheGraphOfTheDirectCalls) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    auto loaded = load_model(std::string("zoo:") + name);
    for (int64_t lanes : {8, 16}) {
      auto want = loaded->clone(), got = loaded->clone();
      target_passes_directly(*want, lanes);
      PassContext ctx;
      ctx.lanes = lanes;
      auto records = run_passes(*got, target_pipeline(), PassOptions{}, ctx);
      expect_same_graph(*got, *want);
      // Every pass runs but PET, which needs the compiled runtime's
      // measurements (tests/unit/test_pet_search.cpp runs it).
      for (const PassRecord& r : records) {
        if (r.name == "pet") EXPECT_EQ(r.skipped, "needs a compiled runtime measuring candidates");
        else EXPECT_TRUE(r.ran) << r.name;
      }
    }
    // Through the compiled runtime's constructor, for this host's ISA.
    auto want = loaded->clone();
    int64_t lanes = Target::for_isa(Isa::Host).vector_bytes / 4;
    if (lanes >= 8) target_passes_directly(*want, lanes);
    runtime::Executor m(loaded->clone(), runtime::ExecutorOptions{});
    expect_same_graph(m.graph(), *want);
  }
}

TEST(PassManager, NarrowVectorsSkipTheTargetPassesAndSayWhy) {
  auto g = load_model("zoo:squeezenet1_1");
  uint64_t before = structural_hash(*g);
  PassContext ctx;
  ctx.lanes = 4;
  auto records = run_passes(*g, target_pipeline(), PassOptions{}, ctx);
  EXPECT_EQ(structural_hash(*g), before);
  EXPECT_EQ(record_of(records, "blocked-layout").skipped, "needs 8+ f32 lanes");
  EXPECT_EQ(record_of(records, "winograd").skipped, "blocked-layout did not run");
  EXPECT_EQ(record_of(records, "fold-channel-scale").skipped, "blocked-layout did not run");
}

TEST(PassManager, DisabledPassesAreSkipped) {
  // --no-rewrite: both rewriting passes, nothing else.
  PassOptions opts;
  opts.disable_flag("rewrite");
  auto g = build_zoo_model("gpt2_tiny");
  auto records = run_passes(*g, load_pipeline(), opts);
  auto want = build_zoo_model("gpt2_tiny");
  fold_constants(*want);
  fold_batchnorm(*want);
  expect_same_graph(*g, *want);
  EXPECT_EQ(record_of(records, "simplify").skipped, "disabled (--no-rewrite)");
  EXPECT_FALSE(record_of(records, "math-rewrite").ran);
  EXPECT_TRUE(record_of(records, "fold-batchnorm").ran);

  // Constant folding off still infers every type.
  PassOptions no_fold;
  no_fold.disable("fold-constants");
  no_fold.disable("fold-batchnorm");
  no_fold.disable_flag("rewrite");
  auto inferred = build_zoo_model("resnet18");
  run_passes(*inferred, load_pipeline(), no_fold);
  auto want_inferred = build_zoo_model("resnet18");
  infer_graph(*want_inferred);
  expect_same_graph(*inferred, *want_inferred);

  // Winograd off: the blocked layout and the channel-scale fold still run.
  PassOptions no_wino;
  no_wino.disable("winograd");
  PassContext ctx;
  ctx.lanes = 16;
  auto r = load_model("zoo:resnet18");
  auto want_r = r->clone();
  records = run_passes(*r, target_pipeline(), no_wino, ctx);
  to_blocked_layout(*want_r, 16);
  fold_channel_scales(*want_r);
  expect_same_graph(*r, *want_r);
  EXPECT_FALSE(record_of(records, "winograd").ran);
  EXPECT_TRUE(record_of(records, "fold-channel-scale").ran);

  // Through LoadOptions and the executor's options.
  LoadOptions lo;
  lo.passes.disable("fold-batchnorm");
  auto unfolded = load_model("zoo:resnet18", lo);
  EXPECT_GT(std::count_if(unfolded->nodes().begin(), unfolded->nodes().end(),
                          [](const auto& n) { return n->op_type == "BatchNormalization"; }),
            0);
  runtime::ExecutorOptions eo;
  eo.passes.disable("blocked-layout");
  runtime::Executor m(load_model("zoo:resnet18"), eo);
  expect_same_graph(m.graph(), *load_model("zoo:resnet18"));
}

TEST(PassManager, RecordsCountRewritesAndTime) {
  auto g = build_zoo_model("resnet18");
  PassOptions opts;
  opts.verbose = true;
  ::testing::internal::CaptureStderr();
  auto records = run_passes(*g, load_pipeline(), opts);
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(records.size(), load_pipeline().size());
  auto direct = build_zoo_model("resnet18");
  EXPECT_EQ(record_of(records, "fold-constants").rewrites, fold_constants(*direct));
  EXPECT_EQ(record_of(records, "fold-batchnorm").rewrites, fold_batchnorm(*direct));
  EXPECT_GT(record_of(records, "fold-batchnorm").rewrites, 0);
  for (const PassRecord& r : records) {
    EXPECT_TRUE(r.ran) << r.name;
    EXPECT_GE(r.seconds, 0) << r.name;
    EXPECT_NE(log.find("pass " + r.name), std::string::npos) << log;
  }
}

TEST(PassManager, DumpAfterPrintsTheGraphAfterThatPass) {
  auto want = build_zoo_model("squeezenet1_1");
  fold_constants(*want);
  fold_batchnorm(*want);
  simplify_graph(*want);
  PassOptions opts;
  opts.dump_after = {"simplify"};
  auto g = build_zoo_model("squeezenet1_1");
  ::testing::internal::CaptureStderr();
  run_passes(*g, load_pipeline(), opts);
  std::string dump = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(dump.find("--- graph after pass simplify ("), std::string::npos) << dump.substr(0, 2000);
  EXPECT_NE(dump.find(" rewrites) ---\n" + print_graph(*want) + "--- end of graph after pass simplify ---\n"),
            std::string::npos)
      << dump.substr(0, 2000);
  EXPECT_EQ(dump.find("after pass fold-batchnorm"), std::string::npos);
  EXPECT_EQ(dump.find("after pass math-rewrite"), std::string::npos);

  // A pass that does not run says so instead.
  opts.disable("simplify");
  ::testing::internal::CaptureStderr();
  run_passes(*build_zoo_model("squeezenet1_1"), load_pipeline(), opts);
  dump = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(dump.find("pass simplify did not run (disabled (--no-rewrite))"), std::string::npos) << dump;
}

// A pass that gives a value the name of the graph's first input.
int break_graph(Graph& g, const PassContext&) {
  g.nodes().back()->outputs[0]->name = g.inputs()[0]->name;
  return 1;
}

TEST(PassManager, VerifyEachNamesThePassThatBrokeTheGraph) {
  PassRegistry reg = PassRegistry::global();
  reg.add({"break-graph", PassStage::Load, "break-graph", "test: duplicates a value name", break_graph});
  const std::vector<std::string> pipeline = {"fold-constants", "break-graph", "fold-batchnorm"};
  PassOptions opts;
  opts.verify_each = true;
  auto g = build_zoo_model("squeezenet1_1");
  try {
    run_passes(*g, pipeline, opts, {}, reg);
    FAIL() << "the broken graph was not caught";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the graph is broken after pass 'break-graph': value name '"),
              std::string::npos)
        << e.what();
  }
  // Without verify-each the check after the pipeline lists the passes run.
  g = build_zoo_model("squeezenet1_1");
  try {
    run_passes(*g, {"fold-constants", "break-graph"}, PassOptions{}, {}, reg);
    FAIL() << "the broken graph was not caught";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken after passes fold-constants, break-graph"), std::string::npos)
        << e.what();
  }
  // A pass whose name is taken, or without a function, is refused.
  EXPECT_THROW(reg.add({"simplify", PassStage::Load, "x", "again", break_graph}), Error);
  EXPECT_THROW(reg.add({"nothing", PassStage::Load, "nothing", "no function"}), Error);
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "no error; expected one containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(PassManager, UnknownPassNamesAreErrorsListingThePasses) {
  const std::string listing = "(passes: fold-constants, fold-batchnorm, simplify, math-rewrite, pet, skip-padding-taps, pool-after-conv, separable-max-pool, blocked-layout";
  auto g = build_zoo_model("squeezenet1_1");
  expect_error([&] { run_passes(*g, {"fold-constants", "nope"}, PassOptions{}); }, "unknown pass 'nope' " + listing);
  PassOptions dump;
  dump.dump_after = {"nope"};
  expect_error([&] { run_passes(*g, load_pipeline(), dump); }, "unknown pass 'nope'");
  expect_error([&] { check_pass_names(dump); }, "unknown pass 'nope' " + listing);
  PassOptions opts;
  expect_error([&] { opts.disable("nope"); }, "unknown pass 'nope'");
  expect_error([&] { opts.disable_flag("nope"); }, "unknown pass flag --no-nope (pass flags: --no-fold-constants");
  CompileOptions co;
  co.disabled_passes = {"nope"};
  expect_error([&] { CompiledModel::compile("zoo:squeezenet1_1", co); }, "unknown pass 'nope'");
  co.disabled_passes.clear();
  co.dump_after = {"nope"};
  expect_error([&] { CompiledModel::compile("zoo:squeezenet1_1", co); }, "unknown pass 'nope'");
}

// The public options: the old bools still turn off their passes.
TEST(PassManager, PublicOptionsReachThePasses) {
  CompileOptions co;
  co.blocked_layout = false;
  co.rewrite = false;
  CompiledModel m = CompiledModel::compile("zoo:squeezenet1_1", co);
  auto want = build_zoo_model("squeezenet1_1");
  fold_constants(*want);
  fold_batchnorm(*want);
  EXPECT_EQ(m.node_count(), want->nodes().size());
  CompileOptions by_name;
  by_name.disabled_passes = {"blocked-layout"};
  EXPECT_EQ(CompiledModel::compile("zoo:squeezenet1_1", by_name).node_count(),
            load_model("zoo:squeezenet1_1")->nodes().size());
}

}  // namespace
}  // namespace tessera
