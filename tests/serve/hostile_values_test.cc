// Values a request cannot be allowed to turn into NaN probabilities or a huge decode: numbers
// beyond float32 or double, non-finite floats, truncated JPEGs, and decompression bombs with
// the instance options' default limit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "serve/api.h"
#include "serve_test_util.h"

namespace ic {
namespace {

using testing::b64_instance;
using testing::test_image;

TEST(HostileValues, ANumberBeyondDoubleIsABadRequest) {
  // nlohmann/json refuses to parse 1e999 (out_of_range), rather than reading it as infinity.
  PredictRequest request;
  const Status status = parse_predict_body("{\"instances\": [[[[1e999, 0, 0]]]]}", false, &request);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::invalid_argument) << status.message();
}

TEST(HostileValues, NonFiniteOrBeyondFloat32ValuesAreRefusedWithTheirPosition) {
  const InstanceOptions options{1, 2};
  std::vector<float> out(6);
  for (const double bad : {3.5e38, std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::infinity()}) {
    const nlohmann::json instance = {{{0.5, 0.0, -0.5}, {0.25, bad, 0.0}}};
    const Status status = fill_instance(instance, 3, options, out.data());
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_EQ(status.code(), StatusCode::invalid_argument);
    EXPECT_NE(status.message().find("[0][1][1]"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("not a finite float32"), std::string::npos) << status.message();
  }
  EXPECT_TRUE(fill_instance({{{0.5, 0.0, -0.5}, {0.25, 1.0, 0.0}}}, 0, options, out.data()).ok());
}

TEST(HostileValues, ATruncatedJpegIsABadRequest) {
  const std::string jpeg = test_image(1, 90, 120);
  std::vector<float> out(8 * 8 * 3);
  const Status status = fill_instance(b64_instance(jpeg.substr(0, jpeg.size() / 2)), 0,
                                      InstanceOptions{8, 8}, out.data());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::invalid_argument) << status.message();
}

TEST(HostileValues, TheDefaultInstanceOptionsHaveAPixelLimit) {
  EXPECT_EQ(InstanceOptions{}.max_image_pixels, kDefaultMaxImagePixels);
  std::string bomb = test_image(2, 16, 16);
  const size_t sof = bomb.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (const size_t at : {sof + 5, sof + 7}) {
    bomb[at] = static_cast<char>(60000 >> 8);
    bomb[at + 1] = static_cast<char>(60000 & 0xff);
  }
  std::vector<float> out(8 * 8 * 3);
  const Status status = fill_instance(b64_instance(bomb), 0, InstanceOptions{8, 8}, out.data());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::resource_exhausted) << status.message();
}

}  // namespace
}  // namespace ic
