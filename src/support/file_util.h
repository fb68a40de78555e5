// Whole-file reads and writes with errors that name the path, and where
// Tessera keeps what it learns about a machine.
#pragma once

#include <string>

namespace tessera {

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// Makes `dir` (and its parents) a directory this process can write into, or
// throws a sentence starting with `what` (e.g. "--outputs 'out'"): the path
// is a file, cannot be created, or is not writable. Called before the work
// whose results go there, so a bad path fails before a long run.
void ensure_writable_directory(const std::string& dir, const std::string& what);

// The cache directory (the fusion profiling database, fitted cost-model
// coefficients): $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else
// $HOME/.cache/tessera; "" when none of them is set.
std::string cache_directory();

}  // namespace tessera
