// Import -> export -> import over every conformance model that imports: the
// graph (structural hash and printed form) and its outputs must not change.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "driver/driver.h"
#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "interp/interpreter.h"
#include "ops/registry.h"
#include "support/error.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(RoundTrip, ConformanceModelsSurviveExport) {
  fs::path root = fs::path(TESSERA_ONNX_TESTS);
  ASSERT_TRUE(fs::exists(root / "node")) << "conformance data not found at " << root;
  int imported = 0, compared = 0, total = 0, named = 0;
  for (const char* suite : {"node", "simple", "pytorch-converted", "pytorch-operator"}) {
    for (const auto& e : fs::directory_iterator(root / suite)) {
      fs::path model = e.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      ++total;
      std::unique_ptr<Graph> g;
      try {
        g = import_onnx_file(model.string());
      } catch (const Error&) {
        continue;  // not importable yet: the conformance suite tracks that
      }
      ++imported;
      std::unique_ptr<Graph> again;
      try {
        again = import_onnx_bytes(export_onnx_bytes(*g), e.path().string());
      } catch (const Error& err) {
        ADD_FAILURE() << model << ": re-import of the export failed: " << err.what();
        continue;
      }
      EXPECT_EQ(structural_hash(*g), structural_hash(*again)) << model;
      EXPECT_EQ(print_graph(*g), print_graph(*again)) << model;
      EXPECT_EQ(g->dim_names, again->dim_names) << model;  // symbolic dims keep their names
      if (!g->dim_names.empty()) ++named;
      // Same outputs on the case's own inputs, bit for bit (unless random ops
      // make the outputs irreproducible).
      fs::path ds = e.path() / "test_data_set_0";
      bool deterministic = true;
      for (const auto& n : g->nodes()) {
        const OpDef* def = op_registry().find(n->op_type, n->domain);
        deterministic &= def && def->deterministic;
      }
      if (!fs::exists(ds) || !deterministic) continue;
      std::vector<Tensor> a, b;
      try {
        std::vector<Tensor> ins = read_inputs(*g, {ds.string()});
        a = interpret(*g, ins);
        b = interpret(*again, ins);
      } catch (const Error&) {
        continue;  // run-time failures are the conformance suite's business
      }
      ++compared;
      ASSERT_EQ(a.size(), b.size()) << model;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].dims(), b[i].dims()) << model;
        if (a[i].dtype() != DType::String && a[i].nbytes() == b[i].nbytes()) {
          EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << model << " output " << i;
        }
      }
    }
  }
  std::printf("round trip: %d of %d models imported (%d with named dims), %d compared on their data\n", imported, total,
              named, compared);
  // A floor, so that a regression making many models unimportable shows here
  // too (1718 import today; the conformance expectation file lists the rest).
  EXPECT_GE(imported, 1700);
}

// A dynamic dimension's name (ONNX's dim_param) survives export, import and
// clone; a static dimension writes its value, whatever name the map gives it.
TEST(RoundTrip, DynamicDimensionsKeepTheirNames) {
  Graph g;
  g.opset = 13;
  Value* a = g.add_input("a", {DType::F32, {-1, 16, -1}, true});
  g.add_output(g.add_node("Relu", {a}, {"y"}, {}, "relu")->outputs[0]);
  g.outputs()[0]->type = {DType::F32, {-1, 16, -1}, true};
  g.dim_names["a"] = {"batch", "ignored", ""};
  g.dim_names["y"] = {"batch", "", "len"};
  std::unique_ptr<Graph> again = import_onnx_bytes(export_onnx_bytes(g), "");
  std::map<std::string, std::vector<std::string>> want{{"a", {"batch", "", ""}}, {"y", {"batch", "", "len"}}};
  EXPECT_EQ(again->dim_names, want);
  EXPECT_EQ(again->clone()->dim_names, want);
}

}  // namespace
}  // namespace tessera
