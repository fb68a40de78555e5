// The model a tuning run tunes (see model_config.h).
#include "tune/model_config.h"

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace tessera::tune {

std::string ModelConfig::to_json() const {
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [name, dims] : input_shapes) shapes[name] = dims;
  nlohmann::json j = {{"model", model},   {"input_shapes", shapes}, {"disabled_passes", disabled_passes},
                      {"isa", isa_name(isa)}, {"threads", threads},     {"fusion", fusion},
                      {"seed", seed},   {"winograd_tiles", winograd_tiles}, {"fusion_db", fusion_db}};
  return j.dump();
}

ModelConfig ModelConfig::from_json(const std::string& text) {
  ModelConfig c;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    c.model = j.at("model").get<std::string>();
    for (const auto& [name, dims] : j.at("input_shapes").items()) c.input_shapes[name] = dims.get<Dims>();
    c.disabled_passes = j.at("disabled_passes").get<std::vector<std::string>>();
    c.isa = isa_from_name(j.at("isa").get<std::string>());
    c.threads = j.at("threads").get<int>();
    c.fusion = j.at("fusion").get<bool>();
    c.seed = j.at("seed").get<uint64_t>();
    if (j.contains("fusion_db")) c.fusion_db = j.at("fusion_db").get<std::string>();
    if (j.contains("winograd_tiles")) c.winograd_tiles = j.at("winograd_tiles").get<std::map<std::string, int>>();
  } catch (const nlohmann::json::exception& e) {
    TESSERA_FAIL("tuning model configuration: ", e.what());
  }
  return c;
}

LoadOptions ModelConfig::load_options() const {
  LoadOptions o;
  o.input_shapes = input_shapes;
  for (const std::string& p : disabled_passes) o.passes.disable(p);
  o.passes.winograd_tiles = winograd_tiles;
  return o;
}

runtime::ExecutorOptions ModelConfig::executor_options() const {
  runtime::ExecutorOptions e;
  e.isa = isa;
  e.threads = threads;
  e.fusion = fusion;
  e.fusion_db = fusion_db;
  e.passes = load_options().passes;
  return e;
}

TuningModel open_model(const ModelConfig& config) {
  TuningModel m;
  m.executor = std::make_unique<runtime::Executor>(load_model(config.model, config.load_options()),
                                                   config.executor_options());
  m.inputs = random_inputs(m.executor->graph(), config.seed);
  m.tasks = m.executor->tasks(m.inputs);
  return m;
}

}  // namespace tessera::tune
