// Helpers for the tuner's tests (test_tuner.cpp, test_tuner_cost_models.cpp):
// a small model, a folder per test process, and quick tuning options that
// start real workers (the tessera CLI, TESSERA_CLI, defined for the test
// files that use it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_export.h"
#include "ir/graph.h"
#include "random_tensor.h"
#include "temp_folder.h"
#include "tune_test_options.h"
#include "tune/record.h"
#include "tune/tuner.h"

namespace tessera::testing {

// x f32[1,8,12,12] -> Conv 16x3x3 (pad 1) -> Relu -> GlobalAveragePool ->
// Flatten -> Gemm 16->10: a contraction with a tiled rule, a reduction and a
// small product. `prefix` renames every node and value.
inline std::unique_ptr<Graph> small_net(const std::string& prefix = "") {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input(prefix + "x", {DType::F32, {1, 8, 12, 12}, true});
  Value* w = g->add_constant(prefix + "w", random_f32({16, 8, 3, 3}, 3, -0.5f, 0.5f));
  Value* fc = g->add_constant(prefix + "fc", random_f32({10, 16}, 4, -0.5f, 0.5f));
  AttrMap conv;
  conv["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, w}, {prefix + "c"}, conv, prefix + "conv")->outputs[0];
  Value* r = g->add_node("Relu", {c}, {prefix + "r"}, {}, prefix + "relu")->outputs[0];
  Value* p = g->add_node("GlobalAveragePool", {r}, {prefix + "p"}, {}, prefix + "pool")->outputs[0];
  Value* f = g->add_node("Flatten", {p}, {prefix + "f"}, {}, prefix + "flatten")->outputs[0];
  AttrMap gemm;
  gemm["transB"] = Attribute::of_int(1);
  Value* y = g->add_node("Gemm", {f, fc}, {prefix + "y"}, gemm, prefix + "gemm")->outputs[0];
  g->add_output(y);
  return g;
}

// A folder per test process, removed when it exits: test runs of other
// checkouts on the same machine (or ctest -j) must not write into each
// other's records files (with one shared folder, another checkout's run
// appending its "cheat" record is the likely cause of a record with costs
// seen by WrongOutputsAreRecordedAndNeverApplied).
inline std::string temp_path(const std::string& name) {
  static const TempFolder folder("tuner");
  return folder.path(name);
}

// small_net as an ONNX file in that folder, written once.
inline std::string small_net_file() {
  static const std::string path = [] {
    std::string p = temp_path("small_net.onnx");
    export_onnx_file(*small_net(), p);
    return p;
  }();
  return path;
}

// A few seconds of tuning small_net into `records`, one thread, few repeats,
// no closing comparison, guard, confirmation or graph choices.
inline tune::TuneOptions quick_options(const std::string& records) {
  tune::TuneOptions o = quick_tune_options(small_net_file(), records);
  // This process's own fusion profile: the tests open the model themselves
  // too, outside tune_model (whose private snapshot of the default profile
  // covers its run only), and other tests' profiling must not change that plan.
  o.model.fusion_db = temp_path("fusion_profile.tsv");
  return o;
}

// The records of a records file.
inline std::vector<tune::Record> read_records(const std::string& path) { return tune::RecordFile(path).records(); }

}  // namespace tessera::testing
