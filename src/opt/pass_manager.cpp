// The table of graph passes and the manager that runs a pipeline of them.
#include "opt/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "opt/passes.h"
#include "support/error.h"

namespace tessera {

namespace {

bool vector_of_8(const PassContext& c) { return c.lanes >= 8; }
bool can_measure(const PassContext& c) { return static_cast<bool>(c.measure); }
bool winograd_on(const PassContext& c) { return !c.options || c.options->enabled("winograd"); }

// Every graph pass, in pipeline order (the pipelines themselves are listed in
// opt/pipeline.cpp). Columns: name, stage, flag (--no-FLAG), description,
// function, condition and its words, the pass it needs, what runs otherwise.
std::vector<Pass> builtin_passes() {
  using S = PassStage;
  return {
      {"fold-constants", S::Load, "fold-constants",
       "infer every type; fold nodes of constant inputs (and Shape/Size of static shapes) to constants",
       [](Graph& g, const PassContext&) { return fold_constants(g); }, nullptr, "", "", infer_graph},
      {"fold-batchnorm", S::Load, "fold-batchnorm", "fold an inference BatchNorm after a Conv into the Conv",
       [](Graph& g, const PassContext&) { return fold_batchnorm(g); }},
      {"simplify", S::Load, "rewrite", "exact simplifications: Pow(x, 2) -> x*x, size-1 Transposes, tiling Slices",
       [](Graph& g, const PassContext&) { return simplify_graph(g); }},
      {"math-rewrite", S::Load, "rewrite", "DNNFusion's mathematical-property rewriting, while it lowers FLOPs",
       [](Graph& g, const PassContext&) { return rewrite_math_properties(g); }},
      {"pet", S::Target, "pet",
       "PET: multi-linear subprograms replaced by measured-faster mutants, partially equivalent ones corrected",
       run_pet, can_measure, "a compiled runtime measuring candidates"},
      {"skip-padding-taps", S::Target, "skip-padding-taps",
       "convolutions on dilated or short axes split by output region, each computing only the taps that read the input",
       [](Graph& g, const PassContext&) { return skip_padding_taps(g); }},
      {"pool-after-conv", S::Target, "pool-after-conv",
       "an average pool feeding a 1x1 convolution to fewer channels pools the convolution's output instead",
       [](Graph& g, const PassContext&) { return move_pools_after_convs(g); }},
      {"separable-max-pool", S::Target, "separable-max-pool",
       "a max pool over a 3x3x3 (or larger) window as one max pool per axis: 3 + 3 + 3 taps instead of 27",
       [](Graph& g, const PassContext&) { return separate_max_pools(g); }},
      {"blocked-layout", S::Target, "blocked-layout",
       "float convolutions to the channel-blocked layout NCHWc, one vector of channels per block",
       [](Graph& g, const PassContext& c) { return to_blocked_layout(g, c.lanes); }, vector_of_8, "8+ f32 lanes"},
      {"dilation-phases", S::Target, "dilation-phases",
       "dilated 3x3 blocked convolutions as undilated ones on the input's phases in the batch, for Winograd to take",
       [](Graph& g, const PassContext&) { return dilations_to_phases(g); }, winograd_on, "the winograd pass on",
       "blocked-layout"},
      {"winograd", S::Target, "winograd", "3x3 stride-1 blocked convolutions as Winograd F(4x4) or F(2x2) where it pays, per layer",
       [](Graph& g, const PassContext& c) {
         return c.options ? to_winograd(g, 0, c.options->winograd_tiles) : to_winograd(g);
       },
       nullptr, "", "blocked-layout"},
      {"fold-channel-scale", S::Target, "fold-channel-scale",
       "a blocked convolution of a per-channel scaled map scales its weights instead",
       [](Graph& g, const PassContext&) { return fold_channel_scales(g); }, nullptr, "", "blocked-layout"},
      // Registered for the PET stage (issue 19), which will run it right after PET's mutants are
      // spliced in, before blocked-layout; in no pipeline until then (`--dump-after`, tests).
      {"rt-simplify", S::Target, "rt-simplify",
       "PET's post-optimizations: R/T chains moved past elementwise ops, inverse pairs removed, chains merged",
       [](Graph& g, const PassContext&) { return simplify_rt(g); }},
  };
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string flag_names(const PassRegistry& r) {
  std::vector<std::string> flags;
  for (const PassFlag& f : pass_flags(r)) flags.push_back("--no-" + f.flag);
  return joined(flags);
}

// Why the pass cannot run now ("" when it can).
std::string skip_reason(const Pass& p, const PassOptions& opts, const PassContext& ctx,
                        const std::set<std::string>& ran) {
  if (!opts.enabled(p.name)) return "disabled (--no-" + p.flag + ")";
  if (!p.needs.empty() && !ran.count(p.needs)) return p.needs + " did not run";
  if (p.applies && !p.applies(ctx)) return "needs " + p.applies_text;
  return "";
}

}  // namespace

const char* stage_name(PassStage s) { return s == PassStage::Load ? "load" : "target"; }

const PassRegistry& PassRegistry::global() {
  static const PassRegistry r = [] {
    PassRegistry reg;
    for (Pass& p : builtin_passes()) reg.add(std::move(p));
    return reg;
  }();
  return r;
}

void PassRegistry::add(Pass p) {
  TESSERA_CHECK(!p.name.empty() && p.run, "a pass needs a name and a function");
  TESSERA_CHECK(!find(p.name), "pass '", p.name, "' is registered twice");
  passes_.push_back(std::move(p));
}

const Pass* PassRegistry::find(const std::string& name) const {
  for (const Pass& p : passes_)
    if (p.name == name) return &p;
  return nullptr;
}

const Pass& PassRegistry::get(const std::string& name) const {
  const Pass* p = find(name);
  TESSERA_CHECK(p, "unknown pass '", name, "' (passes: ", names(), ")");
  return *p;
}

std::string PassRegistry::names() const {
  std::vector<std::string> names;
  for (const Pass& p : passes_) names.push_back(p.name);
  return joined(names);
}

void PassOptions::disable(const std::string& pass, const PassRegistry& r) { disabled.insert(r.get(pass).name); }

void PassOptions::disable_flag(const std::string& flag, const PassRegistry& r) {
  bool any = false;
  for (const Pass& p : r.passes())
    if (p.flag == flag) {
      disabled.insert(p.name);
      any = true;
    }
  TESSERA_CHECK(any, "unknown pass flag --no-", flag, " (pass flags: ", flag_names(r), ")");
}

void check_pass_names(const PassOptions& opts, const PassRegistry& r) {
  for (const std::string& n : opts.disabled) r.get(n);
  for (const std::string& n : opts.dump_after) r.get(n);
}

std::vector<PassFlag> pass_flags(const PassRegistry& r) {
  std::vector<PassFlag> flags;
  for (const Pass& p : r.passes()) {
    auto it = std::find_if(flags.begin(), flags.end(), [&](const PassFlag& f) { return f.flag == p.flag; });
    if (it == flags.end()) flags.push_back({p.flag, p.stage, {p.name}});
    else it->passes.push_back(p.name);
  }
  return flags;
}

std::vector<PassRecord> run_passes(Graph& g, const std::vector<std::string>& pipeline, const PassOptions& opts,
                                   const PassContext& ctx, const PassRegistry& r) {
  using Clock = std::chrono::steady_clock;
  check_pass_names(opts, r);
  std::vector<PassRecord> records;
  std::set<std::string> ran;
  std::vector<std::string> ran_in_order;
  PassContext run_ctx = ctx;
  run_ctx.options = &opts;
  for (const std::string& name : pipeline) {
    const Pass& p = r.get(name);
    PassRecord rec{p.name};
    rec.skipped = skip_reason(p, opts, run_ctx, ran);
    auto t0 = Clock::now();
    if (rec.skipped.empty()) {
      rec.rewrites = p.run(g, run_ctx);
      rec.ran = true;
      ran.insert(p.name);
      ran_in_order.push_back(p.name);
    } else if (p.otherwise) {
      p.otherwise(g);
    }
    rec.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (opts.verbose) {
      if (rec.ran)
        std::fprintf(stderr, "pass %-20s %6d rewrites %9.2f ms\n", p.name.c_str(), rec.rewrites, rec.seconds * 1e3);
      else
        std::fprintf(stderr, "pass %-20s skipped: %s\n", p.name.c_str(), rec.skipped.c_str());
    }
    if (opts.dump_after.count(p.name)) {
      if (rec.ran)
        std::fprintf(stderr, "--- graph after pass %s (%d rewrites) ---\n%s--- end of graph after pass %s ---\n",
                     p.name.c_str(), rec.rewrites, print_graph(g).c_str(), p.name.c_str());
      else
        std::fprintf(stderr, "--- pass %s did not run (%s): no graph dumped ---\n", p.name.c_str(),
                     rec.skipped.c_str());
    }
    if (opts.verify_each && rec.ran) {
      try {
        verify_graph(g);
        verify_schemas(g);
      } catch (const Error& e) {
        TESSERA_FAIL("the graph is broken after pass '", p.name, "': ", e.what());
      }
    }
    records.push_back(std::move(rec));
  }
  if (!opts.verify_each && !ran_in_order.empty()) {
    try {
      verify_graph(g);
      verify_schemas(g);
    } catch (const Error& e) {
      TESSERA_FAIL("the graph is broken after passes ", joined(ran_in_order), ": ", e.what(),
                   " (--verify-each names the pass)");
    }
  }
  return records;
}

std::string print_pass_table(const PassRegistry& r) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-7s %-24s %s\n", "pass", "stage", "turned off by", "what it does");
  s += line;
  for (const Pass& p : r.passes()) {
    std::string when;
    if (!p.needs.empty()) when += " (only after " + p.needs + ")";
    if (!p.applies_text.empty()) when += " (only with " + p.applies_text + ")";
    std::snprintf(line, sizeof line, "%-20s %-7s %-24s %s%s\n", p.name.c_str(), stage_name(p.stage),
                  ("--no-" + p.flag).c_str(), p.description.c_str(), when.c_str());
    s += line;
  }
  return s;
}

}  // namespace tessera
