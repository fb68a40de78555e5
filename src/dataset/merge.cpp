// Joining a collection's rank files (see merge.h).
#include "dataset/merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "support/error.h"
#include "tune/record.h"

namespace tessera::dataset {

namespace fs = std::filesystem;

std::vector<std::pair<int, std::string>> rank_record_files(const std::string& dir) {
  std::vector<std::pair<int, std::string>> out;
  if (!fs::is_directory(dir)) return out;
  const std::string prefix = "records.rank", suffix = ".jsonl";
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.emplace_back(std::stoi(digits), e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

MergeReport merge_records(const std::string& dir, const std::string& out) {
  TESSERA_CHECK(fs::is_directory(dir), "'", dir, "' is not a directory (the --out of 'tessera dataset collect')");
  const auto files = rank_record_files(dir);
  TESSERA_CHECK(!files.empty(), "no records.rank<K>.jsonl files in '", dir, "'");
  MergeReport r;
  std::vector<tune::Record> all;
  std::vector<int> file_of;  // per record, its file's rank
  for (const auto& [rank, path] : files) {
    tune::RecordFile f(path);
    r.partial += f.dropped_partial_lines();
    all.insert(all.end(), f.records().begin(), f.records().end());
    file_of.resize(all.size(), rank);
    ++r.files;
  }
  r.read = static_cast<int64_t>(all.size());
  auto triple = [](const tune::Record& a) { return std::tie(a.task_key, a.target, a.schedule); };
  // Ties broken by time, then by the whole text: the order is total.
  std::vector<std::string> text(all.size());
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    text[i] = tune::to_json(all[i]);
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const tune::Record &x = all[a], &y = all[b];
    return std::tie(x.task_key, x.target, x.schedule, x.timestamp, text[a]) <
           std::tie(y.task_key, y.target, y.schedule, y.timestamp, text[b]);
  });
  const std::string tmp = out + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    TESSERA_CHECK(f, "cannot write '", tmp, "'");
    size_t first = all.size();  // the triple's earliest record
    for (size_t i : order) {
      if (first == all.size() || triple(all[first]) != triple(all[i])) first = i;
      else if (file_of[i] != file_of[first]) {
        ++r.duplicates;
        continue;
      }
      f << text[i] << '\n';
      ++r.written;
      r.errors += all[i].error != tune::MeasureError::None;
    }
    f.flush();
    TESSERA_CHECK(f, "cannot write '", tmp, "'");
  }
  fs::rename(tmp, out);
  return r;
}

}  // namespace tessera::dataset
