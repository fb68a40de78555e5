// The zoo's table of models.
#include "zoo/zoo.h"

#include "support/error.h"

namespace tessera {

const std::vector<ZooEntry>& zoo_models() {
  static const std::vector<ZooEntry> models = {};
  return models;
}

std::unique_ptr<Graph> build_zoo_model(const std::string& name) {
  std::string known;
  for (const auto& e : zoo_models()) {
    if (e.name == name) return e.build();
    known += (known.empty() ? "" : ", ") + e.name;
  }
  TESSERA_FAIL("unknown zoo model '", name, "' (known: ", known, ")");
}

}  // namespace tessera
