// PET's database: maps in memory, a tab-separated file on disk.
#include "pet/pet_db.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/file_util.h"

namespace tessera::pet {

PetDb::PetDb(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, key, value;
    if (!std::getline(fields, kind, '\t') || !std::getline(fields, key, '\t') || !std::getline(fields, value))
      continue;
    try {
      size_t used = 0;
      if (kind == "cost") {
        const double s = std::stod(value, &used);
        if (used == value.size() && s >= 0) costs_[key] = s;
      } else if (kind == "choice") {
        std::vector<uint64_t> path;
        std::istringstream hashes(value == "-" ? "" : value);
        std::string h;
        bool ok = true;
        while (ok && std::getline(hashes, h, '.')) {
          path.push_back(std::stoull(h, &used, 16));
          ok = used == h.size();
        }
        if (ok) choices_[key] = path;
      }
    } catch (const std::exception&) {
      // a torn line: ignored
    }
  }
}

std::string PetDb::default_path() {
  const std::string base = cache_directory();
  return base.empty() ? "" : base + "/pet.tsv";
}

std::optional<double> PetDb::cost(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = costs_.find(key);
  if (it == costs_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second;
}

void PetDb::record_cost(const std::string& key, double seconds) {
  std::ostringstream line;
  line.precision(9);
  line << "cost\t" << key << '\t' << seconds << '\n';
  std::lock_guard<std::mutex> lock(mu_);
  costs_[key] = seconds;
  append(line.str());
}

std::optional<std::vector<uint64_t>> PetDb::choice(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void PetDb::record_choice(const std::string& key, const std::vector<uint64_t>& path) {
  std::ostringstream line;
  line << "choice\t" << key << '\t' << std::hex;
  for (size_t i = 0; i < path.size(); ++i) line << (i ? "." : "") << path[i];
  line << (path.empty() ? "-" : "") << '\n';
  std::lock_guard<std::mutex> lock(mu_);
  choices_[key] = path;
  append(line.str());
}

void PetDb::append(const std::string& line) {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  std::ofstream out(path_, std::ios::app);
  if (out) out << line;
  if ((!out || !out.good()) && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "warning: cannot write PET's database %s; its measurements are not kept\n", path_.c_str());
  }
}

}  // namespace tessera::pet
