// The inspect_checkpoint program: lists either format and converts between them losslessly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io/checkpoint_dir.h"
#include "io/safetensors.h"
#include "io/tensor_bundle.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::run_tool;
using testing::TempDir;

TEST(InspectCheckpoint, ListsAndConvertsBothWaysBitExactly) {
  TempDir dir;
  const std::vector<float> w = {0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 7.0f};
  const int64_t step = 12;
  ASSERT_TRUE(save_checkpoint(
                  dir.sub("m"), 12, {{"model", "inception_v3"}},
                  {{"InceptionV3/Conv2d_1a_3x3/weights", DType::f32, Shape{1, 2, 1, 3}, w.data()},
                   {"global_step", DType::i64, Shape{}, &step}})
                  .ok());
  auto listed =
      run_tool("inspect_checkpoint",
               "--model_dir=" + dir.sub("m") + " --write_safetensors=" + dir.sub("c.safetensors"));
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_TRUE(listed.contains("checkpoint: " + dir.sub("m/model.ckpt-12") + "\n")) << listed.output;
  EXPECT_TRUE(listed.contains("metadata model: inception_v3\n")) << listed.output;
  EXPECT_TRUE(listed.contains("InceptionV3/Conv2d_1a_3x3/weights float32 [1,2,1,3]\n"))
      << listed.output;
  EXPECT_TRUE(listed.contains("global_step int64 []\n")) << listed.output;

  auto back = run_tool("inspect_checkpoint", "--file_name=" + dir.sub("c.safetensors") +
                                                 " --write_bundle=" + dir.sub("b/model.ckpt-12"));
  ASSERT_EQ(back.exit_code, 0) << back.output;
  auto original = read_checkpoint(dir.sub("m/model.ckpt-12"));
  auto converted = read_tensor_bundle(dir.sub("b/model.ckpt-12"));
  ASSERT_TRUE(original.ok() && converted.ok());
  EXPECT_EQ(converted->metadata, original->metadata);
  ASSERT_EQ(converted->tensors.size(), original->tensors.size());
  for (const TensorEntry& t : original->tensors) {
    const TensorEntry* c = converted->find(t.name);
    ASSERT_NE(c, nullptr) << t.name;
    EXPECT_EQ(c->dtype, t.dtype);
    EXPECT_EQ(c->shape, t.shape);
    EXPECT_EQ(c->bytes, t.bytes) << t.name;
  }
}

TEST(InspectCheckpoint, ErrorsNameTheFile) {
  TempDir dir;
  auto missing = run_tool("inspect_checkpoint", "--file_name=" + dir.sub("model.ckpt-3"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.contains(dir.sub("model.ckpt-3.index"))) << missing.output;
  auto none = run_tool("inspect_checkpoint", "");
  EXPECT_EQ(none.exit_code, 2);
}

}  // namespace
}  // namespace ic
