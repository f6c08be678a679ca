// Fake data for --use_data=fake: images uniform in [-1, 1) and labels uniform in
// [0, 999), made once at construction; next() hands out the same batch every time, so a
// trainer on fake data is never waiting for input.
#pragma once

#include <cstdint>
#include <memory>

#include "data/input_pipeline.h"

namespace ic {

struct FakeInputOptions {
  int64_t batch_size = 32;
  int height = 299, width = 299;
  // Rows cycle through this many distinct random images (the reference repeats one tensor; a
  // few distinct ones keep batch statistics non-degenerate without the cost of B images).
  int distinct_images = 8;
  uint64_t seed = 0;
};

class FakeInput final : public BatchSource {
 public:
  explicit FakeInput(const FakeInputOptions& options);
  // Never ends: training on fake data repeats forever, as the reference does.
  Result<std::shared_ptr<const Batch>> next() override { return batch_; }

 private:
  std::shared_ptr<const Batch> batch_;
};

}  // namespace ic
