// Helpers for tests of graph rewrites (the blocked layout, Winograd, fusion):
// op counts, a seeded convolution builder, outputs compared at the scale of
// the output, the ISA x fusion loop of compiled runs, and a compiled model's
// artifact round trip.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "random_tensor.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "tessera/tensor.h"

namespace tessera::testing {

// Nodes of op type `op` in g.
inline int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

// A k x k "same" convolution `name` of x (C channels) to M channels, its
// weights uniform in [-0.5, 0.5) and its bias in [-2, 2), drawn from `seed`
// and seed + 1; `seed` is advanced past both, so consecutive calls draw
// distinct constants.
inline Value* conv(Graph& g, Value* x, int64_t M, int64_t C, int64_t k, const std::string& name, uint32_t& seed) {
  AttrMap a;
  a["pads"] = Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
  Value* w = g.add_constant(name + ".w", random_f32({M, C, k, k}, seed++, -0.5f, 0.5f));
  Value* b = g.add_constant(name + ".b", random_f32({M}, seed++));
  return g.add_node("Conv", {x, w, b}, {name}, std::move(a), name)->outputs[0];
}

// Inferring `n` (given `domain`) fails with an error that names it and says `what`.
inline void expect_error_naming(Node& n, const std::string& domain, const std::string& what) {
  n.domain = domain;
  try {
    infer_node(n, 13);
    FAIL() << n.name << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(n.name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// Elements within tol of the output's scale (1 + its largest magnitude):
// sums of hundreds of products rounded in another order (FMA, blocks,
// Winograd's transforms) differ by a few ulps of their terms, not of a
// result that cancels to near zero.
inline void expect_near_scaled(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(got[i].dims(), want[i].dims());
    double scale = 1;
    for (int64_t k = 0; k < want[i].numel(); ++k) scale = std::max(scale, 1 + std::abs(want[i].get_double(k)));
    for (int64_t k = 0; k < got[i].numel(); ++k)
      ASSERT_NEAR(got[i].get_double(k), want[i].get_double(k), tol * scale) << "element " << k;
  }
}

// The instruction sets compiled tests run on, AVX-512 then AVX2; one this
// host lacks is left out and logged as not run (the test itself is not
// skipped: the other ISA still runs).
inline std::vector<codegen::Isa> host_isas() {
  std::vector<codegen::Isa> isas;
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (codegen::host_supports(isa)) isas.push_back(isa);
    else GTEST_LOG_(INFO) << codegen::isa_name(isa) << " not on this host: not run";
  }
  return isas;
}

// Executor options for each ISA of host_isas(), the fusion profile off (the
// static table's fusion decisions: what runs does not depend on the
// profile database).
inline std::vector<runtime::ExecutorOptions> host_isa_options() {
  std::vector<runtime::ExecutorOptions> r;
  for (codegen::Isa isa : host_isas()) {
    runtime::ExecutorOptions o;
    o.isa = isa;
    o.fusion_profile = false;
    r.push_back(o);
  }
  return r;
}

// Runs body(options) for each ISA of host_isas(), fused and unfused, under a
// trace naming both.
template <typename Body>
void for_each_isa_and_fusion(Body&& body) {
  for (codegen::Isa isa : host_isas())
    for (bool fusion : {true, false}) {
      SCOPED_TRACE(std::string(codegen::isa_name(isa)) + (fusion ? ", fused" : ", unfused"));
      runtime::ExecutorOptions o;
      o.isa = isa;
      o.fusion = fusion;
      body(o);
    }
}

// Saves `m` as an artifact in the temporary directory (named after `tag`
// and the process) and loads it back with default options and its saved ISA;
// the file is removed.
inline std::unique_ptr<runtime::Executor> save_and_load(const runtime::Executor& m, const std::string& tag) {
  namespace fs = std::filesystem;
  std::string path = (fs::temp_directory_path() / ("tessera_" + tag + "_" + std::to_string(::getpid()) + ".tsr")).string();
  m.save(path);
  auto loaded = runtime::Executor::load(path, runtime::ExecutorOptions{}, true);
  fs::remove(path);
  return loaded;
}

}  // namespace tessera::testing
