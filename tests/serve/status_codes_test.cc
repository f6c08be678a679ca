// serve's errors carry codes and one table maps them to HTTP: a bad request is
// invalid_argument (400), an image over the pixel limit resource_exhausted (413), the batch
// queue's refusals unavailable (503), a batcher that is stopping cancelled (503).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/http_status.h"
#include "serve/served_model.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using testing::b64_instance;
using testing::test_image;

TEST(HttpStatusFor, OneTableForEveryCode) {
  EXPECT_EQ(http_status_for(StatusCode::ok), 200);
  EXPECT_EQ(http_status_for(StatusCode::invalid_argument), 400);
  EXPECT_EQ(http_status_for(StatusCode::not_found), 404);
  EXPECT_EQ(http_status_for(StatusCode::already_exists), 409);
  EXPECT_EQ(http_status_for(StatusCode::resource_exhausted), 413);
  EXPECT_EQ(http_status_for(StatusCode::unavailable), 503);
  EXPECT_EQ(http_status_for(StatusCode::cancelled), 503);
  EXPECT_EQ(http_status_for(StatusCode::data_loss), 500);
  EXPECT_EQ(http_status_for(StatusCode::internal), 500);
}

TEST(RequestCodes, ABadBodyIsInvalidArgument) {
  PredictRequest request;
  const Status status = parse_predict_body("{\"instances\": [", false, &request);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::invalid_argument) << status.message();
  PredictRequest empty;
  EXPECT_EQ(parse_predict_body("{\"instances\": []}", false, &empty).code(),
            StatusCode::invalid_argument);
}

TEST(RequestCodes, AnImageOverThePixelLimitIsResourceExhausted) {
  std::vector<float> pixels(8 * 8 * 3);
  const InstanceOptions options{8, 8, /*max_image_pixels=*/100};
  const Status big = fill_instance(b64_instance(test_image(1, 20, 20)), 0, options, pixels.data());
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.code(), StatusCode::resource_exhausted) << big.message();
  const Status text =
      fill_instance(b64_instance("plain text, not pixels"), 0, options, pixels.data());
  EXPECT_EQ(text.code(), StatusCode::invalid_argument) << text.message();
}

TEST(BatcherCodes, AFullQueueIsUnavailableAndAStoppedOneCancelled) {
  testing::TempDir dir;
  testing::train_model(dir.path(), 2);
  BackendOptions backend;
  backend.num_threads = 1;
  Result<std::unique_ptr<ServedModel>> loaded = ServedModel::load(backend, dir.path(), "", 4);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::shared_ptr<ServedModel> model = std::move(*loaded);
  // A batch waits an hour to fill, even alone: what is queued stays queued.
  Batcher batcher(BatcherOptions{4, std::chrono::hours(1), 2, /*wait_when_idle=*/true}, nullptr);

  const Status never = batcher.submit(std::make_shared<BatchJob>(model, 3));
  EXPECT_EQ(never.code(), StatusCode::unavailable) << never.message();
  ASSERT_TRUE(batcher.submit(std::make_shared<BatchJob>(model, 2)).ok());
  const Status full = batcher.submit(std::make_shared<BatchJob>(model, 1));
  EXPECT_EQ(full.code(), StatusCode::unavailable) << full.message();
  EXPECT_NE(full.message().find("queue is full"), std::string::npos) << full.message();

  batcher.stop();  // runs what is queued
  const Status stopped = batcher.submit(std::make_shared<BatchJob>(model, 1));
  EXPECT_EQ(stopped.code(), StatusCode::cancelled) << stopped.message();
}

}  // namespace
}  // namespace ic
