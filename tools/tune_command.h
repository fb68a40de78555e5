// `tessera tune` and the measurement worker it starts (`tessera tune-worker`,
// not for users): the auto-tuner (src/tune/tuner.h) on a model from the
// command line, with a progress line and a closing table.
#pragma once

#include <string>

#include "tune/tuner.h"

namespace tessera::tools {

// Tunes with `o` (o.exe is filled in: this executable); prints the table.
int cmd_tune(tune::TuneOptions o);
// The worker's loop on stdin/stdout.
int cmd_tune_worker(const std::string& config_json);

}  // namespace tessera::tools
