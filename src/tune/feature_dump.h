// The static features of measured candidates as a file (tune-fit
// --dump-features writes it, --features reads it back): JSON lines, first
// {"features": [names in vector order]}, then one candidate per line,
// {"group": g, "task": text, "schedule": text, "seconds": cost, "f": [values]}.
// Fitting and judging from such files repeats no compilation (features of a
// JIT-compiled candidate take a tenth of a second each).
#pragma once

#include <string>
#include <vector>

#include "cost/static_model.h"

namespace tessera::tune {

// Writes the groups' candidates; throws tessera::Error naming the path when
// it cannot be written.
void write_feature_dump(const std::string& path, const std::vector<cost::FitGroup>& groups);

// Reads the groups of one or more dumps (a file's groups stay apart from
// another's; groups of fewer than two candidates are dropped). Throws
// tessera::Error naming the file and line when a line is not such a record,
// or when the file's feature names are not this build's.
std::vector<cost::FitGroup> read_feature_dump(const std::string& path);

}  // namespace tessera::tune
