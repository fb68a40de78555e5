// Saving and loading a compiled model as an artifact: the graph as ONNX bytes,
// the compile options, the input signatures of its plans and, per compiled
// step of each plan, its task key, its packed weights and (at the first step
// of each task) the task's schedule, and per task its kernels' machine code
// (saved_kernel.h) with the ISA, CPU and features it was compiled for.
// Loading builds the plans of those signatures again, linking the saved code
// (no lowering, no optimization) and taking the packed weights as saved;
// where the code cannot run here (another ISA asked, features the host
// lacks, an artifact without code) it compiles the kernels again with the
// saved schedules, and says so once on stderr.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
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
#include "runtime/saved_kernel.h"
#include "support/checked_int.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace tessera::runtime {

namespace {

constexpr const char* kKindPrefix = "tessera compiled model ";
// 2: schedules keyed by task; 3: Winograd tile sizes and points; 4: every
// task's machine code, the weights as raw sections. Format 3 still loads
// (every kernel compiled again); format 2's Winograd layers meant otherwise.
constexpr int kModelFormat = 4;
constexpr int kOldestModelFormat = 3;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

std::vector<std::string> split(std::string_view s, char sep) {
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
std::vector<Tensor> signature_inputs(const MappedArtifact& a, size_t plan, const std::string& line, const std::string& path) {
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
      std::string_view bytes = a.section(value_section(plan, static_cast<int>(i)));
      TESSERA_CHECK(bytes.size() <= INT_MAX && p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), path,
                    ": malformed saved input value");
      ins[i] = tensor_from_proto(p, "", "saved input value");
    }
  return ins;
}

std::string step_section(size_t plan, size_t step, const std::string& what) {
  return "plan." + std::to_string(plan) + ".step." + std::to_string(step) + "." + what;
}

// "f32 64x3x7x7": a raw tensor's type ("scalar" for rank 0).
std::string type_line(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + dims_to_string(t.dims()); }

// A tensor of type `line` over `bytes` (a section of the mapped file, kept
// alive by `owner`): viewed in place, or copied when not aligned.
Tensor raw_tensor(const std::string& line, std::string_view bytes, const std::shared_ptr<void>& owner,
                  const std::string& what) {
  auto sp = line.find(' ');
  TESSERA_CHECK(sp != std::string::npos, what, ": malformed type '", line, "'");
  onnx::TensorProto p;  // the type and dims, checked by tensor_over_bytes
  DType dt = dtype_from_name(line.substr(0, sp));
  TESSERA_CHECK(dt != DType::Undefined && dt != DType::String, what, ": malformed type '", line, "'");
  p.set_data_type(static_cast<int32_t>(dt));
  std::string d = line.substr(sp + 1);
  if (d != "scalar")
    for (const std::string& w : split(d, 'x')) {
      std::optional<int64_t> v = parse_int64(w);
      TESSERA_CHECK(v, what, ": malformed dims '", d, "'");
      p.add_dims(*v);
    }
  return tensor_over_bytes(p, bytes, owner, what);
}

// The schedules and packed weights saved for plan `plan`.
SavedSteps saved_steps(const MappedArtifact& a, int format, size_t plan, size_t steps, const std::string& path) {
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
        key = std::stoull(std::string(task->second), nullptr, 16);
        s.schedules.emplace(key, schedule::parse_schedule(std::string(it->second)));
      } catch (const std::exception& e) {
        TESSERA_FAIL(path, ": malformed schedule of step ", k, ": ", e.what());
      }
    }
    if (format >= 4) {  // raw elements, their types in "packed_types", viewed in the mapped file
      auto types = a.sections.find(step_section(plan, k, "packed_types"));
      if (types == a.sections.end()) continue;
      std::vector<std::string> lines = split(types->second, '\n');
      for (size_t j = 0; j < lines.size(); ++j) {
        if (lines[j].empty()) continue;
        std::string what = path + ": packed weights " + std::to_string(j) + " of step " + std::to_string(k);
        auto pk = a.sections.find(step_section(plan, k, "packed." + std::to_string(j)));
        TESSERA_CHECK(pk != a.sections.end(), what, ": no section");
        s.packed[static_cast<int64_t>(k)].push_back(raw_tensor(lines[j], pk->second, a.file, what));
      }
      continue;
    }
    for (size_t j = 0;; ++j) {  // format 3: TensorProtos
      auto pk = a.sections.find(step_section(plan, k, "packed." + std::to_string(j)));
      if (pk == a.sections.end()) break;
      onnx::TensorProto p;
      TESSERA_CHECK(pk->second.size() <= INT_MAX &&
                        p.ParseFromArray(pk->second.data(), static_cast<int>(pk->second.size())),
                    path, ": malformed packed weights of step ", k);
      s.packed[static_cast<int64_t>(k)].push_back(tensor_from_proto(p, "", "packed weights"));
    }
  }
  return s;
}

