// The tessera command-line tool: run, info, print and export-zoo.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "interp/interpreter.h"
#include "ir/op_registry.h"
#include "support/error.h"
#include "zoo/zoo.h"

using namespace tessera;

namespace {

struct Common {
  std::string model;
  std::vector<std::string> shapes;
  LoadOptions load_options() const {
    LoadOptions o;
    for (const auto& s : shapes) {
      auto eq = s.rfind('=');
      TESSERA_CHECK(eq != std::string::npos && eq > 0, "--shape expects NAME=DIMS, got '", s, "'");
      o.input_shapes[s.substr(0, eq)] = parse_dims(s.substr(eq + 1));
    }
    return o;
  }
};

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

int cmd_run(const Common& c, const std::vector<std::string>& input_paths, const std::string& out_dir, bool npy,
            uint64_t seed, const std::string& backend) {
  TESSERA_CHECK(backend == "reference", "unknown --backend '", backend, "' (available: reference)");
  auto t0 = std::chrono::steady_clock::now();
  auto g = load_model(c.model, c.load_options());
  auto t1 = std::chrono::steady_clock::now();
  std::vector<Tensor> ins = input_paths.empty() ? random_inputs(*g, seed) : read_inputs(*g, input_paths);
  auto t2 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs = interpret(*g, ins);
  auto t3 = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("model    %s (%zu nodes)\n", c.model.c_str(), g->nodes().size());
  std::printf("inputs   %s\n", input_paths.empty() ? ("random, seed " + std::to_string(seed)).c_str() : "from files");
  std::printf("load     %.1f ms\nrun      %.1f ms (reference interpreter)\n", ms(t0, t1), ms(t2, t3));
  if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
  for (size_t i = 0; i < outs.size(); ++i) {
    const Value* v = g->outputs()[i];
    std::printf("output %zu '%s' %s[%s] checksum %.6g\n", i, v->name.c_str(), std::string(dtype_name(outs[i].dtype())).c_str(),
                dims_to_string(outs[i].dims()).c_str(), checksum(outs[i]));
    if (!out_dir.empty()) {
      std::string base = out_dir + "/output_" + std::to_string(i);
      write_tensor_pb(base + ".pb", outs[i], v->name);
      if (npy) write_npy(base + ".npy", outs[i]);
    }
  }
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
  int64_t params = 0;
  for (const auto& v : g->values())
    if (v->constant && is_float(v->constant->dtype())) params += v->constant->numel();
  std::printf("model      %s\nopset      %lld\nnodes      %zu\nparameters %s (%lld)\nFLOPs      %s\n", c.model.c_str(),
              static_cast<long long>(g->opset), g->nodes().size(), human(static_cast<double>(params)).c_str(),
              static_cast<long long>(params), human(flops).c_str());
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
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("model", common.model, "ONNX file, or zoo:NAME for an embedded model")->required();
    sub->add_option("--shape", common.shapes, "fix an input's shape, NAME=1x3x224x224 (repeatable)");
  };

  std::vector<std::string> inputs;
  std::string out_dir, backend = "reference";
  bool npy = false;
  uint64_t seed = 0;
  CLI::App* run = app.add_subcommand("run", "run a model and print time and output checksums");
  add_common(run);
  run->add_option("--inputs", inputs, "input directory (input_0.pb ...) or files (.pb/.npy) in input order");
  run->add_option("--outputs", out_dir, "write output_0.pb ... to this directory");
  run->add_flag("--npy", npy, "also write outputs as .npy");
  run->add_option("--seed", seed, "seed for random inputs (default 0)");
  run->add_option("--backend", backend, "execution backend: reference");

  CLI::App* info = app.add_subcommand("info", "print op histogram, parameters, FLOPs and signature");
  add_common(info);

  CLI::App* print = app.add_subcommand("print", "print the graph IR as text");
  add_common(print);

  std::string zoo_name, zoo_out;
  CLI::App* exz = app.add_subcommand("export-zoo", "write an embedded zoo model as an ONNX file");
  exz->add_option("name", zoo_name, "zoo model name")->required();
  exz->add_option("-o,--output", zoo_out, "output .onnx file")->required();

  CLI::App* zoo = app.add_subcommand("zoo", "list the embedded zoo models");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run) return cmd_run(common, inputs, out_dir, npy, seed, backend);
    if (*info) return cmd_info(common);
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
