// Names of an enum's values, kept as one constexpr table of {value, name}
// pairs: the name of a value, the value of a name, and the list a parse
// error offers are all read from that table, so they cannot disagree.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "support/error.h"

namespace tessera {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

// The table's names, ", "-separated in table order: "a, b, c".
template <class E, size_t N>
std::string table_names(const Named<E> (&table)[N]) {
  std::string names;
  for (const Named<E>& e : table) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

// The name of `value`; "?" for a value the table leaves out.
template <class E, size_t N>
std::string_view table_name(const Named<E> (&table)[N], E value) {
  for (const Named<E>& e : table)
    if (e.value == value) return e.name;
  return "?";
}

// The value named `name`; throws tessera::Error "unknown <what> '<name>'
// (available: <the table's names>)" for a name the table lacks.
template <class E, size_t N>
E table_parse(const Named<E> (&table)[N], std::string_view name, std::string_view what) {
  for (const Named<E>& e : table)
    if (e.name == name) return e.value;
  TESSERA_FAIL("unknown ", what, " '", name, "' (available: ", table_names(table), ")");
}

// For options kept as strings: throws tessera::Error "unknown <what>
// '<value>' (available: <names>)" unless `value` is one of `names`.
inline void check_one_of(std::string_view value, std::initializer_list<std::string_view> names, std::string_view what) {
  std::string listed;
  for (std::string_view n : names) {
    if (n == value) return;
    if (!listed.empty()) listed += ", ";
    listed += n;
  }
  TESSERA_FAIL("unknown ", what, " '", value, "' (available: ", listed, ")");
}

}  // namespace tessera
