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
      {"export_model", "--format"},
      {"sweep", "--variant_index"},
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
  for (const char* program :
       {"make_fake_imagenet", "imagenet_to_tfrecord", "classify", "export_model", "serve"}) {
    const ToolOutput bad = run_tool(program, "--no_such_flag=1");
    EXPECT_EQ(bad.exit_code, 2) << program << "\n" << bad.output;
    EXPECT_TRUE(bad.contains("no_such_flag")) << program << "\n" << bad.output;
  }
  // A slip of the keyboard is answered with the flag that was meant.
  const ToolOutput slip = run_tool("make_fake_imagenet", "--num_train_image=3");
  EXPECT_EQ(slip.exit_code, 2) << slip.output;
  EXPECT_TRUE(slip.contains("(did you mean --num_train_images?)")) << slip.output;
}

TEST(Help, TheToolsTakeTheTrainersDeviceValuesOnly) {
  // One parser for --device everywhere: "cudaz9" or "cuda:abc" must not quietly mean a GPU.
  for (const char* program : {"classify", "serve"}) {
    for (const char* device : {"cudaz9", "cuda:abc", "gpu"}) {
      const std::string inputs = std::string(program) == "classify" ? " x.jpg" : "";
      const ToolOutput bad =
          run_tool(program, std::string("--model_dir=/nonexistent --device=") + device + inputs);
      EXPECT_EQ(bad.exit_code, 2) << program << " " << device << ": " << bad.output;
      EXPECT_TRUE(bad.contains("allowed: cpu, cuda, cuda:N")) << bad.output;
    }
  }
}

}  // namespace
}  // namespace ic
