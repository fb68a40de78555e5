// The tessera command-line tool: run (compiled or reference), compile, bench, tune,
// dataset, costmodel, serve, viz, info, print and export-zoo. The options and
// the dispatch are here, with the short commands' handlers; the longer ones
// are in tools/<command>_command.cpp (run, bench, tune, dataset, costmodel).
#include <CLI/CLI.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "bench_command.h"
#include "costmodel_command.h"
#include "dataset_command.h"
#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "fusion/fusion_dot.h"
#include "model_options.h"
#include "ops/registry.h"
#include "opt/pass_manager.h"
#include "opt/pipeline.h"
#include "pet/mutation_test.h"
#include "run_command.h"
#include "runtime/arena_layout.h"
#include "runtime/executor.h"
#include "serve.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/thread_pool.h"
#include "tessera/runtime.h"
#include "tune_command.h"
#include "zoo/zoo.h"

using namespace tessera;
using namespace tessera::tools;  // the model commands' options and handlers

namespace {

std::string human(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%s", v, units[u]);
  return buf;
}

int cmd_compile(const Common& c, const Exec& e, const std::string& out, bool report, bool dump_fusion) {
  TESSERA_CHECK(e.compiled(), "'tessera compile' needs --backend compiled");
  auto t0 = Clock::now();
  CompiledModel m = CompiledModel::compile(c.model, e.compile_options(c));
  auto t1 = Clock::now();
  bool static_inputs = true;
  for (const TensorInfo& i : m.inputs()) {
    bool known = i.rank_known;
    for (int64_t d : i.dims) known = known && d >= 0;
    static_inputs = static_inputs && known;
  }
  // Kernels are compiled for concrete shapes: a static signature is compiled
  // now (on seeded inputs); a dynamic one on first run.
  if (static_inputs) m.prepare(m.random_inputs(0));
  auto t2 = Clock::now();
  m.save(out);
  std::printf("model    %s (%zu nodes)\nload     %.1f ms\n", c.model.c_str(), m.node_count(), ms_between(t0, t1));
  if (static_inputs)
    std::printf("compile  %.1f ms (%d compiled kernels, %d reference steps)\nmemory   peak activations %s\n",
                ms_between(t1, t2), m.compiled_steps(), m.reference_steps(),
                runtime::format_bytes(m.peak_activation_bytes()).c_str());
  else
    std::printf("compile  deferred: the inputs have dynamic shapes (fix them with --shape NAME=DIMS)\n");
  if (report) std::fputs(m.report().c_str(), stdout);
  if (dump_fusion) std::fputs(m.fusion_report().c_str(), stdout);
  std::printf("wrote    %s\n", out.c_str());
  return 0;
}

// A compiled model kept loaded for a benchmark harness: compiled and run once,
// "ready" printed, then requests from stdin (see tools/serve.h).
int cmd_serve(const Common& c, const Exec& e, const std::vector<std::string>& input_paths, uint64_t seed) {
  TESSERA_CHECK(e.compiled(), "'tessera serve' needs --backend compiled");
  if (e.threads > 0) ThreadPool::global().set_threads(e.threads);
  const auto loading = Clock::now();
  CompiledModel m = open_compiled(c, e);
  std::vector<Tensor> ins = input_paths.empty() ? m.random_inputs(seed) : m.read_inputs(input_paths);
  double compile_ms = m.last_compile_seconds() * 1000;  // kernels an artifact re-made on load
  m.prepare(ins);
  compile_ms += m.last_compile_seconds() * 1000;
  const double load_ms = ms_between(loading, Clock::now());  // read, import, passes, kernels: ready to run
  auto t0 = Clock::now();
  m.run(ins);
  std::printf("ready compile_ms %.1f first_run_ms %.1f kernels %d threads %d load_ms %.1f\n", compile_ms,
              ms_between(t0, Clock::now()), m.compiled_steps(), ThreadPool::global().threads(), load_ms);
  std::fflush(stdout);
  return tools::serve_loop(m, ins, std::cin, stdout);
}

// The graph (with --fusion: the fusion plan's blocks as coloured clusters)
// drawn by Graphviz, or as DOT text when the output ends in .dot.
int cmd_viz(const Common& c, const Exec& e, const std::string& out, bool fusion) {
  auto g = load_model(c.model, c.load_options());
  std::string dot;
  if (fusion) {
    runtime::ExecutorOptions eo;
    eo.isa = isa_from_name(e.isa);
    eo.threads = e.threads;
    eo.fusion = !e.no_fusion;
    eo.concat_in_place = !e.no_concat_in_place;
    eo.passes = c.load_options().passes;
    const CompileOptions co = e.compile_options(c);
    eo.pet = co.pet;
    eo.passes.pet.budget_seconds = co.pet_budget_seconds;
    if (e.threads > 0) ThreadPool::global().set_threads(e.threads);
    runtime::Executor m(std::move(g), eo);
    dot = fusion::graph_dot(m.graph(), &m.partition());
    fusion::FusionStats st = fusion::fusion_stats(m.graph(), m.partition());
    std::printf("fusion   %d ops -> %d kernels (%d fused blocks)\n", st.ops, st.blocks, st.fused_blocks);
  } else {
    dot = fusion::graph_dot(*g);
  }
  std::string ext = std::filesystem::path(out).extension().string();
  if (ext == ".dot" || ext == ".gv") {
    write_file(out, dot);
  } else {
    TESSERA_CHECK(ext == ".svg" || ext == ".png" || ext == ".pdf", "viz: unknown output format '", ext,
                  "' (use .svg, .png, .pdf or .dot)");
    std::string cmd = "dot -T" + ext.substr(1) + " -o '" + out + "' 2>&1";
    FILE* p = popen(cmd.c_str(), "w");
    TESSERA_CHECK(p, "viz: cannot start Graphviz's dot");
    std::fwrite(dot.data(), 1, dot.size(), p);
    int status = pclose(p);
    TESSERA_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 127,
                  "viz: Graphviz's 'dot' was not found; install Debian's graphviz package, or write DOT text with -o FILE.dot");
    TESSERA_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "viz: dot failed to render ", out);
  }
  std::printf("wrote    %s\n", out.c_str());
  return 0;
}

