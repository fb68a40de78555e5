// Whole-file reads and writes with errors that name the path, and where
// Tessera keeps what it learns about a machine.
#pragma once

#include <string>

namespace tessera {

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// The cache directory (the fusion profiling database, fitted cost-model
// coefficients): $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
// $HOME/.cache/tessera; "" when none of them is set.
std::string cache_directory();

}  // namespace tessera
