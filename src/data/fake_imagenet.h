// Fake ImageNet: TFRecord shards in the converter's exact format (or the raw tree the
// converter reads) filled with random but plausible JPEGs: smooth colour gradients with a few
// soft blobs, so JPEG sizes and decode costs resemble photographs rather than noise. The
// blobs' hue follows the label, so a model can learn something from the data.
// This is for testing the real-data path; the trainer's --use_data=fake makes tensors instead.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "data/image_codec.h"

namespace ic {

struct FakeImageNetOptions {
  std::string output_dir;
  int64_t num_train_images = 1024;
  int64_t num_validation_images = 128;
  int train_shards = 8;
  int validation_shards = 2;
  int image_size = 299;  // height; also the width unless image_width > 0
  int image_width = 0;
  int num_classes = 1000;  // labels 1..num_classes
  uint64_t seed = 0;
  int jpeg_quality = 90;
  int num_threads = 1;
  // Writes RAW/train/<synset>/<synset>_<i>.JPEG, RAW/validation/*.JPEG and
  // synset_labels.txt (the converter's input) instead of TFRecord shards.
  bool raw_layout = false;
};

// "fake0001" for label 1: the image/class/synset of fake records.
std::string fake_synset(int64_t label);

// The label (1..num_classes) and picture of image `index` of a split; the same for a given
// (seed, index) whatever the thread count.
int64_t fake_label(uint64_t seed, int64_t index, int num_classes);
RgbImage make_fake_image(uint64_t seed, int64_t index, int64_t label, int num_classes, int height,
                         int width);

// Writes the whole fake dataset (both splits). Validation images use a different seed
// stream from training images.
Status make_fake_imagenet(const FakeImageNetOptions& options);

// Writes one file of a raw ImageNet tree (an image, synset_labels.txt), replacing what is
// there; errors name the path. data/fashion_mnist.cc writes its trees with it too.
Status write_tree_file(const std::string& path, const std::string& bytes);

}  // namespace ic
