// The training programs' command line, from the flag table: every flag parses its default and
// another value into RunOptions; reference defaults per model (in RunOptions and in --help);
// True/False spellings; refusal of unknown flags (with the nearest name) and of bad values (with
// the allowed values); the checkpoint metadata's flag text parses back to the same options.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "train/flag_table.h"
#include "train/train_flags.h"

namespace ic {
namespace {

Result<RunOptions> parse(const std::string& model, const std::vector<std::string>& args,
                         bool* help = nullptr) {
  std::vector<const char*> argv = {"prog"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  bool ignored = false;
  return parse_run_options(model, static_cast<int>(argv.size()), argv.data(),
                           help ? help : &ignored);
}

bool mentions(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// A value of `flag` other than its default in `defaults`, and valid on its own.
std::string other_value(const Flag& flag, const RunOptions& defaults) {
  const std::string current = flag.get(defaults);
  switch (flag.type) {
    case FlagType::boolean: return current == "true" ? "false" : "true";
    case FlagType::choice:
      for (const std::string& a : flag.allowed) {
        if (a != current) return a;
      }
      return "";
    case FlagType::int32:
    case FlagType::int64: return std::to_string(std::stoll(current) + 1);
    case FlagType::float64: {
      const double v = std::stod(current);
      std::ostringstream out;
      out << (v != 0 ? v / 2 : 0.5);
      return out.str();
    }
    case FlagType::string: return std::string(flag.name) == "device" ? "cuda:1" : "/some/value";
  }
  return "";
}

// The flags whose values differ between `a` and `b`, as "name: a -> b".
std::vector<std::string> differences(const RunOptions& a, const RunOptions& b) {
  std::vector<std::string> out;
  for (const Flag& f : trainer_flags()) {
    if (f.get(a) != f.get(b))
      out.push_back(std::string(f.name) + ": " + f.get(a) + " -> " + f.get(b));
  }
  return out;
}

// With an export directory, so that --export_best=<metric> is valid on its own too.
const std::vector<std::string> kDirs = {"--data_dir=/d", "--model_dir=/m", "--export_dir=/e"};

TEST(FlagTable, NamesAreUniqueAndEveryFlagHasHelp) {
  std::set<std::string> names;
  for (const Flag& f : trainer_flags()) {
    EXPECT_TRUE(names.insert(f.name).second) << "--" << f.name << " declared twice";
    EXPECT_GT(std::string(f.help).size(), 10u) << f.name;
    EXPECT_EQ(f.type == FlagType::choice, !f.allowed.empty()) << f.name;
  }
  EXPECT_GE(names.size(), 60u);
}

TEST(FlagTable, EveryFlagParsesItsDefaultAndAnotherValueIntoItsOwnMember) {
  for (const ModelSpec* spec : model_registry()) {
    Result<RunOptions> base = parse(spec->name, kDirs);
    ASSERT_TRUE(base.ok()) << spec->name << ": " << base.status().message();
    for (const Flag& f : trainer_flags()) {
      SCOPED_TRACE(std::string(spec->name) + " --" + f.name);
      // The default, spelled as the table spells it, parses to itself.
      std::vector<std::string> args = kDirs;
      args.push_back("--" + std::string(f.name) + "=" + f.get(*base));
      Result<RunOptions> same = parse(spec->name, args);
      ASSERT_TRUE(same.ok()) << same.status().message();
      EXPECT_EQ(differences(*base, *same), std::vector<std::string>{});
      // Another value lands in this flag's member and in no other.
      const std::string value = other_value(f, *base);
      ASSERT_NE(value, f.get(*base));
      args.back() = "--" + std::string(f.name) + "=" + value;
      Result<RunOptions> changed = parse(spec->name, args);
      ASSERT_TRUE(changed.ok()) << changed.status().message();
      const std::vector<std::string> only_this = {std::string(f.name) + ": " + f.get(*base) +
                                                  " -> " + value};
      EXPECT_EQ(differences(*base, *changed), only_this);
      // The other spellings: --name value, and --name / --noname for booleans.
      args = kDirs;
      if (f.type == FlagType::boolean) {
        args.push_back((value == "true" ? "--" : "--no") + std::string(f.name));
      } else {
        args.push_back("--" + std::string(f.name));
        args.push_back(value);
      }
      Result<RunOptions> spelled = parse(spec->name, args);
      ASSERT_TRUE(spelled.ok()) << spelled.status().message();
      EXPECT_EQ(differences(*base, *spelled), only_this);
    }
  }
}

TEST(FlagTable, TheCheckpointsFlagTextParsesBackToTheSameOptions) {
  Result<RunOptions> o =
      parse("resnet50", {"--use_data=fake", "--model_dir=/tmp/x", "--optimizer=sgd",
                         "--learning_rate=0.3", "--device=cuda:2", "--nomoving_average"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  const std::string text = flags_as_text(*o);
  std::vector<std::string> args;
  std::istringstream words(text);
  for (std::string word; words >> word;) args.push_back(word);
  EXPECT_EQ(args.size(), trainer_flags().size());
  Result<RunOptions> again = parse("resnet50", args);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(flags_as_text(*again), text);
  EXPECT_NE(text.find("--learning_rate=0.3 "), std::string::npos) << text;
  EXPECT_NE(text.find("--optimizer=sgd "), std::string::npos) << text;
}

TEST(TrainFlags, InceptionV3DefaultsAreTheReferenceFlags) {
  Result<RunOptions> o = parse("inception_v3", {"--use_data=fake", "--model_dir=/tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->train_batch_size, 1024);
  EXPECT_EQ(o->train_steps, 213000);
  EXPECT_DOUBLE_EQ(o->learning_rate, 0.165);
  EXPECT_EQ(o->optimizer, find_optimizer("RMS"));
  EXPECT_EQ(o->mode, Mode::train_and_eval);
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
  EXPECT_EQ(o->checkpoint_format, CheckpointFormat::tf);  // TensorFlow's own, as the reference
  EXPECT_EQ(o->precision, Precision::float32);
  EXPECT_EQ(o->device, DeviceChoice{});
  EXPECT_DOUBLE_EQ(o->weight_decay, 4e-5);
  EXPECT_DOUBLE_EQ(o->label_smoothing, 0.1);
  EXPECT_EQ(o->stop_at_step, 0);
}

TEST(TrainFlags, InceptionV4DefaultsFollowInceptionV4Py) {
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
  Result<RunOptions> o = parse("resnet50", {"--use_data=fake", "--model_dir=/tmp/x"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->train_steps, 112590);
  EXPECT_EQ(o->iterations, 1251);
  EXPECT_EQ(o->num_classes, 1000);
  EXPECT_EQ(o->width, 224);
  EXPECT_EQ(o->optimizer, find_optimizer("momentum"));
  EXPECT_EQ(o->precision, Precision::bfloat16);
  EXPECT_FALSE(o->moving_average);
  EXPECT_DOUBLE_EQ(o->weight_decay, 1e-4);
  EXPECT_DOUBLE_EQ(o->label_smoothing, 0);
}

TEST(TrainFlags, PythonStyleBooleansAndSeparateValues) {
  Result<RunOptions> o = parse("inception_v3", {
                                                   "--use_tpu=False",
                                                   "--moving_average=True",
                                                   "--use_data",
                                                   "fake",
                                                   "--model_dir=/tmp/x",
                                                   "--nouse_fast_color_distort",
                                                   "--tpu=my-tpu",
                                                   "--gcp_project=p",
                                                   "--tpu_zone=us-central1-b",
                                                   "-seed=7",
                                                   "--use_annotated_bbox=yes",
                                                   "--",
                                               });
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_FALSE(o->use_tpu);
  EXPECT_TRUE(o->moving_average);
  EXPECT_FALSE(o->use_fast_color_distort);
  EXPECT_TRUE(o->use_annotated_bbox);
  EXPECT_EQ(o->use_data, UseData::fake);
  EXPECT_EQ(o->tpu, "my-tpu");
  EXPECT_EQ(o->seed, 7);
  EXPECT_NE(flags_as_text(*o).find("--use_tpu=false"), std::string::npos);
}

TEST(TrainFlags, DeviceIsParsedOnce) {
  const std::vector<std::pair<std::string, DeviceChoice>> cases = {
      {"", {}},
      {"cpu", {DeviceChoice::Kind::cpu, std::nullopt}},
      {"cuda", {DeviceChoice::Kind::cuda, std::nullopt}},
      {"cuda:3", {DeviceChoice::Kind::cuda, 3}},
  };
  for (const auto& [text, expected] : cases) {
    Result<RunOptions> o = parse("inception_v3", {"--mode=summary", "--device=" + text});
    ASSERT_TRUE(o.ok()) << text << ": " << o.status().message();
    EXPECT_EQ(o->device, expected) << text;
    EXPECT_EQ(device_name(o->device), text);
  }
}

TEST(TrainFlags, UnknownFlagIsRefusedWithTheNearestName) {
  Result<RunOptions> o = parse("inception_v3", {"--use_data=fake", "--no_such_flag=1"});
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(mentions(o.status(), "unknown command-line flag '--no_such_flag=1'"));
  EXPECT_FALSE(mentions(o.status(), "did you mean")) << o.status().message();
  const Status typo = parse("inception_v3", {"--trian_steps=5"}).status();
  EXPECT_TRUE(mentions(typo,
                       "unknown command-line flag '--trian_steps=5' (did you mean "
                       "--train_steps?)"))
      << typo.message();
  // No flag library's own flags, and --noX only for booleans.
  EXPECT_FALSE(parse("inception_v3", {"--flagfile=/dev/null"}).ok());
  EXPECT_TRUE(mentions(parse("inception_v3", {"--noiterations"}).status(), "'--noiterations'"));
  EXPECT_TRUE(mentions(parse("inception_v3", {"--mode=summary", "stray"}).status(),
                       "unexpected argument 'stray'"));
  EXPECT_TRUE(mentions(parse("inception_v3", {"--mode=summary", "--", "--seed=1"}).status(),
                       "unexpected argument '--seed=1'"));
  EXPECT_TRUE(mentions(parse("inception_v3", {"--mode=summary", "--seed"}).status(),
                       "flag --seed needs a value"));
}

TEST(TrainFlags, BadValuesAreRefusedWithTheAllowedValues) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--mode=training"},
       "bad value 'training' for --mode (allowed: train, eval, "
       "train_and_eval, summary)"},
      {{"--use_data=synthetic"}, "for --use_data (allowed: real, fake)"},
      {{"--optimizer=adam"}, "for --optimizer (allowed: sgd, momentum, RMS, adamw, lars)"},
      {{"--optimizer=rms"}, "for --optimizer (allowed: sgd, momentum, RMS, adamw, lars)"},
      {{"--precision=fp16"}, "for --precision (allowed: float32, bfloat16)"},
      {{"--preprocessing=resnet"}, "for --preprocessing (allowed: inception, vgg)"},
      {{"--checkpoint_format=ckpt"},
       "bad value 'ckpt' for --checkpoint_format (allowed: tf, safetensors)"},
      {{"--train_batch_size=0"}, "bad value 0 for --train_batch_size (allowed: 1 or more)"},
      {{"--iterations=-5"}, "--iterations (allowed: 1 or more)"},
      {{"--use_tpu=maybe"}, "bad value 'maybe' for --use_tpu: expected true or false"},
      {{"--train_steps=many"}, "bad value 'many' for --train_steps: expected an integer"},
      {{"--train_steps=3000000000"}, "for --train_steps: expected an integer (32-bit)"},
      {{"--train_steps=12abc"}, "for --train_steps: expected an integer"},
      {{"--learning_rate=fast"}, "bad value 'fast' for --learning_rate: expected a number"},
      {{"--learning_rate=0"}, "--learning_rate (allowed: > 0)"},
      {{"--learning_rate=nan"}, "--learning_rate (allowed: > 0)"},
      {{"--learning_rate_decay=1.5"}, "--learning_rate_decay (allowed: > 0 and <= 1)"},
      {{"--max_bad_input_fraction=2"}, "--max_bad_input_fraction (allowed: 0 to 1)"},
      {{"--depth_multiplier=-1"}, "--depth_multiplier (allowed: > 0)"},
      {{"--device=tpu:0"}, "(allowed: cpu, cuda, cuda:N, or empty)"},
      {{"--device=cuda:"}, "(allowed: cpu, cuda, cuda:N, or empty)"},
      {{"--keep_checkpoint_max=0"}, "--keep_checkpoint_max (allowed: 1 or more)"},
      {{"--weight_decay=-1e-4"}, "--weight_decay (allowed: >= 0)"},
      {{"--cr_distortion_range=-1"}, "--cr_distortion_range (allowed: >= 0)"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--model_dir=/tmp/x");
    if (c.args[0].rfind("--use_data", 0) != 0) args.push_back("--use_data=fake");
    Result<RunOptions> o = parse("inception_v3", args);
    ASSERT_FALSE(o.ok()) << c.args[0];
    EXPECT_TRUE(mentions(o.status(), c.expected)) << o.status().message();
  }
}

TEST(TrainFlags, RealDataNeedsDataDirAndRunsNeedModelDir) {
  EXPECT_TRUE(mentions(parse("inception_v3", {"--model_dir=/tmp/x"}).status(), "--data_dir"));
  EXPECT_TRUE(mentions(parse("inception_v3", {"--use_data=fake"}).status(),
                       "--model_dir is required with --mode=train_and_eval"));
  EXPECT_TRUE(parse("inception_v3", {"--mode=summary"}).ok());
}

TEST(TrainFlags, HelpListsEveryFlagWithItsModelsDefault) {
  bool help = false;
  // --help wins over anything else on the line.
  ASSERT_TRUE(parse("inception_v4", {"--no_such_flag", "--help"}, &help).ok());
  EXPECT_TRUE(help);
  Result<std::string> v4 = trainer_help("inception_v4");
  ASSERT_TRUE(v4.ok()) << v4.status().message();
  EXPECT_EQ(v4->rfind("inception_v4: ", 0), 0u) << *v4;
  EXPECT_NE(v4->find("\nExample:\n  inception_v4 --"), std::string::npos) << *v4;
  for (const Flag& f : trainer_flags()) {
    EXPECT_NE(v4->find("  --" + std::string(f.name) + " ("), std::string::npos) << f.name;
  }
  for (const char* line :
       {"--train_batch_size (int32) [256]", "--learning_rate (double) [0.15]",
        "--use_annotated_bbox (bool) [true]",
        "--mode (choice) [train_and_eval]\n      What the run does\n      allowed: train, eval, "
        "train_and_eval, summary\n",
        "--iterations (int32) [100]\n      Training steps per loop; logs, summaries, checkpoints "
        "between loops\n      allowed: 1 or more\n"}) {
    EXPECT_NE(v4->find(line), std::string::npos) << line << "\n" << *v4;
  }
  Result<std::string> resnet = trainer_help("resnet50");
  ASSERT_TRUE(resnet.ok());
  for (const char* line : {"--width (int32) [224]", "--optimizer (choice) [momentum]",
                           "--precision (choice) [bfloat16]", "--iterations (int32) [1251]",
                           "--weight_decay (double) [0.0001]"}) {
    EXPECT_NE(resnet->find(line), std::string::npos) << line;
  }
  Result<std::string> v3 = trainer_help("inception_v3");
  ASSERT_TRUE(v3.ok());
  EXPECT_NE(v3->find("--train_batch_size (int32) [1024]"), std::string::npos);
  EXPECT_NE(v3->find("--optimizer (choice) [RMS]"), std::string::npos);
  EXPECT_EQ(v3->find("--flagfile"), std::string::npos);
  EXPECT_FALSE(trainer_help("inception_v9").ok());
}

TEST(TrainFlags, EveryModelsRegistryDefaultsAreValidFlags) {
  for (const ModelSpec* spec : model_registry()) {
    Result<RunOptions> o = default_run_options(spec->name);
    ASSERT_TRUE(o.ok()) << spec->name << ": " << o.status().message();
    o->use_data = UseData::fake;
    o->model_dir = "/tmp/x";
    EXPECT_TRUE(validate_run_options(*o).ok()) << spec->name;
    EXPECT_EQ(o->model, spec->name);
  }
}

}  // namespace
}  // namespace ic
