// The training programs' command line: reference defaults per model, True/False spellings,
// and refusal of unknown flags and bad values with the allowed values in the message.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/flag_parser.h"
#include "train/train_flags.h"

namespace ic {
namespace {

Result<RunOptions> parse(const std::string& model, std::vector<std::string> args,
                         bool* help = nullptr) {
  gflags::FlagSaver saver;  // each parse starts from the registered defaults
  std::vector<const char*> argv = {"prog"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  bool ignored = false;
  return parse_run_options(model, static_cast<int>(argv.size()), argv.data(),
                           help ? help : &ignored);
}

bool mentions(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(TrainFlags, InceptionV3DefaultsAreTheReferenceFlags) {
  gflags::FlagSaver saver;
  Result<RunOptions> o = parse("inception_v3", {"--use_data=fake", "--model_dir=/tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->train_batch_size, 1024);
  EXPECT_EQ(o->train_steps, 213000);
  EXPECT_DOUBLE_EQ(o->learning_rate, 0.165);
  EXPECT_EQ(o->optimizer, "RMS");
  EXPECT_EQ(o->mode, "train_and_eval");
  EXPECT_EQ(o->iterations, 100);
  EXPECT_EQ(o->num_classes, 1001);
  EXPECT_EQ(o->width, 299);
  EXPECT_EQ(o->save_checkpoints_secs, 1000);
  EXPECT_EQ(o->save_summary_steps, 100);
  EXPECT_EQ(o->learning_rate_decay_epochs, 3);
  EXPECT_EQ(o->train_steps_per_eval, 2000);
  EXPECT_TRUE(o->use_tpu);
  EXPECT_TRUE(o->moving_average);
  EXPECT_FALSE(o->use_annotated_bbox);
  EXPECT_EQ(o->keep_checkpoint_max, 5);
  EXPECT_EQ(o->checkpoint_format, "tf");  // TensorFlow's own checkpoints, as the reference
  EXPECT_DOUBLE_EQ(o->weight_decay, 4e-5);
}

TEST(TrainFlags, InceptionV4DefaultsFollowInceptionV4Py) {
  gflags::FlagSaver saver;
  Result<RunOptions> o = parse("inception_v4", {"--use_data=fake", "--model_dir=/tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->train_batch_size, 256);
  EXPECT_EQ(o->train_steps, 80000);
  EXPECT_DOUBLE_EQ(o->learning_rate, 0.15);
  EXPECT_TRUE(o->use_annotated_bbox);
  EXPECT_EQ(o->learning_rate_decay_epochs, 2);
  EXPECT_EQ(o->cold_epochs, 1);
  EXPECT_EQ(o->warmup_epochs, 2);
  EXPECT_DOUBLE_EQ(o->cold_learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(o->weight_decay, 4e-5);
}

TEST(TrainFlags, ResNet50DefaultsFollowResnetMain) {
  gflags::FlagSaver saver;
  Result<RunOptions> o = parse("resnet50", {"--use_data=fake", "--model_dir=/tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->train_steps, 112590);
  EXPECT_EQ(o->iterations, 1251);
  EXPECT_EQ(o->num_classes, 1000);
  EXPECT_EQ(o->width, 224);
  EXPECT_EQ(o->optimizer, "momentum");
  EXPECT_EQ(o->precision, "bfloat16");
  EXPECT_DOUBLE_EQ(o->weight_decay, 1e-4);
}

TEST(TrainFlags, PythonStyleBooleansAndSeparateValues) {
  gflags::FlagSaver saver;
  Result<RunOptions> o =
      parse("inception_v3", {"--use_tpu=False", "--moving_average=True", "--use_data", "fake",
                             "--model_dir=/tmp/x", "--nouse_fast_color_distort", "--tpu=my-tpu",
                             "--gcp_project=p", "--tpu_zone=us-central1-b"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_FALSE(o->use_tpu);
  EXPECT_TRUE(o->moving_average);
  EXPECT_FALSE(o->use_fast_color_distort);
  EXPECT_EQ(o->use_data, "fake");
  EXPECT_EQ(o->tpu, "my-tpu");
  EXPECT_NE(o->flags_text.find("--use_tpu=false"), std::string::npos);
}

TEST(TrainFlags, UnknownFlagIsRefused) {
  gflags::FlagSaver saver;
  Result<RunOptions> o = parse("inception_v3", {"--use_data=fake", "--no_such_flag=1"});
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(mentions(o.status(), "unknown command-line flag '--no_such_flag=1'"));
  // gflags' own flags are not ours either.
  EXPECT_FALSE(parse("inception_v3", {"--flagfile=/dev/null"}).ok());
}

TEST(TrainFlags, BadValuesAreRefusedWithTheAllowedValues) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--mode=training"}, "(allowed: train, eval, train_and_eval, summary)"},
      {{"--use_data=synthetic"}, "(allowed: real, fake)"},
      {{"--optimizer=adam"}, "(allowed: sgd, momentum, RMS)"},
      {{"--precision=fp16"}, "(allowed: float32, bfloat16)"},
      {{"--preprocessing=resnet"}, "(allowed: inception, vgg)"},
      {{"--checkpoint_format=ckpt"},
       "bad value 'ckpt' for --checkpoint_format (allowed: tf, safetensors)"},
      {{"--train_batch_size=0"}, "--train_batch_size (allowed: 1 or more)"},
      {{"--iterations=-5"}, "--iterations (allowed: 1 or more)"},
      {{"--use_tpu=maybe"}, "bad value 'maybe' for --use_tpu: expected true or false"},
      {{"--train_steps=many"}, "bad value 'many' for --train_steps: expected an integer"},
      {{"--learning_rate=0"}, "--learning_rate (allowed: > 0)"},
      {{"--depth_multiplier=-1"}, "--depth_multiplier (allowed: > 0)"},
      {{"--device=tpu:0"}, "(allowed: cpu, cuda, cuda:N, or empty)"},
      {{"--keep_checkpoint_max=0"}, "--keep_checkpoint_max (allowed: 1 or more)"},
      {{"--weight_decay=-1e-4"}, "--weight_decay (allowed: >= 0)"},
  };
  for (const Case& c : cases) {
    gflags::FlagSaver saver;
    std::vector<std::string> args = c.args;
    args.push_back("--model_dir=/tmp/x");
    if (c.args[0].rfind("--use_data", 0) != 0) args.push_back("--use_data=fake");
    Result<RunOptions> o = parse("inception_v3", args);
    ASSERT_FALSE(o.ok()) << c.args[0];
    EXPECT_TRUE(mentions(o.status(), c.expected)) << o.status().message();
  }
}

TEST(TrainFlags, RealDataNeedsDataDirAndRunsNeedModelDir) {
  gflags::FlagSaver saver;
  EXPECT_TRUE(mentions(parse("inception_v3", {"--model_dir=/tmp/x"}).status(), "--data_dir"));
  EXPECT_TRUE(mentions(parse("inception_v3", {"--use_data=fake"}).status(), "--model_dir"));
  EXPECT_TRUE(parse("inception_v3", {"--mode=summary"}).ok());
}

TEST(TrainFlags, HelpListsEveryFlagWithItsModelDefault) {
  gflags::FlagSaver saver;
  bool help = false;
  ASSERT_TRUE(parse("inception_v4", {"--help"}, &help).ok());
  EXPECT_TRUE(help);
  ASSERT_TRUE(set_model_defaults("inception_v4").ok());
  const std::string text = flags_help(
      {"inception_v4", "trains", "inception_v4 --use_data=fake", ""}, training_flag_files());
  for (const char* flag : {"--tpu ", "--data_dir ", "--train_batch_size (int32) [256]",
                           "--learning_rate (double) [0.15]", "--cold_learning_rate",
                           "--per_host_input_for_training", "--depth_multiplier", "--num_threads",
                           "--keep_checkpoint_max", "--checkpoint_format", "--export_dir"}) {
    EXPECT_NE(text.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(text.find("--flagfile"), std::string::npos);
}

}  // namespace
}  // namespace ic
