// Fashion-MNIST (Debian's dataset-fashion-mnist: IDX files, gzipped, in
// /usr/share/datasets/fashion-mnist) turned into the raw ImageNet layout the converter reads:
//   OUT/train/<synset>/<synset>_NNNNN.JPEG      60000 images
//   OUT/validation/fashion_mnist_val_NNNNN.JPEG 10000 images (the t10k set)
//   OUT/synset_labels.txt                       one synset per validation image, in order
// Synsets are class_0_tshirt ... class_9_ankle_boot, so the converter's sorted labels are
// 1..10 (class k -> label k+1; train with --num_classes=11, 0 being the background).
// Images stay 28x28 and are stored as RGB JPEG (grey replicated), quality 95.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ic {

inline constexpr std::array<const char*, 10> kFashionMnistSynsets = {
    "class_0_tshirt", "class_1_trouser", "class_2_pullover", "class_3_dress", "class_4_coat",
    "class_5_sandal", "class_6_shirt",   "class_7_sneaker",  "class_8_bag",   "class_9_ankle_boot"};

// An IDX3 image file: count images of rows x cols bytes, row-major.
struct IdxImages {
  int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // [count, rows, cols]
};

// Read IDX files, gzipped or not (zlib reads both).
Result<IdxImages> read_idx_images(const std::string& path);
Result<std::vector<uint8_t>> read_idx_labels(const std::string& path);

struct FashionMnistOptions {
  std::string input_dir = "/usr/share/datasets/fashion-mnist";
  std::string output_dir;
  int64_t max_train_images = 0;       // 0 = all 60000
  int64_t max_validation_images = 0;  // 0 = all 10000
  int jpeg_quality = 95;
};

struct FashionMnistSummary {
  int64_t train_images = 0, validation_images = 0;
};

// Finds train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-... in input_dir.
Result<FashionMnistSummary> fashion_mnist_to_raw(const FashionMnistOptions& options);

}  // namespace ic