// Format 4 keeps the graph's top-level initializers out of "model.onnx"
// (their protos keep type and dims): each one's raw elements are section
// "weight.<name>", 64-byte aligned in the file, which loading views in place.
constexpr const char* kWeightPrefix = "weight.";

void save_graph(const Graph& g, Artifact& a) {
  onnx::ModelProto mp;
  TESSERA_CHECK(mp.ParseFromString(export_onnx_bytes(g)), "cannot save the graph: its ONNX export does not parse");
  for (onnx::TensorProto& t : *mp.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.data_type() == onnx::TensorProto::STRING) continue;
    a.sections[kWeightPrefix + t.name()] = std::move(*t.mutable_raw_data());
    t.clear_raw_data();
  }
  a.sections["model.onnx"] = mp.SerializeAsString();
}

// Sections of a task's kernels: "task.<key>.kernel" (the description),
// ".kernel.o" and ".prepack.o" (the objects).
std::string task_section(uint64_t key, const std::string& what) { return "task." + compile::key_text(key) + "." + what; }

// What machine code was compiled for (the "code.target" section).
std::string target_text(const codegen::JitKernel& k) {
  return "isa=" + std::string(codegen::isa_name(k.isa())) + "\ncpu=" + k.cpu() + "\nfeatures=" + k.features() + "\n";
}

