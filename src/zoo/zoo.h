// The embedded model zoo: well-known architectures built in C++ with
// deterministic random weights, so Tessera runs real models with no download.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera {

struct ZooEntry {
  std::string name;
  std::string description;
  std::unique_ptr<Graph> (*build)();
};

// Every model of the zoo, in a stable order.
const std::vector<ZooEntry>& zoo_models();
// Builds the named model; throws an Error listing the known names otherwise.
std::unique_ptr<Graph> build_zoo_model(const std::string& name);

}  // namespace tessera
