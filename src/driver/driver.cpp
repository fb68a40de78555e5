// Model loading and input preparation.
#include "driver/driver.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "interp/interpreter.h"
#include "support/dtype_dispatch.h"
#include "ops/registry.h"
#include "opt/pipeline.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/memory_trace.h"
#include "zoo/zoo.h"

namespace tessera {

// Loading: import (or build the zoo model) with the types as given, then the
// load pipeline: inference and constant folding first, the graph passes after.
std::unique_ptr<Graph> load_model(const std::string& spec, const LoadOptions& opts) {
  std::unique_ptr<Graph> g;
  const bool zoo = spec.rfind("zoo:", 0) == 0;
  if (zoo) {
    g = build_zoo_model(spec.substr(4));
    for (const auto& [name, dims] : opts.input_shapes) {
      Value* v = g->find_value(name);
      TESSERA_CHECK(v && v->is_graph_input, "--shape names '", name, "' which is not an input of ", spec);
      v->type.dims = dims;
    }
  } else {
    ImportOptions io;
    io.input_shapes = opts.input_shapes;
    io.infer_types = false;
    g = import_onnx_file(spec, io);
  }
  try {
    run_passes(*g, load_pipeline(), opts.passes);
  } catch (const Error& e) {
    if (zoo) throw;
    throw Error(spec + ": " + e.what());  // as import's errors name the file
  }
  mark_memory_phase("load passes");
  return g;
}

Tensor random_tensor(DType dtype, const Dims& dims, std::mt19937_64& rng) {
  Tensor t(dtype, dims);
  dispatch_dtype(t.dtype(), [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        p[i] = static_cast<T>(rng() % 10);
      } else {
        double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        p[i] = to_storage<T>(2.0 * u - 1.0);
      }
    }
  });
  return t;
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> ins;
  for (const Value* v : g.inputs()) {
    TESSERA_CHECK(v->type.fully_known(), "input '", v->name, "' has dynamic shape ", v->type.to_string(),
                  ": fix it with --shape ", v->name, "=DIMS or give --inputs");
    check_tensor_fits(v->type.dtype, v->type.dims, "input '" + v->name + "'");
    ins.push_back(random_tensor(v->type.dtype, v->type.dims, rng));
  }
  return ins;
}

std::vector<Tensor> read_inputs(const Graph& g, const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  if (paths.size() == 1 && std::filesystem::is_directory(paths[0])) {
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      std::string base = paths[0] + "/input_" + std::to_string(i);
      if (std::filesystem::exists(base + ".pb")) files.push_back(base + ".pb");
      else if (std::filesystem::exists(base + ".npy")) files.push_back(base + ".npy");
      else TESSERA_FAIL("input directory ", paths[0], " has no input_", i, ".pb or .npy for input '",
                        g.inputs()[i]->name, "'");
    }
  } else {
    files = paths;
  }
  TESSERA_CHECK(files.size() == g.inputs().size(), "the model has ", g.inputs().size(), " input(s) but ",
                files.size(), " file(s) were given");
  std::vector<Tensor> ins;
  for (const auto& f : files) ins.push_back(read_tensor_file(f));
  return ins;
}

double checksum(const Tensor& t) {
  if (t.dtype() == DType::String) return static_cast<double>(t.numel());
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.get_double(i);
  return s;
}

}  // namespace tessera
