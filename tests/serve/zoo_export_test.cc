// Every model of the zoo through the tutorial's serving path: trained by its own program,
// exported by export_model as a SavedModel, as ONNX and as safetensors, and each export
// served under the model's own name answers as serving the checkpoint does.
#include <string>

#include "serve_test_util.h"

namespace ic {
namespace {

using namespace testing;

class ServeZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(ServeZoo, EachExportAnswersAsTheCheckpoint) {
  // The servers compile the same graph; with their convolution algorithms chosen by timing
  // (on a loaded machine, differently) they would agree only to the last bits.
  ::setenv("IC_CONV_TIMING", "0", 1);
  struct TimingBack {
    ~TimingBack() { ::unsetenv("IC_CONV_TIMING"); }
  } timing_back;
  const std::string model = GetParam();
  TempDir dir;
  const std::string model_dir = dir.sub("model");
  const ToolOutput trained = train_zoo_model(model, model_dir, 2);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;

  // The SavedModel and safetensors exports hold the checkpoint's tensors: the same answers.
  // The ONNX export folds each batch norm into its convolution: a float's rounding apart.
  const struct {
    const char* format;
    double tolerance;
  } kExports[] = {{"saved_model", 1e-6}, {"safetensors", 1e-6}, {"onnx", 1e-5}};
  for (const auto& e : kExports) {
    SCOPED_TRACE(model + " exported as " + e.format);
    const std::string export_dir = dir.sub(std::string("export_") + e.format);
    const std::string version = export_once(model_dir, export_dir, e.format);
    ASSERT_FALSE(version.empty());
    json predictions;
    expect_export_answers_as_checkpoint(model, model_dir, export_dir, version, e.tolerance,
                                        &predictions);
    // Two images, two answers: an equality of near one-hot or constant outputs proves little.
    ASSERT_EQ(predictions.size(), 2u);
    EXPECT_NE(predictions[0]["probabilities"], predictions[1]["probabilities"]);
    EXPECT_LT(predictions[0]["probabilities"][predictions[0]["classes"].get<int>()].get<double>(),
              0.999);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ServeZoo,
                         ::testing::Values("mobilenet_v1", "mobilenet_v2", "densenet121",
                                           "squeezenet1_0", "squeezenet1_1", "efficientnet_b0"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace ic
