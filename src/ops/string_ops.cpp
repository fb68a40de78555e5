// Ops on string tensors: StringNormalizer, StringConcat, StringSplit,
// RegexFullMatch, TfIdfVectorizer.
#include "ops/op_helpers.h"

namespace tessera {

void register_string_ops(OpRegistry& r) {}

}  // namespace tessera
