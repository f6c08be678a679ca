// Every program's --help starts with what it does and an example command, lists its own flags,
// and none of the flag library's (gflags' --flagfile, --helpfull, ... are not ours to offer).
#include <gtest/gtest.h>

#include <string>

#include "tools/tool_runner.h"

namespace ic {
namespace {

using testing::run_tool;
using testing::ToolOutput;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST(Help, EveryProgramSaysWhatItDoesGivesAnExampleAndListsOnlyItsFlags) {
  const struct {
    const char* program;
    const char* one_of_its_flags;
  } programs[] = {
      {"inception_v3", "--train_batch_size"},
      {"inception_v4", "--cold_learning_rate"},
      {"resnet50", "--micro_batch_size"},
      {"classify", "--top_k"},
      {"inspect_checkpoint", "--write_bundle"},
      {"make_fake_imagenet", "--num_train_images"},
      {"imagenet_to_tfrecord", "--raw_data_dir"},
      {"fashion_mnist_to_raw", "--output_dir"},
      {"serve", "--max_batch_size"},
  };
  for (const auto& p : programs) {
    const ToolOutput help = run_tool(p.program, "--help");
    EXPECT_EQ(help.exit_code, 0) << p.program << "\n" << help.output;
    const std::string line = first_line(help.output);
    EXPECT_EQ(line.rfind(std::string(p.program) + ": ", 0), 0u) << p.program << ": " << line;
    EXPECT_GT(line.size(), std::string(p.program).size() + 20) << p.program << ": " << line;
    EXPECT_TRUE(help.contains("\nExample:\n  " + std::string(p.program) + " --"))
        << p.program << "\n"
        << help.output;
    EXPECT_TRUE(help.contains(p.one_of_its_flags)) << p.program << "\n" << help.output;
    for (const char* internal : {"--flagfile", "--helpfull", "--fromenv", "--tryfromenv",
                                 "--undefok", "--tab_completion", "gflags"}) {
      EXPECT_FALSE(help.contains(internal)) << p.program << " shows " << internal;
    }
  }
}

TEST(Help, AnUnknownFlagIsRefusedWithExitCode2) {
  for (const char* program : {"make_fake_imagenet", "imagenet_to_tfrecord", "classify", "serve"}) {
    const ToolOutput bad = run_tool(program, "--no_such_flag=1");
    EXPECT_EQ(bad.exit_code, 2) << program << "\n" << bad.output;
    EXPECT_TRUE(bad.contains("no_such_flag")) << program << "\n" << bad.output;
  }
}

// --export_dir is accepted (the tutorial's commands pass it) but no SavedModel is written yet:
// the program must say so rather than let the user believe an export exists.
TEST(Help, ExportDirIsSaidNotToBeActedOn) {
  testing::TempDir dir;
  const ToolOutput run =
      testing::train_tiny_model(dir.path() + "/model", 1, "--export_dir=" + dir.path() + "/export");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(run.contains("--export_dir=" + dir.path() + "/export is not acted on")) << run.output;
}

}  // namespace
}  // namespace ic
