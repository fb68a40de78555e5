// Profiling database: a typed view of a tab-separated store
// ("key<TAB>fused_seconds<TAB>parts_seconds", support/tsv_store.h).
#include "fusion/profile_db.h"

#include <sstream>

#include "support/file_util.h"

namespace tessera::fusion {

ProfileDb::ProfileDb(std::string path)
    : store_(std::move(path), 1, "the fusion profile database",
             [](const TsvStore::Fields&, const TsvStore::Fields& v) {
               return v.size() == 2 && parse_seconds(v[0]) && parse_seconds(v[1]);
             }) {}

std::string ProfileDb::default_path() {
  const std::string base = cache_directory();
  return base.empty() ? "" : base + "/fusion_profile.tsv";
}

std::optional<ProfileEntry> ProfileDb::find(const std::string& key) const {
  const std::optional<TsvStore::Fields> v = store_.find(key);
  if (!v) return std::nullopt;
  const std::optional<double> fused = parse_seconds((*v)[0]), parts = parse_seconds((*v)[1]);
  if (!fused || !parts) return std::nullopt;  // recorded in this process as NaN
  return ProfileEntry{*fused, *parts};
}

void ProfileDb::record(const std::string& key, const ProfileEntry& e) {
  store_.put(key, {seconds_field(e.fused_seconds), seconds_field(e.parts_seconds)});
}

}  // namespace tessera::fusion
