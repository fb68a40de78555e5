// Profiling database: a map in memory, a tab-separated file on disk
// ("key<TAB>fused_seconds<TAB>parts_seconds", later lines win).
#include "fusion/profile_db.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/file_util.h"

namespace tessera::fusion {

ProfileDb::ProfileDb(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find('\t'), b = line.rfind('\t');
    if (a == std::string::npos || a == b) continue;  // a torn or foreign line: ignored
    try {
      ProfileEntry e{std::stod(line.substr(a + 1, b - a - 1)), std::stod(line.substr(b + 1))};
      entries_[line.substr(0, a)] = e;
    } catch (const std::exception&) {
    }
  }
}

std::string ProfileDb::default_path() {
  const std::string base = cache_directory();
  return base.empty() ? "" : base + "/fusion_profile.tsv";
}

std::optional<ProfileEntry> ProfileDb::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second;
}

void ProfileDb::record(const std::string& key, const ProfileEntry& e) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = e;
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  std::ostringstream line;
  line.precision(9);
  line << key << '\t' << e.fused_seconds << '\t' << e.parts_seconds << '\n';
  std::ofstream out(path_, std::ios::app);
  if (out) out << line.str();
  if ((!out || !out.good()) && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "warning: cannot write the fusion profile database %s; measurements are not kept\n",
                 path_.c_str());
  }
}

size_t ProfileDb::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace tessera::fusion
