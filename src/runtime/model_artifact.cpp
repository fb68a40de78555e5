// Saving and loading a compiled model as an artifact: the graph as ONNX bytes,
// the compile options, the input signatures of its plans and, per compiled
// step of each plan, its task key, its packed weights and (at the first step
// of each task) the task's schedule. Loading compiles those signatures again
// with the saved schedules, and takes the packed weights as saved instead of
// packing them again.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

#include "frontend/onnx_export.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "opt/pipeline.h"
#include "support/artifact.h"
#include "compile/task.h"
#include "runtime/executor.h"
#include "support/checked_int.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tessera::runtime {

namespace {

constexpr const char* kKindPrefix = "tessera compiled model ";
constexpr int kModelFormat = 2;  // 2: schedules keyed by task

std::string value_section(size_t plan, int input) {
  return "signature." + std::to_string(plan) + ".value." + std::to_string(input);
}

// "f32[1x3x8x8];i64[2]|1" : input types, then the inputs whose values are keyed.
std::string signature_line(const Plan& p) {
  std::string s;
  for (size_t i = 0; i < p.input_dtypes.size(); ++i) {
    if (i) s += ';';
    s += std::string(dtype_name(p.input_dtypes[i])) + "[" + dims_to_string(p.input_dims[i]) + "]";
  }
  s += '|';
  for (size_t k = 0; k < p.value_inputs.size(); ++k) s += (k ? "," : "") + std::to_string(p.value_inputs[k]);
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> r;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      r.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  r.push_back(cur);
  return r;
}

// Inputs for a saved signature: zeros, and the saved values where the plan
// depends on them.
std::vector<Tensor> signature_inputs(const Artifact& a, size_t plan, const std::string& line, const std::string& path) {
  auto bar = line.find('|');
  TESSERA_CHECK(bar != std::string::npos, path, ": malformed signature '", line, "'");
  std::vector<Tensor> ins;
  std::string types = line.substr(0, bar);
  if (!types.empty())
    for (const std::string& t : split(types, ';')) {
      auto lb = t.find('['), rb = t.rfind(']');
      TESSERA_CHECK(lb != std::string::npos && rb == t.size() - 1, path, ": malformed signature '", line, "'");
      DType dt = dtype_from_name(t.substr(0, lb));
      std::string d = t.substr(lb + 1, rb - lb - 1);
      TESSERA_CHECK(dt != DType::Undefined, path, ": malformed signature '", line, "'");
      ins.emplace_back(dt, d == "scalar" ? Dims{} : parse_dims(d));
    }
  std::string keyed = line.substr(bar + 1);
  if (!keyed.empty())
    for (const std::string& k : split(keyed, ',')) {
      size_t i = std::stoul(k);
      TESSERA_CHECK(i < ins.size(), path, ": malformed signature '", line, "'");
      onnx::TensorProto p;
      TESSERA_CHECK(p.ParseFromString(a.section(value_section(plan, static_cast<int>(i)))), path,
                    ": malformed saved input value");
      ins[i] = tensor_from_proto(p, "", "saved input value");
    }
  return ins;
}

std::string step_section(size_t plan, size_t step, const std::string& what) {
  return "plan." + std::to_string(plan) + ".step." + std::to_string(step) + "." + what;
}

// The schedules and packed weights saved for plan `plan`.
SavedSteps saved_steps(const Artifact& a, size_t plan, size_t steps, const std::string& path) {
  SavedSteps s;
  for (size_t k = 0; k < steps; ++k) {  // the nodes of every step, while there are steps
    auto it = a.sections.find(step_section(plan, k, "nodes"));
    if (it == a.sections.end()) break;
    std::vector<int> nodes;
    for (const std::string& w : split(it->second, ' ')) {
      if (w.empty()) continue;
      std::optional<int64_t> node = parse_int64(w);
      TESSERA_CHECK(node && *node >= 0 && *node < static_cast<int64_t>(steps), path, ": step ", k,
                    " lists node '", w, "', which the model does not have");
      nodes.push_back(static_cast<int>(*node));
    }
    s.blocks.push_back(std::move(nodes));
  }
  for (size_t k = 0; k < steps; ++k) {
    auto task = a.sections.find(step_section(plan, k, "task"));
    auto it = a.sections.find(step_section(plan, k, "schedule"));
    if (task != a.sections.end() && it != a.sections.end()) {
      uint64_t key = 0;
      try {
        TESSERA_CHECK(task->second.size() == 16, "not 16 hex digits");
        key = std::stoull(task->second, nullptr, 16);
        s.schedules.emplace(key, schedule::parse_schedule(it->second));
      } catch (const std::exception& e) {
        TESSERA_FAIL(path, ": malformed schedule of step ", k, ": ", e.what());
      }
    }
    for (size_t j = 0;; ++j) {
      auto pk = a.sections.find(step_section(plan, k, "packed." + std::to_string(j)));
      if (pk == a.sections.end()) break;
      onnx::TensorProto p;
      TESSERA_CHECK(p.ParseFromString(pk->second), path, ": malformed packed weights of step ", k);
      s.packed[static_cast<int64_t>(k)].push_back(tensor_from_proto(p, "", "packed weights"));
    }
  }
  return s;
}

}  // namespace

