// A run's private copy of the fusion profile (fusion/profile_snapshot.h): a
// faithful copy of the shared file, which another writer's later entries do
// not reach; the entries the run adds merged back at its end after the other
// writer's (neither lost); a named database used as it is; two runs at once
// each with its own copy; a rank's copy of rank 0's text; a killed run's copy
// merged by the next.
// Every test points the cache directory (TESSERA_CACHE_DIR) at a folder of
// its own: the user's cache, and the build's test cache, are never touched.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fusion/profile_db.h"
#include "fusion/profile_snapshot.h"
#include "support/file_util.h"
#include "temp_folder.h"

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
  EXPECT_EQ(fs::path(run.path()).parent_path(), fs::path(cache.dir())) << "beside the shared file";
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
