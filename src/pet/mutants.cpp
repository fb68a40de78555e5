// The mutant generator's driver (see mutants.h): checks the subprogram, runs
// the fixed families and Algorithm 1 node by node, deduplicates and bounds.
#include "pet/mutants.h"

#include <chrono>
#include <unordered_set>

#include "pet/mutants_internal.h"
#include "support/error.h"

namespace tessera::pet {
namespace detail {

bool GenContext::wants(const std::string& family) const {
  if (opts.families.empty() || opts.families.count(family)) return true;
  return family.rfind("dfs:", 0) == 0 && opts.families.count("dfs");
}

const Tensor* GenContext::weight_of(const Value* v) const {
  if (!weights) return nullptr;
  for (size_t i = num_activations; i < sub.inputs().size(); ++i)
    if (sub.inputs()[i] == v && i - num_activations < weights->size()) return &(*weights)[i - num_activations];
  return nullptr;
}

}  // namespace detail

std::vector<Mutant> generate_mutants(const Graph& sub, size_t num_activations, const MutantOptions& opts,
                                     MutantReport* report_out, const std::vector<Tensor>* weights) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  MutantReport report;
  std::vector<Mutant> out;
  auto finish = [&] {
    report.milliseconds = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (report_out) *report_out = report;
    return out;
  };
  if (sub.opset < 13) {
    report.skipped.push_back("opset " + std::to_string(sub.opset) + ": the generator writes opset-13 ops");
    return finish();
  }
  if (num_activations > sub.inputs().size()) {
    report.skipped.push_back("more activations than inputs");
    return finish();
  }
  // Only multi-linear subprograms: a node the generator does not know makes
  // the whole subprogram unusable (the verifier could not check it).
  for (const auto& n : sub.nodes()) {
    std::string why = not_multilinear_reason(*n, sub.opset);
    if (!why.empty()) {
      report.skipped.push_back(n->describe() + ": not in the generator's operator set (" + why + ")");
      return finish();
    }
  }

  std::unordered_set<uint64_t> seen{structural_hash(sub)};
  detail::GenContext ctx{sub, num_activations, weights, opts, report, {}};
  ctx.add = [&](const std::string& family, bool equivalent, bool weight_dependent,
                const std::function<std::shared_ptr<Graph>()>& build) {
    if (!ctx.wants(family) || ctx.past_deadline()) return;
    if (static_cast<int>(out.size()) >= opts.max_mutants) {
      ++report.truncated;
      return;
    }
    std::shared_ptr<Graph> g;
    try {
      g = build();
    } catch (const std::exception& e) {
      report.skipped.push_back(family + ": " + e.what());
      return;
    }
    uint64_t h = structural_hash(*g);
    if (!seen.insert(h).second) {
      ++report.duplicates;
      return;
    }
    out.push_back({g, family, equivalent, weight_dependent, h});
    ++report.per_family[family];
  };

  if (opts.fixed) {
    for (const auto& n : sub.nodes()) {
      if (ctx.past_deadline()) break;
      if (n->op_type == "Conv") detail::conv_families(ctx, *n);
      else if (n->op_type == "AveragePool") detail::avgpool_families(ctx, *n);
    }
    detail::merge_families(ctx);
  }
  if (opts.dfs)
    for (const auto& n : sub.nodes()) {
      if (ctx.out_of_states()) {
        report.out_of_states = true;
        break;
      }
      if (ctx.past_deadline()) break;
      if (n->op_type == "Conv" || n->op_type == "MatMul") detail::dfs_mutants(ctx, *n);
    }
  return finish();
}

}  // namespace tessera::pet
