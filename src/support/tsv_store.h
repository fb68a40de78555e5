// A small persistent key-value store: a map in memory, a tab-separated file
// on disk, one line per record ("<key fields>\t<value fields>"), appended as
// records are made; on reading, later lines win and a line the owner's
// validator refuses (torn by a crash, written by another version) is ignored.
// The fusion planner's profile (fusion/profile_db.h) and PET's database
// (pet/pet_db.h) are typed views of it. A file that cannot be written only
// loses persistence: warned once on stderr, the map still works.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

class TsvStore {
 public:
  using Fields = std::vector<std::string>;
  // Whether a record read from the file is usable (key fields, value fields).
  using Validator = std::function<bool(const Fields& key, const Fields& value)>;

  // In memory only (path empty) or backed by `path`, read now when it exists.
  // A record's key is its first `key_fields` fields (joined by tabs, as
  // find() and put() take it); at least one value field follows. `what`
  // names the store in the warning ("the fusion profile database").
  TsvStore(std::string path, size_t key_fields, std::string what, const Validator& valid = nullptr);

  // The value fields recorded under `key` (the key fields joined by tabs);
  // counted as a hit or a miss when `count`.
  std::optional<Fields> find(const std::string& key, bool count = true) const;
  // Records (replacing any earlier record) and appends the line to the file.
  // Neither key nor values may hold a tab or a newline.
  void put(const std::string& key, const Fields& value);

  const std::string& path() const { return path_; }
  size_t size() const;
  int hits() const;
  int misses() const;

 private:
  std::string path_;
  size_t key_fields_;
  std::string what_;
  std::map<std::string, Fields> records_;
  mutable std::mutex mu_;
  mutable int hits_ = 0, misses_ = 0;
  bool warned_ = false;
};

// A seconds field of a record: written with 9 significant digits; read back
// only when it is a whole non-negative number (nullopt otherwise).
std::string seconds_field(double seconds);
std::optional<double> parse_seconds(const std::string& field);

}  // namespace tessera
