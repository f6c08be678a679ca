// A choice-valued flag's enum and its one list of names: the command line, --help, validation
// and any text a program records (checkpoint metadata) spell the enum with these names, and
// nothing after parsing compares strings. Each enum's names are a Choices<E> specialisation
// next to the enum's users (train/choices.h for the trainers', a tool's own next to its main).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ic {

template <typename E>
struct ChoiceName {
  E value;
  const char* name;
};

// Choices<E>::names: every value of E with its command-line name, in the order --help lists
// them. Specialise it as
//   template <>
//   struct Choices<Colour> {
//     static constexpr std::array<ChoiceName<Colour>, 2> names = {
//         {{Colour::red, "red"}, {Colour::green, "green"}}};
//   };
template <typename E>
struct Choices;

template <typename E>
const char* choice_name(E value) {
  for (const auto& c : Choices<E>::names) {
    if (c.value == value) return c.name;
  }
  return "?";  // unreachable for a value of the enum
}

template <typename E>
std::optional<E> parse_choice(std::string_view text) {
  for (const auto& c : Choices<E>::names) {
    if (text == c.name) return c.value;
  }
  return std::nullopt;
}

// "train, eval, train_and_eval, summary": the names in help order, as messages list them.
template <typename E>
std::string choice_list() {
  std::string list;
  for (const auto& c : Choices<E>::names) list += (list.empty() ? "" : ", ") + std::string(c.name);
  return list;
}

}  // namespace ic
