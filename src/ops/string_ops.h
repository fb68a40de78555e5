// Registration hooks of the string-op family (called from
// register_string_ops) and small helpers shared by its files.
#pragma once

#include <string>

#include "ops/registry.h"

namespace tessera {

void register_string_regex_ops(OpRegistry& r);  // RegexFullMatch
void register_string_tfidf_ops(OpRegistry& r);  // TfIdfVectorizer

// ASCII case mapping; bytes >= 0x80 (the rest of UTF-8) are kept as they are.
std::string ascii_lower(std::string s);
std::string ascii_upper(std::string s);

}  // namespace tessera
