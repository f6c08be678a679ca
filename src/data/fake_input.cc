#include "data/fake_input.h"

#include <algorithm>
#include <cstring>

#include "data/random.h"

namespace ic {

FakeInput::FakeInput(const FakeInputOptions& options) {
  auto batch = std::make_shared<Batch>();
  batch->size = std::max<int64_t>(options.batch_size, 1);
  batch->valid = batch->size;
  batch->height = options.height;
  batch->width = options.width;
  const size_t image_floats = static_cast<size_t>(options.height) * options.width * 3;
  batch->images.resize(static_cast<size_t>(batch->size) * image_floats);
  batch->labels.resize(static_cast<size_t>(batch->size));
  const int64_t distinct = std::clamp<int64_t>(options.distinct_images, 1, batch->size);
  Rng rng(options.seed, 0x66616B65);  // "fake"
  for (int64_t row = 0; row < batch->size; ++row) {
    float* image = batch->images.data() + static_cast<size_t>(row) * image_floats;
    if (row < distinct) {
      for (size_t i = 0; i < image_floats; ++i) image[i] = rng.uniform(-1.0f, 1.0f);
    } else {
      std::memcpy(image, batch->images.data() + static_cast<size_t>(row % distinct) * image_floats,
                  image_floats * sizeof(float));
    }
    batch->labels[static_cast<size_t>(row)] = static_cast<int32_t>(rng.uniform_int(999));
  }
  batch_ = std::move(batch);
}

}  // namespace ic
