// `tessera tune` and `tessera tune-worker` (see tune_command.h).
#include "tune_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "codegen/llvm/jit.h"
#include "cost/hardware.h"
#include "cost/static_features.h"
#include "cost/static_model.h"
#include "support/error.h"
#include "support/thread_pool.h"
#include "tune/cost_eval.h"
#include "tune/feature_dump.h"
#include "tune/measure_worker.h"
#include "tune/task_space.h"

namespace tessera::tools {

int cmd_tune(tune::TuneOptions o) {
  o.exe = std::filesystem::read_symlink("/proc/self/exe").string();
  tune::TuneReport r = tune::tune_model(o);
  std::fputs(tune::report_table(r).c_str(), stdout);
  std::printf("records  %s (apply with: tessera run|bench|compile MODEL --records %s)\n", o.records.c_str(),
              o.records.c_str());
  return 0;
}

int cmd_tune_space(const tune::ModelConfig& config) {
  tune::TuningModel m = tune::open_model(config);
  const Target machine = Target::for_isa(config.isa == Isa::Host ? codegen::host_isa() : config.isa);
  for (size_t i = 0; i < m.tasks.size(); ++i) {
    const runtime::TaskUse& u = m.tasks[i];
    std::printf("task %zu/%zu  key %s  weight %d  %s\n", i + 1, m.tasks.size(), compile::key_text(u.task->key).c_str(),
                u.weight, u.task->describe().c_str());
    try {
      tune::TaskSpace space(*u.task, machine);
      for (size_t s = 0; s < space.stages().size(); ++s) {
        const schedule::StageSpace& st = space.stages()[s];
        std::printf("  %s %-14s %s:", tune::stage_position(s).c_str(), st.rule.c_str(), st.stage.c_str());
        for (const schedule::Knob& k : st.knobs) {
          std::printf(" %s=", k.name.c_str());
          for (size_t v = 0; v < k.values.size(); ++v)
            std::printf("%s%s%lld", v ? "|" : "{", k.values[v] == k.default_value ? "*" : "",
                        static_cast<long long>(k.values[v]));
          std::printf("}");
        }
        std::printf("\n");
      }
      std::printf("  %d free knobs, 10^%.1f points\n", space.free_knobs(), space.log10_size());
    } catch (const Error& e) {
      std::printf("  not tunable: %s\n", e.what());
    }
  }
  std::printf("%zu tasks (* marks each knob's default) for %s\n", m.tasks.size(), machine.to_string().c_str());
  return 0;
}

int cmd_tune_fit(const TuneFitArgs& a) {
  TESSERA_CHECK(!a.models.empty() || !a.features.empty(),
                "tune-fit needs at least one model (with --records) or a --features file");
  Isa isa = a.base.isa == Isa::Host ? codegen::host_isa() : a.base.isa;
  const tune::CostLabel label = tune::parse_cost_label(a.label);
  cost::HardwareDesc hw = a.hardware.empty() ? cost::probe_hardware(isa) : cost::find_hardware(a.hardware);
  cost::StaticModel model(hw, a.base.threads);
  std::vector<cost::FitGroup> groups;
  if (!a.models.empty()) {
    TESSERA_CHECK(!a.records.empty(), "tune-fit: models need --records FILE");
    tune::RecordFile records(a.records);
    const std::string target = Target::for_isa(isa).to_string();
    for (const std::string& spec : a.models) {
      tune::ModelConfig c = a.base;
      c.model = spec;
      c.isa = isa;
      tune::TuningModel m = tune::open_model(c);
      std::vector<cost::FitGroup> g = tune::measured_groups(m, records, target, isa, model, a.machine_code, label);
      std::fprintf(stderr, "tune-fit: %s: %zu tasks with measured candidates\n", spec.c_str(), g.size());
      for (auto& x : g) groups.push_back(std::move(x));
    }
  }
  for (const std::string& path : a.features) {
    std::vector<cost::FitGroup> g = tune::read_feature_dump(path);
    std::fprintf(stderr, "tune-fit: %s: %zu tasks with measured candidates\n", path.c_str(), g.size());
    for (auto& x : g) groups.push_back(std::move(x));
  }
  TESSERA_CHECK(!groups.empty(), "no task of these models has two or more valid records for this machine in ",
                a.records, " (run 'tessera tune --cost-model none' first)");
  if (!a.dump.empty()) tune::write_feature_dump(a.dump, groups);
  const std::string out = a.out.empty() ? tune::default_coefficients_path() : a.out;
  TESSERA_CHECK(!out.empty(), "no cache directory for the coefficients: give --coefficients FILE");
  if (a.judge_only) {
    model.load(out);
    std::printf("static model for %s (%s), label %s, coefficients %s\n%s", hw.name.c_str(), isa_name(isa).data(),
                a.label.c_str(), out.c_str(),
                tune::judge(model, groups).text().c_str());
    return 0;
  }
  tune::CostEvalOptions eo;
  eo.test_share = a.test_share;
  eo.fit = a.fit;
  tune::CostEval e = tune::fit_and_evaluate(model, groups, eo);
  std::printf("static model for %s (%s), label %s\n%s", hw.name.c_str(), isa_name(isa).data(), a.label.c_str(),
              e.text().c_str());
  std::filesystem::path dir = std::filesystem::path(out).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  model.save(out);
  std::printf("coefficients written to %s\n", out.c_str());
  return 0;
}

CLI::App* TuneCommands::add(CLI::App& app, std::string& isa, int& threads) {
  tune_ = app.add_subcommand("tune", "search kernel schedules within a time budget; write the measurements to a records file");
  tune_->add_option("--budget-minutes", budget_minutes_, "search time (default 10); the closing comparison comes after");
  tune_->add_option("--cost-model", tune_opts_.cost_model,
                    "none: measure every candidate (default); static: rank candidates by Tuna's static model, "
                    "measure only the best few of each task; xgb: XGBoost picks each round's candidates to measure "
                    "and is trained online on the measurements; attention: the attention model the same way");
  tune_->add_option("--cost-model-file", tune_opts_.cost_model_file,
                    "xgb, attention: a pre-trained model ('tessera costmodel train --out'), fine-tuned online "
                    "(default: none, learned from nothing)");
  tune_->add_option("--cost-label", cost_label_,
                    "xgb, attention: a candidate's cost the model learns from its repeated measurements: min "
                    "(default), median or ratio (the pooled cost the tuner chooses its best by)")
      ->check(CLI::IsMember({"min", "median", "ratio"}));
  tune_->add_option("--hardware", tune_opts_.hardware,
                    "static, xgb: a known machine description (default: probe this one)");
  tune_->add_option("--coefficients", tune_opts_.coefficients,
                    "static: fitted coefficients file (default: the cache directory's, if any)");
  tune_->add_option("--per-round", tune_opts_.per_round, "candidates measured per round of a task (default 8)");
  tune_->add_option("--candidate-timeout", tune_opts_.candidate_seconds, "seconds one candidate may take (default 60)");
  tune_->add_option("--seed", tune_opts_.seed, "search seed (default 1)");
  tune_->add_flag("--show-space", show_space_,
                  "list the tasks and each one's search space (rules, knobs, values); measure nothing");
  tune_->add_option("--final-runs", tune_opts_.final_runs,
                    "end-to-end runs of the default and tuned model at the end (default 30; 0: none)");
  tune_->add_option("--guard-runs", tune_opts_.guard_runs,
                    "after the budget, runs of each model per comparison of the model guard, which rejects tuned "
                    "schedules that do not make the whole model faster (default 15; 0: no guard)");
  tune_->add_option("--graph-share", tune_opts_.graph_share,
                    "share of the budget at most for graph choices: direct or which Winograd tile per convolution "
                    "geometry, each timed in the whole model (default 0.25; 0: none measured, the records' choices "
                    "still apply)")
      ->check(CLI::Range(0.0, 1.0));
  tune_->add_option("--graph-runs", tune_opts_.graph_runs,
                    "interleaved runs of each model per graph-choice comparison (default 15)")
      ->check(CLI::Range(1, 1000));

  fit_ = app.add_subcommand("tune-fit", "fit the static cost model on measured tuning records; report its ranking on held-out candidates");
  fit_->add_option("models", fit_args_.models, "the models whose tasks the records measured (files or zoo:NAME)");
  fit_->add_option("--records", fit_args_.records, "records of measurement-only tuning ('tessera tune --cost-model none')");
  fit_->add_option("--features", fit_args_.features,
                   "candidates' features and costs a --dump-features run wrote (repeatable), fitted or judged "
                   "without compiling them again; with or instead of models and --records");
  fit_->add_option("--isa", isa, "instruction set of the records: host (default), avx2, avx512");
  fit_->add_option("--threads", threads, "threads the model runs with (the parallel balance features)")
      ->check(CLI::Range(0, ThreadPool::max_threads()));
  fit_->add_option("--hardware", fit_args_.hardware, "a known machine description (default: probe this one)");
  fit_->add_option("--coefficients", fit_args_.out, "where to write the coefficients (default: the cache directory's file)");
  fit_->add_option("--test-share", fit_args_.test_share, "share of each task's candidates held out of fitting (default 0.5)");
  fit_->add_flag("--loop-ir-only", loop_ir_only_, "features of the loop IR only (no machine code)");
  fit_->add_option("--dump-features", fit_args_.dump, "also write every candidate's features and measured cost (JSON lines)");
  fit_->add_option("--label", fit_args_.label,
                   "a schedule's cost from its repeated measurements: min (default; the least disturbed run, what "
                   "the model predicts), median, or ratio (the tuner's pooled cost: median ratio to the paired "
                   "default's runs)")
      ->check(CLI::IsMember({"min", "median", "ratio"}));
  fit_->add_option("--hidden-units", fit_args_.fit.hidden_units,
                   "hidden tanh units over the standardized terms, letting them interact (default 0: linear)")
      ->check(CLI::Range(0, 64));
  fit_->add_option("--l2", fit_args_.fit.l2, "pull of the linear coefficients toward the defaults (default 1e-4)");
  fit_->add_option("--hidden-l2", fit_args_.fit.hidden_l2, "pull of the hidden weights toward zero (default 1e-3)");
  fit_->add_option("--iterations", fit_args_.fit.iterations, "gradient steps of the fit (default 600)")
      ->check(CLI::Range(1, 100000));
  fit_->add_flag("--judge", fit_args_.judge_only,
                 "fit nothing: judge the coefficients file's model on every candidate of the records");

  worker_ = app.add_subcommand("tune-worker", "(internal) the measurement worker 'tessera tune' starts");
  worker_->group("");
  worker_->add_option("config", worker_config_)->required();
  return tune_;
}

int TuneCommands::run_tune(const tune::ModelConfig& model, const std::string& records) {
  if (show_space_) return cmd_tune_space(model);
  TESSERA_CHECK(!records.empty(), "tessera tune needs --records FILE (measurements are appended to it)");
  tune_opts_.model = model;
  tune_opts_.records = records;
  tune_opts_.budget_seconds = budget_minutes_ * 60;
  tune_opts_.cost_label = tune::parse_cost_label(cost_label_);
  return cmd_tune(tune_opts_);
}

int TuneCommands::run_other(Isa isa, int threads) {
  if (*worker_) return cmd_tune_worker(worker_config_);
  if (*fit_) {
    fit_args_.base.isa = isa;
    fit_args_.base.threads = threads;
    fit_args_.machine_code = !loop_ir_only_;
    return cmd_tune_fit(fit_args_);
  }
  return -1;
}

int cmd_tune_worker(const std::string& config_json) {
  return tune::run_measure_worker(config_json, std::cin, std::cout);
}

}  // namespace tessera::tools