void Executor::save(const std::string& path) const {
  Artifact a;
  a.sections["kind"] = kKindPrefix + std::to_string(kModelFormat);
  a.sections["model.onnx"] = export_onnx_bytes(*graph_);
  std::ostringstream opts;
  opts << "isa=" << codegen::isa_name(opts_.isa) << "\nthreads=" << opts_.threads << "\n";
  a.sections["options"] = opts.str();
  std::string sigs;
  std::map<const Node*, int> index;
  for (size_t k = 0; k < graph_->nodes().size(); ++k) index[graph_->nodes()[k].get()] = static_cast<int>(k);
  const std::vector<std::shared_ptr<const Plan>> plans = this->plans();
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = *plans[i];
    sigs += signature_line(p) + "\n";
    for (size_t k = 0; k < p.value_inputs.size(); ++k) {
      onnx::TensorProto tp;
      tensor_to_proto(p.values[k], "value", tp);
      a.sections[value_section(i, p.value_inputs[k])] = tp.SerializeAsString();
    }
    std::set<uint64_t> keys;  // tasks whose schedule is saved
    for (size_t k = 0; k < p.steps.size(); ++k) {
      const Step& st = p.steps[k];
      std::string nodes;
      for (const Node* n : st.nodes) nodes += (nodes.empty() ? "" : " ") + std::to_string(index.at(n));
      a.sections[step_section(i, k, "nodes")] = nodes;
      if (!st.compiled) continue;
      a.sections[step_section(i, k, "task")] = compile::key_text(st.task_key);
      if (keys.insert(st.task_key).second) a.sections[step_section(i, k, "schedule")] = schedule::to_text(st.schedule);
      for (size_t j = 0; j < st.packed.size(); ++j) {
        onnx::TensorProto tp;
        tensor_to_proto(p.slots[static_cast<size_t>(st.packed[j])].data, "packed", tp);
        a.sections[step_section(i, k, "packed." + std::to_string(j))] = tp.SerializeAsString();
      }
    }
  }
  a.sections["signatures"] = sigs;
  save_artifact(a, path);
  release_packed_weights();  // exporting the graph read every constant back in
}

std::unique_ptr<Executor> Executor::load(const std::string& path, ExecutorOptions opts, bool use_saved_isa) {
  Artifact a = load_artifact(path);
  std::string kind = a.sections.count("kind") ? a.section("kind") : "";
  TESSERA_CHECK(kind.rfind(kKindPrefix, 0) == 0, path, ": not a compiled Tessera model (an artifact of another kind)");
  TESSERA_CHECK(kind == kKindPrefix + std::to_string(kModelFormat), path, ": a compiled model of format ",
                kind.substr(std::string(kKindPrefix).size()), " (this Tessera reads format ", kModelFormat,
                "): compile the model again");
  std::map<std::string, std::string> saved;
  for (const std::string& line : split(a.section("options"), '\n')) {
    auto eq = line.find('=');
    if (eq != std::string::npos) saved[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (use_saved_isa && saved.count("isa")) opts.isa = isa_from_name(saved["isa"]);
  if (saved.count("threads")) {
    // Untrusted: a number of threads this machine may run (ThreadPool::max_threads).
    std::optional<int64_t> t = parse_int64(saved["threads"]);
    TESSERA_CHECK(t && *t >= 0 && *t <= ThreadPool::max_threads(), path, ": options: threads=", saved["threads"],
                  " is not a thread count this machine runs (0 to ", ThreadPool::max_threads(), ")");
    if (opts.threads <= 0) opts.threads = static_cast<int>(*t);
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto g = import_onnx_bytes(a.section("model.onnx"), dir.empty() ? "." : dir);
  // The saved graph is final (its convolutions already in the layout it was
  // compiled with); its saved steps refer to its nodes as they are.
  for (const std::string& pass : target_pipeline()) opts.passes.disable(pass);
  auto m = std::make_unique<Executor>(std::move(g), std::move(opts));
  std::vector<std::string> lines = split(a.section("signatures"), '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::vector<Tensor> ins = signature_inputs(a, i, lines[i], path);
    SavedSteps saved = saved_steps(a, i, m->graph().nodes().size(), path);
    // Compiles the kernels with the saved schedules and packed weights; when
    // that fails, afresh; a failure then leaves it to the first run.
    try {
      m->find_or_compile(ins, &saved);
    } catch (const std::exception&) {
      try {
        m->prepare(ins);
      } catch (const std::exception&) {
      }
    }
  }
  std::lock_guard<std::mutex> lock(m->mu_);
  m->last_compile_seconds_ = 0;
  for (const auto& p : m->plans_) m->last_compile_seconds_ += p->compile_seconds;
  return m;
}

}  // namespace tessera::runtime
