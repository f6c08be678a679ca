// The trainers' choice-valued flags as enums, each with the one list of names the command line,
// --help, validation and the checkpoint metadata spell it with. A value is parsed from text once
// (train/flag_table.cc); everything after that compares enums, never strings.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/preprocessing.h"
#include "io/checkpoint_dir.h"
#include "train/optimizer.h"

namespace ic {

enum class Mode { train, eval, train_and_eval, summary };
enum class UseData { real, fake };
enum class Precision { float32, bfloat16 };
using Preprocessing = PreprocessOptions::Kind;
// CheckpointFormat (io/checkpoint_dir.h) is a choice too, and so is the optimizer: an entry of
// the optimizer table (train/optimizer.h), held as a pointer into it.

template <typename E>
struct ChoiceName {
  E value;
  const char* name;
};

// Choices<E>::names: every value of E with its command-line name, in the order --help lists them.
template <typename E>
struct Choices;

template <>
struct Choices<Mode> {
  static constexpr std::array<ChoiceName<Mode>, 4> names = {
      {{Mode::train, "train"},
       {Mode::eval, "eval"},
       {Mode::train_and_eval, "train_and_eval"},
       {Mode::summary, "summary"}}};
};
template <>
struct Choices<UseData> {
  static constexpr std::array<ChoiceName<UseData>, 2> names = {
      {{UseData::real, "real"}, {UseData::fake, "fake"}}};
};
template <>
struct Choices<Precision> {
  static constexpr std::array<ChoiceName<Precision>, 2> names = {
      {{Precision::float32, "float32"}, {Precision::bfloat16, "bfloat16"}}};
};
// The optimizer table's entries under their flag names (the reference's sgd, momentum, RMS;
// then ours), in the table's order.
const std::vector<ChoiceName<const Optimizer*>>& optimizer_choice_names();
template <>
struct Choices<const Optimizer*> {
  struct Names {
    auto begin() const { return optimizer_choice_names().begin(); }
    auto end() const { return optimizer_choice_names().end(); }
  };
  static constexpr Names names{};
};
template <>
struct Choices<Preprocessing> {
  static constexpr std::array<ChoiceName<Preprocessing>, 2> names = {
      {{Preprocessing::inception, "inception"}, {Preprocessing::vgg, "vgg"}}};
};
template <>
struct Choices<CheckpointFormat> {
  static constexpr std::array<ChoiceName<CheckpointFormat>, 2> names = {
      {{CheckpointFormat::tf, "tf"}, {CheckpointFormat::safetensors, "safetensors"}}};
};

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

// --device: empty (decided by --use_tpu), cpu, cuda (one GPU per local process) or cuda:N.
struct DeviceChoice {
  enum class Kind { from_use_tpu, cpu, cuda };
  Kind kind = Kind::from_use_tpu;
  std::optional<int> cuda_index;  // cuda:N; none for plain "cuda"

  bool operator==(const DeviceChoice&) const = default;
};
std::optional<DeviceChoice> parse_device(std::string_view text);
std::string device_name(const DeviceChoice& device);

}  // namespace ic