std::map<std::string, std::string> key_values(const std::string& text) {
  std::map<std::string, std::string> r;
  for (const std::string& line : split(text, '\n')) {
    auto eq = line.find('=');
    if (eq != std::string::npos) r[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return r;
}

// Why the artifact's machine code cannot be used for `opts` on this host
// ("" when it can).
std::string code_unusable(const MappedArtifact& a, const ExecutorOptions& opts, const std::string& saved_isa) {
  auto it = a.sections.find("code.target");
  if (it == a.sections.end()) return "it holds no machine code (an artifact of an older format)";
  if (opts.dump_ir || opts.dump_llvm || opts.dump_asm) return "the dumps asked for need the kernels' IR";
  if (std::string(codegen::isa_name(opts.isa)) != saved_isa)
    return "its code was compiled for --isa " + saved_isa + ", not " + std::string(codegen::isa_name(opts.isa));
  std::map<std::string, std::string> t = key_values(std::string(it->second));
  Isa isa = Isa::Host;
  try {
    isa = isa_from_name(t["isa"]);
  } catch (const std::exception&) {
    return "its code is for an unknown ISA '" + t["isa"] + "'";
  }
  if (isa == Isa::Host || !codegen::host_supports(isa))
    return "its code is for " + t["isa"] + " (" + t["cpu"] + "), which this host does not run";
  std::vector<std::string> missing = codegen::missing_host_features(t["features"]);
  if (!missing.empty()) {
    std::string m;
    for (const std::string& f : missing) m += (m.empty() ? "" : ", ") + f;
    return "its code (" + t["cpu"] + ") needs CPU features this host lacks: " + m;
  }
  return "";
}

// Every task's saved kernel, checked (a malformed one is an error naming it).
std::map<uint64_t, std::shared_ptr<const SavedKernel>> saved_kernels(const MappedArtifact& a, const std::string& path) {
  std::map<uint64_t, std::shared_ptr<const SavedKernel>> r;
  const std::string suffix = ".kernel";
  for (auto it = a.sections.lower_bound("task."); it != a.sections.end() && it->first.rfind("task.", 0) == 0; ++it) {
    const std::string& name = it->first;
    if (name.size() != 5 + 16 + suffix.size() || name.compare(21, suffix.size(), suffix) != 0) continue;
    std::string hex = name.substr(5, 16);
    std::string what = path + ": task " + hex;
    std::optional<uint64_t> key;
    try {
      size_t used = 0;
      key = std::stoull(hex, &used, 16);
      if (used != hex.size()) key.reset();
    } catch (const std::exception&) {
    }
    TESSERA_CHECK(key, what, ": malformed task key");
    auto k = std::make_shared<SavedKernel>(parse_saved_kernel(std::string(it->second), what));
    auto obj = a.sections.find(task_section(*key, "kernel.o"));
    TESSERA_CHECK(obj != a.sections.end(), what, ": kernel ", k->name, " has no machine code section");
    k->object = std::string(obj->second);
    if (!k->prepack_name.empty()) {
      auto pre = a.sections.find(task_section(*key, "prepack.o"));
      TESSERA_CHECK(pre != a.sections.end(), what, ": weight-packing kernel ", k->prepack_name,
                    " has no machine code section");
      k->prepack_object = std::string(pre->second);
    }
    check_saved_kernel(*k, what);
    r.emplace(*key, std::move(k));
  }
  return r;
}

}  // namespace

void Executor::save(const std::string& path) const {
  Artifact a;
  a.sections["kind"] = kKindPrefix + std::to_string(kModelFormat);
  save_graph(*graph_, a);
  std::ostringstream opts;
  opts << "isa=" << codegen::isa_name(opts_.isa) << "\nthreads=" << opts_.threads << "\n";
  a.sections["options"] = opts.str();
  std::string sigs;
  std::map<const Node*, int> index;
  for (size_t k = 0; k < graph_->nodes().size(); ++k) index[graph_->nodes()[k].get()] = static_cast<int>(k);
  const std::vector<std::shared_ptr<const Plan>> plans = this->plans();
  std::string target;           // what the saved code is for (every kernel's, from the first)
  std::set<uint64_t> code_keys;  // tasks whose code is saved
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
      if (st.task_kernel && code_keys.insert(st.task_key).second) {
        const TaskKernel& tk = *st.task_kernel;
        if (target.empty()) target = target_text(*tk.kernel);
        // (A kernel compiled otherwise — none in practice — is compiled again on load.)
        if (target_text(*tk.kernel) == target && (!tk.prepack || target_text(*tk.prepack) == target)) {
          a.sections[task_section(st.task_key, "kernel")] = saved_kernel_text(tk);
          a.sections[task_section(st.task_key, "kernel.o")] = tk.kernel->object();
          if (tk.prepack) a.sections[task_section(st.task_key, "prepack.o")] = tk.prepack->object();
        }
      }
      std::string types;
      for (size_t j = 0; j < st.packed.size(); ++j) {
        const Tensor& t = p.slots[static_cast<size_t>(st.packed[j])].data;
        types += type_line(t) + "\n";
        a.sections[step_section(i, k, "packed." + std::to_string(j))] =
            std::string(static_cast<const char*>(t.raw()), t.nbytes());
      }
      if (!types.empty()) a.sections[step_section(i, k, "packed_types")] = types;
    }
  }
  a.sections["signatures"] = sigs;
  if (!target.empty()) a.sections["code.target"] = target;
  save_artifact(a, path);
  release_packed_weights();  // exporting the graph read every constant back in
}

