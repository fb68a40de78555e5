// The networks of a dataset (see networks.h).
#include "dataset/networks.h"

#include <filesystem>
#include <set>
#include <sstream>

#include "support/error.h"
#include "support/file_util.h"

namespace tessera::dataset {

namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") + 1 - a);
}

Network network_of(const std::string& entry, const std::string& where) {
  if (entry.rfind("zoo:", 0) == 0) return {entry.substr(4), entry};
  TESSERA_CHECK(fs::is_regular_file(entry), "network '", entry, "'", where, ": no such file");
  fs::path p(entry);
  std::string name = p.stem().string();
  if (name == "model" && p.has_parent_path()) name = fs::absolute(p).parent_path().filename().string();
  return {name, entry};
}

}  // namespace

std::vector<Network> parse_networks(const std::string& spec) {
  std::vector<Network> out;
  const bool list_file = fs::is_regular_file(spec) && fs::path(spec).extension() != ".onnx";
  if (list_file) {
    std::istringstream lines(read_file(spec));
    const fs::path folder = fs::path(spec).parent_path();
    std::string line;
    for (int no = 1; std::getline(lines, line); ++no) {
      line = trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      if (line.rfind("zoo:", 0) != 0 && fs::path(line).is_relative()) line = (folder / line).lexically_normal().string();
      out.push_back(network_of(line, " (" + spec + " line " + std::to_string(no) + ")"));
    }
  } else {
    std::istringstream items(spec);
    std::string item;
    while (std::getline(items, item, ','))
      if (!trim(item).empty()) out.push_back(network_of(trim(item), ""));
  }
  TESSERA_CHECK(!out.empty(), "no networks in '", spec, "'");
  std::set<std::string> names;
  for (const Network& n : out)
    TESSERA_CHECK(names.insert(n.name).second, "two networks are named '", n.name, "' (", spec,
                  "): network names key the task weights; rename one file");
  return out;
}

}  // namespace tessera::dataset
