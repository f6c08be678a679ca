// The trainers' choice-valued flags as enums, each with the one list of names the command line,
// --help, validation and the checkpoint metadata spell it with (a Choices<E> specialisation of
// cli/choices.h). A value is parsed from text once (train/flag_table.cc); everything after that
// compares enums, never strings. --device is cli/device.h's DeviceChoice.
#pragma once

#include <array>

#include "cli/choices.h"
#include "cli/device.h"
#include "data/preprocessing.h"
#include "io/checkpoint_dir.h"
#include "models/model_spec.h"

namespace ic {

enum class Mode { train, eval, train_and_eval, summary };
enum class UseData { real, fake };
enum class Precision { float32, bfloat16 };
using Preprocessing = PreprocessOptions::Kind;
// OptimizerKind (models/model_spec.h: it is part of a model's recipe) and CheckpointFormat
// (io/checkpoint_dir.h) are choices too.

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
template <>
struct Choices<OptimizerKind> {
  // The reference's spellings (inception_v3.py's --optimizer).
  static constexpr std::array<ChoiceName<OptimizerKind>, 3> names = {
      {{OptimizerKind::sgd, "sgd"},
       {OptimizerKind::momentum, "momentum"},
       {OptimizerKind::rmsprop, "RMS"}}};
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