std::unique_ptr<Executor> Executor::load(const std::string& path, ExecutorOptions opts, bool use_saved_isa) {
  LoadTimes times;
  auto t0 = Clock::now();
  // The original weights' pages leave memory as they are checked: the plans
  // read most of them only packed (the packed copies, sections of their own,
  // stay); those read as they are come back at the end (populate_artifact_pages).
  MappedArtifact a = map_artifact(path, [](const std::string& name) { return name.rfind(kWeightPrefix, 0) == 0; });
  std::string kind = a.sections.count("kind") ? std::string(a.section("kind")) : "";
  TESSERA_CHECK(kind.rfind(kKindPrefix, 0) == 0, path, ": not a compiled Tessera model (an artifact of another kind)");
  std::string format = kind.substr(std::string(kKindPrefix).size());
  std::optional<int64_t> fmt = parse_int64(format);
  TESSERA_CHECK(fmt && *fmt >= kOldestModelFormat && *fmt <= kModelFormat, path, ": a compiled model of format ",
                format, " (this Tessera reads formats ", kOldestModelFormat, " to ", kModelFormat,
                "): compile the model again");
  std::map<std::string, std::string> saved = key_values(std::string(a.section("options")));
  if (use_saved_isa && saved.count("isa")) opts.isa = isa_from_name(saved["isa"]);
  if (saved.count("threads")) {
    // Untrusted: a number of threads this machine may run (ThreadPool::max_threads).
    std::optional<int64_t> t = parse_int64(saved["threads"]);
    TESSERA_CHECK(t && *t >= 0 && *t <= ThreadPool::max_threads(), path, ": options: threads=", saved["threads"],
                  " is not a thread count this machine runs (0 to ", ThreadPool::max_threads(), ")");
    if (opts.threads <= 0) opts.threads = static_cast<int>(*t);
  }
  times.read = seconds_since(t0);
  auto t1 = Clock::now();
  std::string dir = std::filesystem::path(path).parent_path().string();
  ImportOptions io;  // the weights: views of their sections (format 4)
  for (auto it = a.sections.lower_bound(kWeightPrefix);
       it != a.sections.end() && it->first.rfind(kWeightPrefix, 0) == 0; ++it)
    io.initializer_data.emplace(it->first.substr(std::string(kWeightPrefix).size()), it->second);
  io.data_owner = a.file;
  std::unique_ptr<Graph> g;
  try {
    g = import_onnx_bytes(a.section("model.onnx"), dir.empty() ? "." : dir, io);
  } catch (const Error& e) {
    TESSERA_FAIL(path, ": its model: ", e.what());
  }
  // The saved graph is final (its convolutions already in the layout it was
  // compiled with); its saved steps refer to its nodes as they are.
  for (const std::string& pass : target_pipeline()) opts.passes.disable(pass);
  times.graph = seconds_since(t1);
  auto t2 = Clock::now();
  // The saved machine code when it runs here, checked before any is linked.
  std::map<uint64_t, std::shared_ptr<const SavedKernel>> kernels;
  std::string unusable = code_unusable(a, opts, saved.count("isa") ? saved["isa"] : "host");
  std::vector<std::string> lines = split(a.section("signatures"), '\n');
  const bool has_plans = std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return !l.empty(); });
  if (unusable.empty()) kernels = saved_kernels(a, path);
  // (An artifact saved before any input shape was compiled, dynamic shapes
  // deferred to the first run, has no code to miss.)
  else if (has_plans)
    std::fprintf(stderr, "%s: %s: compiling the kernels again from the saved schedules\n", path.c_str(),
                    unusable.c_str());
  double check_seconds = seconds_since(t2);
  auto m = std::make_unique<Executor>(std::move(g), std::move(opts));
  m->artifact_begin_ = static_cast<const char*>(a.file.get());
  m->artifact_bytes_ = a.size;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::vector<Tensor> ins = signature_inputs(a, i, lines[i], path);
    SavedSteps saved = saved_steps(a, static_cast<int>(*fmt), i, m->graph().nodes().size(), path);
    saved.kernels = kernels;
    // Links (or compiles) the kernels with the saved schedules and packed
    // weights; when that fails, compiles afresh (a saved kernel that does not
    // link is an error); a failure then leaves it to the first run.
    try {
      m->find_or_compile(ins, &saved);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find(kLinkFailed) != std::string::npos)
        TESSERA_FAIL(path, ": ", e.what());
      try {
        m->prepare(ins);
      } catch (const std::exception&) {
      }
    }
  }
  m->populate_artifact_pages();
  std::lock_guard<std::mutex> lock(m->mu_);
  m->last_compile_seconds_ = 0;
  std::set<const codegen::JitKernel*> linked, compiled;
  times.kernels = check_seconds;
  for (const auto& p : m->plans_) {
    m->last_compile_seconds_ += p->compile_seconds;
    times.kernels += p->kernel_seconds;
    times.plans += p->compile_seconds - p->kernel_seconds;
    for (const Step& st : p->steps)
      if (st.kernel) (st.kernel->has_ir() ? compiled : linked).insert(st.kernel.get());
  }
  times.linked = static_cast<int>(linked.size());
  times.compiled = static_cast<int>(compiled.size());
  m->load_times_ = times;
  return m;
}

}  // namespace tessera::runtime
