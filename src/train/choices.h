// The trainers' choice-valued flags as enums, each with the one list of names the command line,
// --help, validation and the checkpoint metadata spell it with (a Choices<E> specialisation of
// cli/choices.h). A value is parsed from text once (train/flag_table.cc); everything after that
// compares enums, never strings. --device is cli/device.h's DeviceChoice.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/choices.h"
#include "cli/device.h"
#include "data/preprocessing.h"
#include "io/checkpoint_dir.h"
#include "train/optimizer.h"

namespace ic {

enum class Mode { train, eval, train_and_eval, summary };
enum class UseData { real, fake };
enum class Precision { float32, bfloat16 };
// --export_best: the evaluation metric that decides whether a checkpoint is exported, and
// whether more (accuracy) or less (loss) is better; auto: less for loss, more otherwise.
enum class ExportBestMetric { none, accuracy, accuracy_at_5, loss };
enum class ExportBestMode { auto_, max, min };
using Preprocessing = PreprocessOptions::Kind;
// CheckpointFormat (io/checkpoint_dir.h) is a choice too, and so is the optimizer: an entry of
// the optimizer table (train/optimizer.h), held as a pointer into it.

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
struct Choices<ExportBestMetric> {
  static constexpr std::array<ChoiceName<ExportBestMetric>, 4> names = {
      {{ExportBestMetric::none, "none"},
       {ExportBestMetric::accuracy, "accuracy"},
       {ExportBestMetric::accuracy_at_5, "accuracy@5"},
       {ExportBestMetric::loss, "loss"}}};
};
template <>
struct Choices<ExportBestMode> {
  static constexpr std::array<ChoiceName<ExportBestMode>, 3> names = {
      {{ExportBestMode::auto_, "auto"},
       {ExportBestMode::max, "max"},
       {ExportBestMode::min, "min"}}};
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

}  // namespace ic
