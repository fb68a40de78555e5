// `tessera run`: a model (ONNX, zoo:NAME or a compiled .tsr) run once,
// compiled or by the reference interpreter, on random inputs or inputs from
// files; prints load, compile and run times, memory and output checksums,
// and writes the outputs when asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_options.h"

namespace tessera::tools {

// Returns the process exit code; throws tessera::Error on bad input.
int cmd_run(const Common& c, const Exec& e, const std::vector<std::string>& input_paths, const std::string& out_dir,
            bool npy, uint64_t seed, bool report);

}  // namespace tessera::tools
