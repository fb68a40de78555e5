// PET's database: typed records over a tab-separated store
// (support/tsv_store.h): "cost<TAB>key<TAB>seconds", "choice<TAB>key<TAB>path",
// "cut<TAB>key<TAB>seconds" (or "-"), "graph<TAB>key<TAB>path<TAB>family<TAB>...".
#include "pet/pet_db.h"

#include <cstdint>
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

std::string path_field(const std::vector<uint64_t>& path) {
  std::ostringstream s;
  s << std::hex;
  for (size_t i = 0; i < path.size(); ++i) s << (i ? "." : "") << path[i];
  return path.empty() ? std::string("-") : s.str();
}

// A whole number field in [0, max]; nullopt otherwise.
std::optional<int64_t> parse_count(const std::string& s, int64_t max) {
  size_t used = 0;
  int64_t v = -1;
  try {
    v = std::stoll(s, &used, 10);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != s.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

// The fields of a "graph" record, read; nullopt when any is malformed.
std::optional<PetDb::Chosen> parse_chosen(const TsvStore::Fields& v) {
  if (v.size() != 7) return std::nullopt;
  PetDb::Chosen c;
  std::optional<std::vector<uint64_t>> path = parse_path(v[0]);
  std::optional<int64_t> partial = parse_count(v[2], 1), boxes = parse_count(v[3], 1 << 30),
                         wrong = parse_count(v[4], INT64_MAX);
  std::optional<std::vector<uint64_t>> hash = parse_path(v[5]);
  if (!path || path->empty() || v[1].empty() || !partial || !boxes || !wrong || !hash || hash->size() != 1 ||
      v[6].empty())
    return std::nullopt;
  c.path = std::move(*path);
  c.family = v[1];
  c.partial = *partial == 1;
  c.boxes = static_cast<int>(*boxes);
  c.wrong_elements = *wrong;
  c.hash = (*hash)[0];
  c.graph = v[6];
  return c;
}

bool valid(const TsvStore::Fields& key, const TsvStore::Fields& value) {
  if (key[0] == "graph") return parse_chosen(value).has_value();
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
  store_.put("choice\t" + key, {path_field(path)});
}

std::optional<PetDb::Chosen> PetDb::chosen(const std::string& key) const {
  const std::optional<TsvStore::Fields> v = store_.find("graph\t" + key, /*count=*/false);
  return v ? parse_chosen(*v) : std::nullopt;
}

void PetDb::record_chosen(const std::string& key, const Chosen& c) {
  store_.put("graph\t" + key, {path_field(c.path), c.family, c.partial ? "1" : "0", std::to_string(c.boxes),
                               std::to_string(c.wrong_elements), path_field({c.hash}), c.graph});
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
