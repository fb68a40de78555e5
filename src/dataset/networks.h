// The networks a dataset is collected from, as `--networks` names them: a
// comma-separated list of ONNX files (or zoo:NAME), or a list file with one
// per line. Each has a name — the key of its task weights in tasks.json —
// from its file: the stem, or the folder's name for a model.onnx
// (bench/dataset_networks.py writes NAME/model.onnx).
#pragma once

#include <string>
#include <vector>

namespace tessera::dataset {

struct Network {
  std::string name;  // unique within a dataset
  std::string path;  // as driver.h's load_model opens it (a file or zoo:NAME)
  bool operator==(const Network&) const = default;
};

// The networks of `spec`: a list file when it names an existing file that is
// not an .onnx (lines: a path, relative to the list file's folder, or
// zoo:NAME; '#' starts a comment), else a comma-separated list. Throws
// naming a missing file, an empty list or two networks of one name.
std::vector<Network> parse_networks(const std::string& spec);

}  // namespace tessera::dataset
