// Loading the attention model's libtorch module (cost/attention_module.h):
// it is found beside the test program; a module of another interface
// version and a file that is no library are refused with the reason; the
// command-line tool starts without loading libtorch (the dynamic linker's own
// log, checked to name LLVM, which the tool does load); and a tool with no
// module beside it or in the install libdir fails with an error naming every
// path it tried, where the tool as built reads the same file as a model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "cost/attention_module.h"
#include "temp_folder.h"

namespace tessera::cost {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("attention-module");
  return folder.path(name);
}

std::string text_file() {
  const std::string path = temp_path("not-a-model.txt");
  std::ofstream(path) << "no model here\n";
  return path;
}

TEST(AttentionModule, LoadsFromBesideTheTestProgram) {
  const AttentionModule& m = attention_module();
  EXPECT_EQ(fs::path(m.path).filename(), kAttentionModuleName);
  EXPECT_EQ(fs::canonical(fs::path(m.path).parent_path()), fs::canonical("/proc/self/exe").parent_path());
  ASSERT_NE(m.create, nullptr);
  tessera_attention_model* model = m.create();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(m.trained(model), 0);
  m.destroy(model);
}

TEST(AttentionModule, RefusesAnotherInterfaceVersion) {
  std::string why;
  const AttentionModule m = load_attention_module(OTHER_VERSION_MODULE, why);
  EXPECT_TRUE(m.path.empty());
  EXPECT_NE(why.find("interface version 0, this tessera needs " + std::to_string(TESSERA_ATTENTION_ABI_VERSION)),
            std::string::npos)
      << why;
}

TEST(AttentionModule, RefusesAFileThatIsNoLibrary) {
  std::string why;
  const AttentionModule m = load_attention_module(text_file(), why);
  EXPECT_TRUE(m.path.empty());
  EXPECT_NE(why.find("not-a-model.txt"), std::string::npos) << why;
}

TEST(AttentionModule, CliStartsWithoutLibtorch) {
  ASSERT_EQ(setenv("LD_DEBUG", "libs", 1), 0);
  const auto r = tessera::testing::cli("--version");
  unsetenv("LD_DEBUG");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("libLLVM"), std::string::npos) << "the dynamic linker's log names what it loads: " << r.out;
  EXPECT_EQ(r.out.find("libtorch"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libc10"), std::string::npos) << r.out;
}

TEST(AttentionModule, MissingModuleIsAnErrorNamingThePathsTried) {
  const std::string installed = attention_module_dirs().back() + "/" + kAttentionModuleName;
  if (fs::exists(installed))
    GTEST_SKIP() << "a module is installed at " << installed << ", so a tool without one beside it still finds it";
  const std::string dir = temp_path("alone");
  fs::create_directories(dir);
  const std::string cli = dir + "/tessera";
  fs::copy_file(TESSERA_CLI, cli, fs::copy_options::overwrite_existing);
  const std::string model = text_file();
  const std::string args =
      " costmodel eval --model attention --model-file " + model + " --records " + model + " --dataset " + dir;
  FILE* p = popen((cli + args + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_NE(pclose(p), 0) << out;
  EXPECT_NE(out.find("needs its libtorch module"), std::string::npos) << out;
  EXPECT_NE(out.find(fs::canonical(dir).string() + "/" + kAttentionModuleName + ": no such file"), std::string::npos)
      << out;
  EXPECT_NE(out.find(installed), std::string::npos) << out;

  const auto built = tessera::testing::cli(args);  // beside the tool as built: loaded, and the file refused
  EXPECT_NE(built.code, 0);
  EXPECT_NE(built.out.find("is not an attention model"), std::string::npos) << built.out;
}

}  // namespace
}  // namespace tessera::cost
