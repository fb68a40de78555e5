// A folder per test process under the system's temporary directory, removed
// when the process exits (test runs of other checkouts on the machine must
// not share files with this one).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace tessera::testing {

class TempFolder {
 public:
  // "tessera-<suite>-test-<pid>", made now.
  explicit TempFolder(const std::string& suite)
      : path_(std::filesystem::temp_directory_path() / ("tessera-" + suite + "-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tessera::testing
