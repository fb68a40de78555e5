// Whole-file I/O.
#include "support/file_util.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace tessera {

std::string read_file(const std::string& path) {
  std::error_code ec;
  // An ifstream opens a directory and reads nothing ("the model file is empty").
  TESSERA_CHECK(!std::filesystem::is_directory(path, ec), "'", path, "' is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  TESSERA_CHECK(f, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  TESSERA_CHECK(f, "cannot write '", path, "': ", std::strerror(errno));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  TESSERA_CHECK(f, "error writing '", path, "'");
}

void ensure_writable_directory(const std::string& dir, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    TESSERA_CHECK(fs::is_directory(dir, ec), what, " is an existing file, not a directory");
  } else {
    fs::create_directories(dir, ec);
    TESSERA_CHECK(!ec, what, ": cannot create the directory: ", ec.message());
  }
  TESSERA_CHECK(::access(dir.c_str(), W_OK | X_OK) == 0, what, " is not writable: ", std::strerror(errno));
}

std::string cache_directory() {
  if (const char* d = std::getenv("TESSERA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tessera";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tessera";
  return "";
}

}  // namespace tessera
