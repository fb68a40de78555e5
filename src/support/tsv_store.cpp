// The tab-separated store (support/tsv_store.h).
#include "support/tsv_store.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace tessera {

namespace {

TsvStore::Fields split_tabs(const std::string& line) {
  TsvStore::Fields f;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return f;
    start = tab + 1;
  }
}

}  // namespace

TsvStore::TsvStore(std::string path, size_t key_fields, std::string what, const Validator& valid)
    : path_(std::move(path)), key_fields_(key_fields), what_(std::move(what)) {
  TESSERA_CHECK(key_fields_ >= 1, "TsvStore: a record needs at least one key field");
  if (path_.empty()) return;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    Fields f = split_tabs(line);
    if (f.size() <= key_fields_) continue;  // no value: a torn or foreign line
    Fields key(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(key_fields_));
    Fields value(f.begin() + static_cast<std::ptrdiff_t>(key_fields_), f.end());
    try {
      if (valid && !valid(key, value)) continue;
    } catch (const std::exception&) {
      continue;  // the validator's parse failed: as refused
    }
    std::string k = key[0];
    for (size_t i = 1; i < key.size(); ++i) k += '\t' + key[i];
    records_[k] = std::move(value);
  }
}

std::optional<TsvStore::Fields> TsvStore::find(const std::string& key, bool count) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(key);
  if (it == records_.end()) {
    if (count) ++misses_;
    return std::nullopt;
  }
  if (count) ++hits_;
  return it->second;
}

void TsvStore::put(const std::string& key, const Fields& value) {
  TESSERA_CHECK(!value.empty(), "TsvStore: a record of ", what_, " needs a value");
  std::string line = key;
  for (const std::string& v : value) line += '\t' + v;
  TESSERA_CHECK(line.find('\n') == std::string::npos, "TsvStore: a record of ", what_, " holds a newline");
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  records_[key] = value;
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  std::ofstream out(path_, std::ios::app);
  if (out) out << line;
  if ((!out || !out.good()) && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "warning: cannot write %s %s; its records are not kept\n", what_.c_str(), path_.c_str());
  }
}

size_t TsvStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

int TsvStore::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int TsvStore::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

std::string seconds_field(double seconds) {
  std::ostringstream o;
  o.precision(9);
  o << seconds;
  return o.str();
}

std::optional<double> parse_seconds(const std::string& field) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(field, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != field.size() || !(v >= 0)) return std::nullopt;
  return v;
}

}  // namespace tessera
