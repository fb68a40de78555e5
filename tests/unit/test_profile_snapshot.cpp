// A run's private copy of the fusion profile (fusion/profile_snapshot.h): a
// faithful copy of the shared file, which another writer's later entries do
// not reach; the entries the run adds merged back at its end after the other
// writer's (neither lost); a named database used as it is; two runs at once
// each with its own copy; a rank's copy of rank 0's text; a killed run's copy
// merged by the next; and a tuning run whose measurement workers plan with
// the copy while "another run" appends opposite decisions to the shared file.
// Every test points the cache directory (TESSERA_CACHE_DIR) at a folder of
// its own: the user's cache, and the build's test cache, are never touched.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compile/task.h"
#include "frontend/onnx_export.h"
#include "fusion/profile_db.h"
#include "fusion/profile_snapshot.h"
#include "ir/graph.h"
#include "random_tensor.h"
#include "support/file_util.h"
#include "temp_folder.h"
#include "tune_test_options.h"
#include "tune/model_config.h"
#include "tune/task_space.h"
#include "tune/tuner.h"

using namespace tessera;
using fusion::ProfileDb;
using fusion::ProfileSnapshot;

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("profile_snapshot");
  return folder.path(name);
}

// Environment variables set (a null value: unset) while this lives, then
// restored.
class ScopedEnv {
 public:
  using Vars = std::vector<std::pair<std::string, const char*>>;
  explicit ScopedEnv(const Vars& vars) {
    for (const auto& [name, value] : vars) {
      const char* was = std::getenv(name.c_str());
      saved_.emplace_back(name, was ? std::optional<std::string>(was) : std::nullopt);
      if (value) ::setenv(name.c_str(), value, 1);
      else ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A cache directory of the test's own while this lives.
class TestCache {
 public:
  explicit TestCache(const std::string& name)
      : dir_(temp_path(name)), env_(ScopedEnv::Vars{{"TESSERA_CACHE_DIR", dir_.c_str()}}) {
    fs::create_directories(dir_);
  }
  const std::string& dir() const { return dir_; }
  std::string shared() const { return dir_ + "/fusion_profile.tsv"; }
  // The private copies of the shared file in it.
  std::vector<std::string> copies() const {
    std::vector<std::string> out;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().rfind("fusion_profile.tsv.run-", 0) == 0) out.push_back(e.path().string());
    return out;
  }

 private:
  std::string dir_;
  ScopedEnv env_;
};

std::string contents(const std::string& path) { return fs::exists(path) ? read_file(path) : ""; }

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

void record(const std::string& db, const std::string& key, double fused, double parts) {
  ProfileDb d(db);
  d.record(key, {fused, parts});
}

bool fuses(const std::string& db, const std::string& key) {
  std::optional<fusion::ProfileEntry> e = ProfileDb(db).find(key);
  EXPECT_TRUE(e) << key << " in " << db;
  return e && e->fuse();
}

}  // namespace

TEST(ProfileDbSnapshot, AFaithfulCopyAnotherWriterDoesNotReachAndTheRunsEntriesMergedBack) {
  TestCache cache("merge");
  record(cache.shared(), "a", 1e-5, 2e-5);  // fuse
  record(cache.shared(), "b", 3e-5, 2e-5);  // apart
  const std::string at_start = contents(cache.shared());
  ProfileSnapshot run("");
  ASSERT_TRUE(run.is_private());
  EXPECT_NE(run.path(), cache.shared());
  EXPECT_EQ(fs::path(run.path()).parent_path().string(), cache.dir()) << "beside the shared file";
  EXPECT_EQ(contents(run.path()), at_start) << "a faithful copy";
  EXPECT_EQ(run.text(), at_start);

  // Another writer profiles meanwhile: a new entry, and "a" decided the other way.
  record(cache.shared(), "x", 5e-5, 1e-5);
  record(cache.shared(), "a", 9e-5, 1e-5);
  // The run (and its workers, opening the same file) see neither; it profiles "r".
  EXPECT_FALSE(ProfileDb(run.path()).find("x"));
  EXPECT_TRUE(fuses(run.path(), "a")) << "the decision as the run started";
  record(run.path(), "r", 2e-5, 4e-5);
  EXPECT_TRUE(fuses(run.path(), "r"));

  run.finish();
  EXPECT_FALSE(fs::exists(run.path())) << "the private copy is removed";
  EXPECT_TRUE(cache.copies().empty());
  const std::string after = contents(cache.shared());
  EXPECT_EQ(after.rfind(at_start, 0), 0u) << after;
  EXPECT_EQ(lines(after), 5u) << "what it had, the other writer's two lines, the run's one (its copy not again):\n" << after;
  EXPECT_TRUE(fuses(cache.shared(), "r")) << "the run's entry reached the shared file";
  EXPECT_TRUE(ProfileDb(cache.shared()).find("x")) << "the other writer's entry is kept";
  EXPECT_FALSE(fuses(cache.shared(), "a")) << "the other writer's later decision still stands";
  run.finish();  // once only
  EXPECT_EQ(contents(cache.shared()), after);
}

TEST(ProfileDbSnapshot, ANamedDatabaseIsUsedAsItIs) {
  TestCache cache("named");
  const std::string mine = temp_path("named_profile.tsv");
  {
    ProfileSnapshot run(mine);
    EXPECT_FALSE(run.is_private());
    EXPECT_EQ(run.path(), mine);
    record(run.path(), "k", 1e-5, 2e-5);
  }
  EXPECT_TRUE(ProfileDb(mine).find("k")) << "kept where it was written";
  EXPECT_FALSE(fs::exists(cache.shared())) << "nothing merged into the shared file";
  EXPECT_TRUE(cache.copies().empty());
}

TEST(ProfileDbSnapshot, TwoRunsAtOnceEachKeepTheirOwnDecisions) {
  TestCache cache("two");
  record(cache.shared(), "a", 1e-5, 2e-5);
  ProfileSnapshot first(""), second("");
  EXPECT_NE(first.path(), second.path());
  // Both profile the same block and measure it differently.
  record(first.path(), "same", 1e-5, 2e-5);
  record(second.path(), "same", 3e-5, 2e-5);
  EXPECT_TRUE(fuses(first.path(), "same"));
  EXPECT_FALSE(fuses(second.path(), "same"));
  first.finish();
  EXPECT_FALSE(fuses(second.path(), "same")) << "the first run's merge does not reach the second";
  second.finish();
  EXPECT_EQ(lines(contents(cache.shared())), 3u) << contents(cache.shared());
  EXPECT_FALSE(fuses(cache.shared(), "same")) << "the later merge wins, as later lines do";
  EXPECT_TRUE(cache.copies().empty());
}

// A collection's rank k plans with rank 0's copy (its text), and merges back
// only what it adds itself.
TEST(ProfileDbSnapshot, ARankCopiesTheTextItIsGiven) {
  TestCache cache("rank");
  record(cache.shared(), "shared_only", 1e-5, 2e-5);
  const std::string rank0 = "a\t1e-05\t2e-05\nb\t3e-05\t2e-05\n";
  ProfileSnapshot rank1("", rank0 + "cut\t1e");
  EXPECT_EQ(contents(rank1.path()), rank0) << "rank 0's complete lines, not the shared file";
  EXPECT_FALSE(ProfileDb(rank1.path()).find("shared_only"));
  record(rank1.path(), "c", 1e-5, 2e-5);
  rank1.finish();
  const std::string after = contents(cache.shared());
  EXPECT_EQ(lines(after), 2u) << after;
  EXPECT_TRUE(ProfileDb(cache.shared()).find("c"));
  EXPECT_FALSE(ProfileDb(cache.shared()).find("a")) << "rank 0 merges its own";
}

// A run killed before its end leaves its copy; the next snapshot merges it
// (its own lines only once, a line it was cut in dropped) and removes it,
// and plans with its entries. A running process's copy is left alone.
TEST(ProfileDbSnapshot, AKilledRunsCopyIsMergedByTheNext) {
  TestCache cache("killed");
  record(cache.shared(), "a", 1e-5, 2e-5);
  std::string left;
  {
    ProfileSnapshot model("");
    // Its name with a process id no process has (beyond any pid_max).
    const std::string pid = "-" + std::to_string(::getpid()) + "-";
    const size_t at = model.path().rfind(pid);
    ASSERT_NE(at, std::string::npos) << model.path();
    left = model.path().substr(0, at) + "-999999999-" + model.path().substr(at + pid.size());
    fs::copy_file(model.path(), left);
  }  // finished: it added nothing
  record(left, "lost", 3e-5, 2e-5);
  std::ofstream(left, std::ios::app) << "cut\t1e";
  EXPECT_FALSE(ProfileDb(cache.shared()).find("lost"));

  ProfileSnapshot next("");
  EXPECT_FALSE(fs::exists(left)) << "merged and removed";
  const std::string after = contents(cache.shared());
  EXPECT_EQ(lines(after), 2u) << after;
  EXPECT_FALSE(fuses(cache.shared(), "lost"));
  EXPECT_EQ(after.find("cut"), std::string::npos) << after;
  EXPECT_TRUE(ProfileDb(next.path()).find("lost")) << "the next run plans with it";
  ProfileSnapshot third("");
  EXPECT_TRUE(fs::exists(next.path())) << "a running process's copy is not taken";
  EXPECT_EQ(cache.copies().size(), 2u);
}

TEST(ProfileDbSnapshot, WithoutACacheDirectoryTheCopyIsTemporary) {
  ScopedEnv env(ScopedEnv::Vars{{"TESSERA_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", nullptr}, {"HOME", nullptr}});
  ASSERT_EQ(ProfileDb::default_path(), "");
  std::string path;
  {
    ProfileSnapshot run("");
    ASSERT_TRUE(run.is_private());
    path = run.path();
    EXPECT_TRUE(fs::equivalent(fs::path(path).parent_path(), fs::temp_directory_path())) << path;
    EXPECT_EQ(contents(path), "");
    record(path, "k", 1e-5, 2e-5);
  }
  EXPECT_FALSE(fs::exists(path)) << "removed at the end (there is no shared file to merge into)";
}

namespace {

// x f32[1,16,6,6] -> GlobalAveragePool -> Flatten -> Gemm 16->10: the
// reduction and the reshape after it are a profiled fusion (many-to-many
// then reorganize), and whether the reshape joins the reduction or the
// product decides which tasks the model has.
std::string pool_net_file() {
  static const std::string path = [] {
    Graph g;
    g.opset = 13;
    Value* x = g.add_input("x", {DType::F32, {1, 16, 6, 6}, true});
    Value* fc = g.add_constant("fc", tessera::testing::random_f32({10, 16}, 5, -0.5f, 0.5f));
    Value* p = g.add_node("GlobalAveragePool", {x}, {"p"}, {}, "pool")->outputs[0];
    Value* f = g.add_node("Flatten", {p}, {"f"}, {}, "flatten")->outputs[0];
    AttrMap gemm;
    gemm["transB"] = Attribute::of_int(1);
    g.add_output(g.add_node("Gemm", {f, fc}, {"y"}, gemm, "gemm")->outputs[0]);
    const std::string file = temp_path("pool_net.onnx");
    export_onnx_file(g, file);
    return file;
  }();
  return path;
}

std::set<std::string> task_keys(const tune::ModelConfig& c, bool tunable_only) {
  std::set<std::string> out;
  const Target machine = Target::for_isa(c.isa);
  const tune::TuningModel m = tune::open_model(c);
  for (const runtime::TaskUse& u : m.tasks) {
    if (tunable_only) {
      try {
        tune::TaskSpace space(*u.task, machine);
      } catch (const std::exception&) {
        continue;
      }
    }
    out.insert(compile::key_text(u.task->key));
  }
  return out;
}

// Each entry of the profile text with the opposite decision.
std::string opposite(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t eol = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, eol - at);
    const size_t t2 = line.rfind('\t'), t1 = line.rfind('\t', t2 - 1);
    const fusion::ProfileEntry e{std::stod(line.substr(t1 + 1, t2 - t1 - 1)), std::stod(line.substr(t2 + 1))};
    out += line.substr(0, t1) + (e.fuse() ? "\t2e-05\t1e-05\n" : "\t1e-05\t2e-05\n");
    at = eol + 1;
  }
  return out;
}

}  // namespace

