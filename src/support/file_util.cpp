// Whole-file I/O.
#include "support/file_util.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace tessera {

std::string read_file(const std::string& path) {
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

std::string cache_directory() {
  if (const char* d = std::getenv("TESSERA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tessera";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tessera";
  return "";
}

}  // namespace tessera
