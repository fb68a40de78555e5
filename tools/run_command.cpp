// `tessera run` (see run_command.h).
#include "run_command.h"

#include <cstdio>
#include <optional>

#include "driver/driver.h"
#include "frontend/onnx_tensor.h"
#include "interp/interpreter.h"
#include "runtime/arena_layout.h"
#include "runtime/latency_stats.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/thread_pool.h"

namespace tessera::tools {

namespace {

// Prints each output's checksum; writes it as output_I.pb (and .npy) into out_dir when one is given.
void print_outputs(const std::vector<Tensor>& outs, const std::vector<std::string>& names, const std::string& out_dir,
                   bool npy) {
  for (size_t i = 0; i < outs.size(); ++i) {
    std::printf("output %zu '%s' %s[%s] checksum %.6g\n", i, names[i].c_str(), std::string(dtype_name(outs[i].dtype())).c_str(),
                dims_to_string(outs[i].dims()).c_str(), checksum(outs[i]));
    if (!out_dir.empty()) {
      std::string base = out_dir + "/output_" + std::to_string(i);
      write_tensor_pb(base + ".pb", outs[i], names[i]);
      if (npy) write_npy(base + ".npy", outs[i]);
    }
  }
}

}  // namespace

int cmd_run(const Common& c, const Exec& e, const std::vector<std::string>& input_paths, const std::string& out_dir,
            bool npy, uint64_t seed, bool report) {
  std::string inputs_text = input_paths.empty() ? "random, seed " + std::to_string(seed) : "from files";
  // Before the run: a bad output path fails in a second, not after the run.
  if (!out_dir.empty()) ensure_writable_directory(out_dir, "--outputs '" + out_dir + "'");
  if (!e.compiled()) {
    auto t0 = Clock::now();
    std::unique_ptr<Graph> g;
    std::vector<Tensor> ins, outs;
    std::vector<std::string> names;
    if (CompiledModel::is_artifact(c.model)) {
      CompiledModel m = CompiledModel::load(c.model, e.compile_options(c));
      auto t1 = Clock::now();
      ins = input_paths.empty() ? m.random_inputs(seed) : m.read_inputs(input_paths);
      auto t2 = Clock::now();
      outs = m.run_reference(ins);
      auto t3 = Clock::now();
      for (const auto& o : m.outputs()) names.push_back(o.name);
      std::printf("model    %s (%zu nodes)\ninputs   %s\n", c.model.c_str(), m.node_count(), inputs_text.c_str());
      std::printf("load     %.1f ms\nrun      %.1f ms (reference interpreter)\n", ms_between(t0, t1), ms_between(t2, t3));
    } else {
      g = load_model(c.model, c.load_options());
      auto t1 = Clock::now();
      ins = input_paths.empty() ? random_inputs(*g, seed) : read_inputs(*g, input_paths);
      auto t2 = Clock::now();
      outs = interpret(*g, ins);
      auto t3 = Clock::now();
      for (const Value* v : g->outputs()) names.push_back(v->name);
      std::printf("model    %s (%zu nodes)\ninputs   %s\n", c.model.c_str(), g->nodes().size(), inputs_text.c_str());
      std::printf("load     %.1f ms\nrun      %.1f ms (reference interpreter)\n", ms_between(t0, t1), ms_between(t2, t3));
    }
    print_outputs(outs, names, out_dir, npy);
    return 0;
  }
  auto t0 = Clock::now();
  CompiledModel m = open_compiled(c, e);
  double load_compile = m.last_compile_seconds() * 1000;  // kernels an artifact re-made on load
  auto t1 = Clock::now();
  std::vector<Tensor> ins = input_paths.empty() ? m.random_inputs(seed) : m.read_inputs(input_paths);
  m.prepare(ins);
  double compile_ms = load_compile + m.last_compile_seconds() * 1000;
  // Loaded and compiled, before any run: the weights and code this process holds.
  std::optional<int64_t> rss = runtime::resident_bytes(), hwm = runtime::peak_resident_bytes();
  auto t3 = Clock::now();
  std::vector<Tensor> outs = m.run(ins);
  auto t4 = Clock::now();
  std::printf("model    %s (%zu nodes)\ninputs   %s\n", c.model.c_str(), m.node_count(), inputs_text.c_str());
  std::printf("load     %.1f ms\n", ms_between(t0, t1) - load_compile);
  std::printf("compile  %.1f ms (%d compiled kernels, %d reference steps)\n", compile_ms, m.compiled_steps(),
              m.reference_steps());
  // An artifact: the whole open (load + its kernels) and where it went.
  if ((report || e.verbose) && !m.load_split().empty())
    std::printf("opened   %.1f ms: %s\n", ms_between(t0, t1), m.load_split().c_str());
  std::printf("run      %.1f ms (compiled, %d threads)\n", ms_between(t3, t4), ThreadPool::global().threads());
  std::printf("memory   peak activations %s\n", runtime::format_bytes(m.peak_activation_bytes()).c_str());
  if (rss && hwm)
    std::printf("memory   after load and compile: RSS %s, peak RSS %s\n", runtime::format_bytes(*rss).c_str(),
                runtime::format_bytes(*hwm).c_str());
  if (report) std::fputs(m.report().c_str(), stdout);
  std::vector<std::string> names;
  for (const auto& o : m.outputs()) names.push_back(o.name);
  print_outputs(outs, names, out_dir, npy);
  return 0;
}

}  // namespace tessera::tools