// Two tunings of one model at once: the other appends its decisions to the
// shared file while this one runs. Here it appends, as soon as this run's
// copy exists, the opposite of every decision this run's plan takes (which,
// checked first, leaves out a task the run tunes): a worker planning from
// the shared file would lack that task, and tune_model would fail ("the
// measurement worker has no task"). The static cost model measures every
// task's default, so every task is asked of the worker. The other's lines
// are kept in the shared file, and the run leaves no copy behind.
TEST(Tuner, WorkersPlanWithTheRunsFusionProfileWhateverAnotherRunAppends) {
  TestCache cache("tuner");
  tune::TuneOptions o = tessera::testing::quick_tune_options(pool_net_file(), temp_path("tuner_records.jsonl"));
  o.model.isa = Target::for_isa(Isa::Host).isa;
  o.cost_model = "static";
  o.hardware = o.model.isa == Isa::AVX512 ? "xeon-platinum-8272cl" : "xeon-e5-2673-v4";
  o.validate_top = 0;  // the defaults only
  o.budget_seconds = 1;

  // The run's decisions, in the shared file before it starts; the other's,
  // their opposites and whatever the plan they make profiles besides.
  tune::ModelConfig c = o.model;
  c.fusion_db = temp_path("decisions.tsv");
  const std::set<std::string> tunable = task_keys(c, true);
  const std::string decisions = contents(c.fusion_db);
  ASSERT_FALSE(decisions.empty()) << "the model has fusions to profile";
  c.fusion_db = temp_path("opposite.tsv");
  std::ofstream(c.fusion_db) << opposite(decisions);
  const std::set<std::string> other_tasks = task_keys(c, false);
  ASSERT_FALSE(std::includes(other_tasks.begin(), other_tasks.end(), tunable.begin(), tunable.end()))
      << "the opposite decisions leave out a task the run tunes (else this test proves nothing)";
  const std::string other = contents(c.fusion_db);
  std::ofstream(cache.shared()) << decisions;

  std::atomic<bool> done{false}, appended{false};
  std::thread another([&] {
    while (!done && !appended) {
      if (!cache.copies().empty()) {
        std::ofstream(cache.shared(), std::ios::app) << other;
        appended = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  tune::TuneReport r;
  try {
    r = tune::tune_model(o);
  } catch (...) {
    done = true;
    another.join();
    throw;
  }
  done = true;
  another.join();

  ASSERT_TRUE(appended) << "the run made its copy beside the shared file";
  int measured = 0;
  for (const tune::TaskReport& t : r.tasks)
    if (t.skipped.empty()) {
      ++measured;
      EXPECT_TRUE(std::isfinite(t.default_seconds)) << t.description;
    }
  EXPECT_EQ(static_cast<size_t>(measured), tunable.size()) << "every task the run tunes measured by the worker";
  EXPECT_TRUE(cache.copies().empty()) << "the run's copy is removed";
  EXPECT_EQ(contents(cache.shared()).rfind(decisions + other, 0), 0u)
      << "the other run's lines kept after what the run started from";
}
