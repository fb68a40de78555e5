// Runs the tessera CLI (TESSERA_CLI, defined for the test files that use it)
// with arguments and collects its exit code and output, for tests of the
// command line.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tessera::testing {

struct CliResult {
  int code;
  std::string out;  // stdout and stderr together
};

inline CliResult cli(const std::string& args) {
  std::string cmd = std::string(TESSERA_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p ? pclose(p) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace tessera::testing
