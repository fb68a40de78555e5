// Whole-file reads and writes with errors that name the path.
#pragma once

#include <string>

namespace tessera {

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace tessera
