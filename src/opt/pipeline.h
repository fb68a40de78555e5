// The compiler's graph pipelines: the passes (opt/pass_manager.h) run on a
// model, in order. load_model runs the load pipeline; the compiled runtime
// runs the target pipeline before planning, with the target's vector width.
#pragma once

#include <string>
#include <vector>

namespace tessera {

const std::vector<std::string>& load_pipeline();
const std::vector<std::string>& target_pipeline();

}  // namespace tessera
