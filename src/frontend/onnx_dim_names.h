// The names of the symbolic dimensions (ONNX's dim_param) of a model file's
// graph inputs and outputs. The importer keeps only that a dimension is
// dynamic (-1); the public signatures (the C API, the Python module) show a
// dynamic dimension by its name, as ONNX Runtime does, so they read the names
// here without importing the model again.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tessera {

// Value name -> one entry per dimension ("" where the dimension has a value
// or no name). Reads only the graph's input and output declarations (other
// fields, the weights among them, are skipped unparsed). Best effort: a file
// that is no ONNX model, or cannot be read, gives an empty map.
std::map<std::string, std::vector<std::string>> onnx_dim_names(const std::string& path);

}  // namespace tessera