int cmd_info(const Common& c) {
  auto g = load_model(c.model, c.load_options());
  std::map<std::string, int> hist;
  double flops = 0;
  for (const auto& n : g->nodes()) {
    ++hist[n->op_type];
    flops += node_flops(*n);
  }
  int64_t params = 0, weight_bytes = 0;
  for (const auto& v : g->values())
    if (v->constant && v->constant->dtype() != DType::String) {
      if (is_float(v->constant->dtype())) params += v->constant->numel();
      weight_bytes += static_cast<int64_t>(v->constant->nbytes());
    }
  std::printf("model      %s\nopset      %lld\nnodes      %zu\nparameters %s (%lld)\nweights    %s (%lld bytes of constants)\nFLOPs      %s\n",
              c.model.c_str(), static_cast<long long>(g->opset), g->nodes().size(),
              human(static_cast<double>(params)).c_str(), static_cast<long long>(params),
              runtime::format_bytes(weight_bytes).c_str(), static_cast<long long>(weight_bytes), human(flops).c_str());
  std::printf("inputs\n");
  for (const Value* v : g->inputs()) std::printf("  %-24s %s\n", v->name.c_str(), v->type.to_string().c_str());
  std::printf("outputs\n");
  for (const Value* v : g->outputs()) std::printf("  %-24s %s\n", v->name.c_str(), v->type.to_string().c_str());
  std::printf("ops\n");
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [k, n] : hist) sorted.push_back({-n, k});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [n, k] : sorted) std::printf("  %-24s %d\n", k.c_str(), -n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera — an optimizing compiler for deep-learning inference"};
  app.set_version_flag("--version", std::string(TESSERA_VERSION));
  app.require_subcommand(1);

  Common common;
  // --no-FLAG for every flag of the pass table of this stage (tessera passes).
  auto add_pass_flags = [&](CLI::App* sub, PassStage stage) {
    for (const PassFlag& f : pass_flags()) {
      if (f.stage != stage) continue;
      std::string passes;
      for (const std::string& p : f.passes) passes += (passes.empty() ? "" : " and ") + p;
      sub->add_flag("--no-" + f.flag, common.no_pass_flag[f.flag],
                    "skip the " + passes + (f.passes.size() > 1 ? " passes" : " pass") + " (see 'tessera passes')");
    }
  };
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("model", common.model, "ONNX file, or zoo:NAME for an embedded model")->required();
    sub->add_option("--shape", common.shapes, "fix an input's shape, NAME=1x3x224x224 (repeatable)");
    add_pass_flags(sub, PassStage::Load);
    sub->add_option("--dump-after", common.dump_after, "print the graph (stderr) after pass PASS (repeatable)")
        ->type_name("PASS")
        ->allow_extra_args(false);
    sub->add_flag("--verify-each", common.verify_each, "verify the graph after every pass");
  };

  Exec exec;
  auto add_exec = [&](CLI::App* sub, bool backend) {
    if (backend) sub->add_option("--backend", exec.backend, "execution backend: compiled (default) or reference");
    sub->add_option("--isa", exec.isa, "instruction set: host (default), avx2, avx512, generic");
    sub->add_option("--threads", exec.threads, "threads for parallel kernels (default: all cores)")
        ->check(CLI::Range(0, ThreadPool::max_threads()));
    sub->add_flag("--dump-ir", exec.dump_ir, "print every kernel's loop IR (stderr)");
    sub->add_flag("--dump-llvm", exec.dump_llvm, "print every kernel's optimized LLVM IR (stderr)");
    sub->add_flag("--dump-asm", exec.dump_asm, "print every kernel's assembly (stderr)");
    sub->add_option("--kernel", exec.kernel, "dump only kernels whose node name contains NAME");
    sub->add_flag("-v,--verbose", exec.verbose, "print compile progress (stderr)");
    sub->add_flag("--no-fusion", exec.no_fusion, "one kernel per op: no DNNFusion fusion planning");
    sub->add_flag("--no-concat-in-place", exec.no_concat_in_place,
                  "copy every Concat (default: a batch-1 channel concat's producers write into its buffer)");
    sub->add_option("--records", exec.records, "apply the best schedules of a tuning records file ('tessera tune')");
    add_pass_flags(sub, PassStage::Target);
    sub->add_flag("--pet", exec.pet, "PET: replace multi-linear subprograms by mutants measured faster (see 'tessera passes')");
    sub->add_option("--pet-budget", exec.pet_budget, "seconds PET may search on a first compile (default 60)")
        ->check(CLI::Range(0.0, 86400.0));
    sub->add_option("--pet-mutants", exec.pet_mutants, "PET's mutants: all (default), equivalent or partial")
        ->check(CLI::IsMember({"all", "equivalent", "partial"}));
    sub->add_flag("--dump-pet", exec.dump_pet, "print PET's search: subprograms, mutations, verdicts, boxes, costs");
  };

  std::vector<std::string> inputs;
  std::string out_dir;
  bool npy = false, report = false;
  uint64_t seed = 0;
  CLI::App* run = app.add_subcommand("run", "run a model (or a compiled .tsr) and print times and output checksums");
  add_common(run);
  add_exec(run, true);
  run->add_option("--inputs", inputs, "input directory (input_0.pb ...) or files (.pb/.npy) in input order");
  run->add_option("--outputs", out_dir, "write output_0.pb ... to this directory");
  run->add_flag("--npy", npy, "also write outputs as .npy");
  run->add_option("--seed", seed, "seed for random inputs (default 0)");
  run->add_flag("--report", report, "print which steps are compiled and the arena layout");

  std::string compile_out;
  CLI::App* comp = app.add_subcommand("compile", "compile a model to a .tsr artifact that 'tessera run' runs");
  add_common(comp);
  add_exec(comp, false);
  comp->add_option("-o,--output", compile_out, "output artifact (.tsr)")->required();
  comp->add_flag("--report", report, "print which steps are compiled and the arena layout");
  bool dump_fusion = false;
  comp->add_flag("--dump-fusion", dump_fusion, "print every fused block with its ops and mapping types");

  int runs = 20, warmup = 3;
  CLI::App* bench = app.add_subcommand("bench", "time repeated runs: median, p10, p90 latency and peak memory");
  add_common(bench);
  add_exec(bench, true);
  bench->add_option("--runs", runs, "timed runs (default 20)");
  bench->add_option("--warmup", warmup, "untimed runs first (default 3)");
  bench->add_option("--seed", seed, "seed for random inputs (default 0)");
  int profile = 0;
  bool vs_reference = false;
  bench->add_flag("--vs-reference", vs_reference, "also time the reference interpreter on the same inputs; print the speedup");
  bool vs_no_fusion = false;
  bench->add_flag("--vs-no-fusion", vs_no_fusion, "also run with fusion off, round by round; print both medians and the output difference");
  bench->add_option("--profile", profile, "then time every step over --runs more runs; print the N slowest and the time per op");

  std::string viz_out;
  bool viz_fusion = false;
  CLI::App* viz = app.add_subcommand("viz", "draw the graph (and its fusion plan) with Graphviz");
  add_common(viz);
  add_exec(viz, false);
  viz->add_option("-o,--output", viz_out, "output picture: .svg, .png, .pdf, or .dot for DOT text")->required();
  viz->add_flag("--fusion", viz_fusion, "draw the compiled graph: fused blocks coloured, nodes PET put in outlined");

  CLI::App* serve = app.add_subcommand(
      "serve", "keep a compiled model loaded and answer 'run N' / 'profile N' / 'save DIR' / 'quit' lines on stdin (benchmark harnesses)");
  add_common(serve);
  add_exec(serve, false);
  serve->add_option("--inputs", inputs, "input directory (input_0.pb ...) or files (.pb/.npy) in input order");
  serve->add_option("--seed", seed, "seed for random inputs when --inputs is not given (default 0)");

  CLI::App* info = app.add_subcommand("info", "print op histogram, parameters, FLOPs and signature");
  add_common(info);

  CLI::App* print = app.add_subcommand("print", "print the graph IR as text");
  add_common(print);

  std::string zoo_name, zoo_out;
  CLI::App* exz = app.add_subcommand("export-zoo", "write an embedded zoo model as an ONNX file");
  exz->add_option("name", zoo_name, "zoo model name")->required();
  exz->add_option("-o,--output", zoo_out, "output .onnx file")->required();

  CLI::App* zoo = app.add_subcommand("zoo", "list the embedded zoo models");

  // tune, tune-fit and the internal tune-worker (tools/tune_command.cpp).
  tools::TuneCommands tune_cmds;
  CLI::App* tune_cmd = tune_cmds.add(app, exec.isa, exec.threads);
  add_common(tune_cmd);
  add_exec(tune_cmd, false);

  // dataset collect and merge (tools/dataset_command.cpp).
  tools::DatasetCommands dataset_cmds;
  dataset_cmds.add(app);

  // learned cost models: costmodel train, eval, columns (tools/costmodel_command.cpp).
  tools::CostModelCommands costmodel_cmds;
  costmodel_cmds.add(app);

  CLI::App* passes = app.add_subcommand("passes", "list the graph passes: name, stage, the flag that skips it, what it does");

  int64_t pet_count = 10000;
  uint64_t pet_seed = 1;
  CLI::App* petm = app.add_subcommand("pet-mutation-test",
                                      "check PET's verifier against brute force on corrupted mutants; exits 1 if it "
                                      "accepts one that brute force rejects");
  petm->add_option("--count", pet_count, "corrupted mutants to check (default 10000)")->check(CLI::PositiveNumber);
  petm->add_option("--seed", pet_seed, "random seed (default 1)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // Usage errors as every other error: an "error:" line, then a pointer to --help.
    std::fprintf(stderr, "error: %s\n(run with --help for the options)\n", e.what());
    return 2;
  }
  try {
    if (*run) return cmd_run(common, exec, inputs, out_dir, npy, seed, report);
    if (*comp) return cmd_compile(common, exec, compile_out, report, dump_fusion);
    if (*bench) return cmd_bench(common, exec, runs, warmup, seed, profile, vs_reference, vs_no_fusion);
    if (*info) return cmd_info(common);
    if (*tune_cmd) {
      TESSERA_CHECK(exec.compiled(), "tessera tune needs --backend compiled");
      TESSERA_CHECK(!exec.dump_ir && !exec.dump_llvm && !exec.dump_asm && exec.kernel.empty(),
                    "tessera tune compiles candidates, not the model: --dump-ir, --dump-llvm, --dump-asm and --kernel "
                    "do not apply");
      CompileOptions co = exec.compile_options(common);
      tune::ModelConfig m;
      m.model = common.model;
      m.input_shapes = co.input_shapes;
      m.disabled_passes = co.disabled_passes;
      m.isa = isa_from_name(exec.isa);
      m.threads = exec.threads;
      m.fusion = !exec.no_fusion;
      return tune_cmds.run_tune(m, exec.records);
    }
    if (int rc = tune_cmds.run_other(isa_from_name(exec.isa), exec.threads); rc >= 0) return rc;
    if (int rc = dataset_cmds.run(); rc >= 0) return rc;
    if (int rc = costmodel_cmds.run(); rc >= 0) return rc;
    if (*serve) return cmd_serve(common, exec, inputs, seed);
    if (*viz) return cmd_viz(common, exec, viz_out, viz_fusion);
    if (*print) {
      auto g = load_model(common.model, common.load_options());
      std::fputs(print_graph(*g).c_str(), stdout);
      return 0;
    }
    if (*exz) {
      auto g = load_model("zoo:" + zoo_name);  // inferred, so the file carries every shape
      export_onnx_file(*g, zoo_out);
      std::printf("wrote %s (%zu nodes)\n", zoo_out.c_str(), g->nodes().size());
      return 0;
    }
    if (*passes) {
      std::fputs(print_pass_table().c_str(), stdout);
      for (const auto& [stage, pipeline] : {std::pair{"load", &load_pipeline()}, {"target", &target_pipeline()}}) {
        std::printf("\n%s pipeline:", stage);
        for (const std::string& p : *pipeline) std::printf(" %s", p.c_str());
      }
      std::printf("\n");
      return 0;
    }
    if (*petm) {
      const pet::MutationCounts c = pet::run_mutation_test(pet_count, pet_seed);
      std::fputs(pet::format_counts(c).c_str(), stdout);
      return c.accepted_with_difference ? 1 : 0;
    }
    if (*zoo) {
      for (const auto& e : zoo_models()) std::printf("%-16s %s\n", e.name.c_str(), e.description.c_str());
      return 0;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
