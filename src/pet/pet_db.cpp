// PET's database: typed records over a tab-separated store
// (support/tsv_store.h): "cost<TAB>key<TAB>seconds", "choice<TAB>key<TAB>path",
// "cut<TAB>key<TAB>seconds" (or "-").
#include "pet/pet_db.h"

#include <cstdio>
#include <sstream>

#include "support/file_util.h"

namespace tessera::pet {

namespace {

// "-" (the original kept) or the hashes in hex joined by dots.
std::optional<std::vector<uint64_t>> parse_path(const std::string& s) {
  std::vector<uint64_t> path;
  if (s == "-") return path;
  std::istringstream hashes(s);
  std::string h;
  while (std::getline(hashes, h, '.')) {
    size_t used = 0;
    try {
      path.push_back(std::stoull(h, &used, 16));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (used != h.size()) return std::nullopt;
  }
  if (path.empty()) return std::nullopt;
  return path;
}

bool valid(const TsvStore::Fields& key, const TsvStore::Fields& value) {
  if (value.size() != 1) return false;
  if (key[0] == "cost") return parse_seconds(value[0]).has_value();
  if (key[0] == "choice") return parse_path(value[0]).has_value();
  if (key[0] == "cut") return value[0] == "-" || parse_seconds(value[0]).has_value();
  return false;
}

}  // namespace

PetDb::PetDb(std::string path) : store_(std::move(path), 2, "PET's database", valid) {}

std::string PetDb::default_path() {
  const std::string base = cache_directory();
  return base.empty() ? "" : base + "/pet.tsv";
}

std::optional<double> PetDb::cost(const std::string& key) const {
  const std::optional<TsvStore::Fields> v = store_.find("cost\t" + key);
  return v ? parse_seconds((*v)[0]) : std::nullopt;
}

void PetDb::record_cost(const std::string& key, double seconds) {
  store_.put("cost\t" + key, {seconds_field(seconds)});
}

std::optional<std::vector<uint64_t>> PetDb::choice(const std::string& key) const {
  const std::optional<TsvStore::Fields> v = store_.find("choice\t" + key, /*count=*/false);
  return v ? parse_path((*v)[0]) : std::nullopt;
}

void PetDb::record_choice(const std::string& key, const std::vector<uint64_t>& path) {
  std::ostringstream s;
  s << std::hex;
  for (size_t i = 0; i < path.size(); ++i) s << (i ? "." : "") << path[i];
  store_.put("choice\t" + key, {path.empty() ? std::string("-") : s.str()});
}

std::optional<double> PetDb::cut(const std::string& key) const {
  const std::optional<TsvStore::Fields> v = store_.find("cut\t" + key, /*count=*/false);
  if (!v || (*v)[0] == "-") return std::nullopt;
  return parse_seconds((*v)[0]);
}

void PetDb::record_cut(const std::string& key, std::optional<double> budget_seconds) {
  store_.put("cut\t" + key, {budget_seconds ? seconds_field(*budget_seconds) : std::string("-")});
}

}  // namespace tessera::pet
