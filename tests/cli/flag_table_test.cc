// cli/'s flag table over a small options struct of every flag type: each type parses in every
// spelling the programs accept, ranges and choices are refused with the allowed values, a slip
// of the keyboard gets "did you mean", --help lists each flag with its default, positional
// arguments are collected, and flags_as_text parses back to the same options.
#include "cli/flag_table.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ic {
namespace {

enum class Colour { red, green, blue };

}  // namespace

template <>
struct Choices<Colour> {
  static constexpr std::array<ChoiceName<Colour>, 3> names = {
      {{Colour::red, "red"}, {Colour::green, "green"}, {Colour::blue, "blue"}}};
};

namespace {

struct ToyOptions {
  std::string name = "toy";
  bool verbose = false;
  bool colourful = true;
  int32_t count = 3;
  int64_t big = 1;
  double ratio = 0.5;
  double scale = 1;
  Colour colour = Colour::green;
  DeviceChoice device{DeviceChoice::Kind::cpu, std::nullopt};
};

const FlagTable<ToyOptions>& toy_flags() {
  using namespace flag_entries;
  using O = ToyOptions;
  static const FlagTable<O> table({
      text("name", &O::name, "What the toy is called"),
      boolean("verbose", &O::verbose, "Say more"),
      boolean("colourful", &O::colourful, "Paint it"),
      number("count", &O::count, at_least(1), "How many toys"),
      number("big", &O::big, from_to(-5, 9000000000), "A 64-bit number"),
      number("ratio", &O::ratio, above_up_to(0, 1), "A fraction"),
      number("scale", &O::scale, any_value(), "Any number at all"),
      choice("colour", &O::colour, "The toy's colour"),
      device(&O::device, EmptyDevice::refused, "Where the toy runs"),
  });
  return table;
}

struct Parsed {
  Status status;
  ToyOptions options;
  WalkedCommandLine walked;
};

// Parses `args` over ToyOptions' defaults, then validates.
Parsed parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"toy"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  Parsed p;
  Result<WalkedCommandLine> walked =
      toy_flags().parse(static_cast<int>(argv.size()), argv.data(), p.options);
  if (!walked.ok()) {
    p.status = walked.status();
    return p;
  }
  p.walked = std::move(*walked);
  p.status = toy_flags().validate(p.options);
  return p;
}

// The message of parsing `args`, which must fail.
std::string refusal(const std::vector<std::string>& args) {
  const Parsed p = parse(args);
  EXPECT_FALSE(p.status.ok()) << args.front();
  return p.status.message();
}

TEST(FlagTable, EveryTypeParsesIntoItsMember) {
  const Parsed p =
      parse({"--name=robot", "--verbose", "--nocolourful", "--count=7", "--big=8000000000",
             "--ratio=0.25", "--scale=-1e-3", "--colour=blue", "--device=cuda:3"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.options.name, "robot");
  EXPECT_TRUE(p.options.verbose);
  EXPECT_FALSE(p.options.colourful);
  EXPECT_EQ(p.options.count, 7);
  EXPECT_EQ(p.options.big, 8000000000);
  EXPECT_DOUBLE_EQ(p.options.ratio, 0.25);
  EXPECT_DOUBLE_EQ(p.options.scale, -1e-3);
  EXPECT_EQ(p.options.colour, Colour::blue);
  EXPECT_EQ(p.options.device, (DeviceChoice{DeviceChoice::Kind::cuda, 3}));
  // Nothing given: the struct's initializers.
  const Parsed none = parse({});
  ASSERT_TRUE(none.status.ok());
  EXPECT_EQ(none.options.name, "toy");
  EXPECT_EQ(none.options.count, 3);
}

TEST(FlagTable, EverySpellingOfAValue) {
  const Parsed p = parse({"--name", "a b", "-count=4", "-ratio", "0.75", "--big=0x10",
                          "--verbose=True", "--colourful=no", "--name=", "--scale=inf"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.options.name, "");  // the last one wins; empty text is a value
  EXPECT_EQ(p.options.count, 4);
  EXPECT_DOUBLE_EQ(p.options.ratio, 0.75);
  EXPECT_EQ(p.options.big, 16);
  EXPECT_TRUE(p.options.verbose);
  EXPECT_FALSE(p.options.colourful);
  EXPECT_TRUE(std::isinf(p.options.scale));
  for (const char* yes : {"true", "TRUE", "t", "yes", "Y", "1"}) {
    EXPECT_TRUE(parse({std::string("--verbose=") + yes}).options.verbose) << yes;
  }
  for (const char* no : {"false", "False", "f", "NO", "n", "0"}) {
    EXPECT_FALSE(parse({"--verbose", std::string("--verbose=") + no}).options.verbose) << no;
  }
  // A boolean never takes the next word: it stays a positional argument.
  const Parsed separate = parse({"--verbose", "false"});
  EXPECT_TRUE(separate.options.verbose);
  EXPECT_EQ(separate.walked.positional, std::vector<std::string>{"false"});
}

TEST(FlagTable, BadValuesAreRefusedWithWhatIsAllowed) {
  EXPECT_EQ(refusal({"--count=many"}),
            "bad value 'many' for --count: expected an integer (32-bit)");
  EXPECT_EQ(refusal({"--count=3000000000"}),
            "bad value '3000000000' for --count: expected an integer (32-bit)");
  EXPECT_EQ(refusal({"--count=12abc"}),
            "bad value '12abc' for --count: expected an integer (32-bit)");
  EXPECT_EQ(refusal({"--count= 5"}), "bad value ' 5' for --count: expected an integer (32-bit)");
  EXPECT_EQ(refusal({"--big=1.5"}), "bad value '1.5' for --big: expected an integer");
  EXPECT_EQ(refusal({"--ratio=fast"}), "bad value 'fast' for --ratio: expected a number");
  EXPECT_EQ(refusal({"--verbose=maybe"}),
            "bad value 'maybe' for --verbose: expected true or false");
  EXPECT_EQ(refusal({"--colour=purple"}),
            "bad value 'purple' for --colour (allowed: red, green, blue)");
  EXPECT_EQ(refusal({"--colour=Red"}), "bad value 'Red' for --colour (allowed: red, green, blue)");
  EXPECT_EQ(refusal({"--device=gpu"}), "bad value 'gpu' for --device (allowed: cpu, cuda, cuda:N)");
  EXPECT_EQ(refusal({"--device="}), "bad value '' for --device (allowed: cpu, cuda, cuda:N)");
  EXPECT_EQ(refusal({"--count"}), "flag --count needs a value (--count=VALUE)");
}

TEST(FlagTable, RangesAreCheckedByValidate) {
  EXPECT_EQ(refusal({"--count=0"}), "bad value 0 for --count (allowed: 1 or more)");
  EXPECT_EQ(refusal({"--big=-6"}), "bad value -6 for --big (allowed: -5 to 9000000000)");
  EXPECT_EQ(refusal({"--big=9000000001"}),
            "bad value 9000000001 for --big (allowed: -5 to 9000000000)");
  EXPECT_EQ(refusal({"--ratio=0"}), "bad value 0 for --ratio (allowed: > 0 and <= 1)");
  EXPECT_EQ(refusal({"--ratio=1.5"}), "bad value 1.5 for --ratio (allowed: > 0 and <= 1)");
  EXPECT_EQ(refusal({"--ratio=nan"}), "bad value nan for --ratio (allowed: > 0 and <= 1)");
  EXPECT_TRUE(parse({"--ratio=1", "--big=-5", "--count=1", "--scale=nan"}).status.ok());
  // Parsing alone does not check ranges: a program may change a value before validating.
  ToyOptions options;
  const char* argv[] = {"toy", "--count=0"};
  ASSERT_TRUE(toy_flags().parse(2, argv, options).ok());
  EXPECT_EQ(options.count, 0);
  EXPECT_FALSE(toy_flags().validate(options).ok());
}

TEST(FlagTable, RangesSayWhatTheyAllow) {
  using namespace flag_entries;
  EXPECT_EQ(any_value().text(true), "");
  EXPECT_EQ(at_least(1).text(true), "1 or more");
  EXPECT_EQ(at_least(0).text(false), ">= 0");
  EXPECT_EQ(above(0).text(false), "> 0");
  EXPECT_EQ(above_up_to(0, 1).text(false), "> 0 and <= 1");
  EXPECT_EQ(from_to(0, 65535).text(true), "0 to 65535");
  EXPECT_TRUE(above(0).contains(1e-300));
  EXPECT_FALSE(above(0).contains(0));
  EXPECT_TRUE(at_least(0).contains(0));
  EXPECT_FALSE(at_least(0).contains(std::nan("")));
  EXPECT_TRUE(any_value().contains(std::nan("")));
}

TEST(FlagTable, UnknownFlagsAreRefusedWithTheNearestName) {
  EXPECT_EQ(refusal({"--cuont=3"}),
            "unknown command-line flag '--cuont=3' (did you mean --count?)");
  EXPECT_EQ(refusal({"--colur", "red"}),
            "unknown command-line flag '--colur' (did you mean --colour?)");
  EXPECT_EQ(refusal({"--no_such_flag=1"}), "unknown command-line flag '--no_such_flag=1'");
  // --noX only for booleans; no flag library's own flags.
  EXPECT_EQ(refusal({"--nocount"}),
            "unknown command-line flag '--nocount' (did you mean --count?)");
  EXPECT_EQ(refusal({"--flagfile=/dev/null"}), "unknown command-line flag '--flagfile=/dev/null'");
  EXPECT_EQ(nearest_flag_name("train_step", {"train_steps", "eval_steps"}), "train_steps");
  EXPECT_EQ(nearest_flag_name("colour", {"name", "count"}), "");
}

TEST(FlagTable, PositionalArgumentsAndTheEndOfFlags) {
  const Parsed p = parse({"a.jpg", "--count=2", "b.png", "--", "--verbose", "-"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(p.options.count, 2);
  EXPECT_FALSE(p.options.verbose);
  EXPECT_EQ(p.walked.positional, (std::vector<std::string>{"a.jpg", "b.png", "--verbose", "-"}));
  EXPECT_FALSE(p.walked.help);
  EXPECT_EQ(expect_no_arguments(p.walked).message(),
            "unexpected argument 'a.jpg' (every setting is a --flag; --help lists them)");
  EXPECT_TRUE(expect_no_arguments(parse({"--count=2"}).walked).ok());
}

TEST(FlagTable, HelpWinsAndListsEveryFlagByNameWithItsDefault) {
  for (const char* asked : {"--help", "-h", "-help", "--helpfull"}) {
    const Parsed p = parse({"--no_such_flag", "--count=0", asked});
    EXPECT_TRUE(p.walked.help) << asked;
  }
  EXPECT_FALSE(parse({"--", "--help"}).walked.help);  // after "--": an argument
  ProgramHelp program{"toy", "plays with toys, as a test of the flag table",
                      "toy --count=2 --colour=red BOX", "the boxes to fill", ""};
  ToyOptions defaults;
  defaults.count = 9;  // the brackets show the defaults given, not the initializers
  const std::string help = toy_flags().help(program, defaults);
  EXPECT_EQ(help.rfind("toy: plays with toys, as a test of the flag table\n\nExample:\n  toy "
                       "--count=2 --colour=red BOX\n\nUsage: toy [--flag=value ...] "
                       "ARGUMENTS...\nArguments: the boxes to fill\n\nFlags (default in "
                       "brackets):\n",
                       0),
            0u)
      << help;
  for (const char* entry :
       {"  --count (int32) [9]\n      How many toys\n      allowed: 1 or more\n",
        "  --colour (choice) [green]\n      The toy's colour\n      allowed: red, green, blue\n",
        "  --verbose (bool) [false]\n      Say more\n", "  --big (int64) [1]\n",
        "  --ratio (double) [0.5]\n      A fraction\n      allowed: > 0 and <= 1\n",
        "  --name (string) [toy]\n      What the toy is called\n",
        "  --device (string) [cpu]\n      Where the toy runs\n      allowed: cpu, cuda, "
        "cuda:N\n"}) {
    EXPECT_NE(help.find(entry), std::string::npos) << entry << "\n" << help;
  }
  EXPECT_EQ(help.find("allowed: \n"), std::string::npos);  // no empty "allowed" line
  // By name: big, colour, colourful, count, device, name, ratio, scale, verbose.
  EXPECT_LT(help.find("  --big ("), help.find("  --colour ("));
  EXPECT_LT(help.find("  --colourful ("), help.find("  --count ("));
  EXPECT_LT(help.find("  --scale ("), help.find("  --verbose ("));
  // A program whose defaults depend on something else says whose they are.
  program.defaults_of = "toy_xl";
  program.arguments = "";
  const std::string xl = toy_flags().help(program, defaults);
  EXPECT_NE(xl.find("\nUsage: toy [--flag=value ...]\n\nFlags (toy_xl's default in brackets):\n"),
            std::string::npos)
      << xl;
}

TEST(FlagTable, LongHelpIsWrapped) {
  std::string words;
  for (int i = 0; i < 40; ++i) words += "word" + std::to_string(i) + " ";
  const std::string help =
      help_text(ProgramHelp{"w", "wordy", "w --on", "", ""},
                {FlagHelp{"on", FlagType::boolean, "false", words.c_str(), "one, two"}});
  std::istringstream lines(help);
  int help_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 96u) << line;
    if (line.rfind("      word", 0) == 0) ++help_lines;
  }
  EXPECT_GE(help_lines, 3) << help;
  EXPECT_NE(help.find("  --on (bool) [false]\n      word0 word1 "), std::string::npos) << help;
  EXPECT_NE(help.find("word39\n      allowed: one, two\n"), std::string::npos) << help;
}

TEST(FlagTable, FlagsAsTextParsesBackToTheSameOptions) {
  const Parsed p = parse({"--name=robot", "--verbose", "--count=7", "--big=-5", "--ratio=0.1",
                          "--scale=4e-05", "--colour=red", "--device=cuda"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  const std::string text = flags_as_text(toy_flags(), p.options);
  EXPECT_EQ(text,
            "--big=-5 --colour=red --colourful=true --count=7 --device=cuda --name=robot "
            "--ratio=0.1 --scale=4e-05 --verbose=true");
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  const Parsed again = parse(words);
  ASSERT_TRUE(again.status.ok()) << again.status.message();
  EXPECT_EQ(flags_as_text(toy_flags(), again.options), text);
  EXPECT_TRUE(again.walked.positional.empty());
}

TEST(FlagTable, TheTableKnowsItsFlags) {
  const FlagTable<ToyOptions>& table = toy_flags();
  ASSERT_EQ(table.flags().size(), 9u);
  EXPECT_STREQ(table.flags().front().name, "name");  // declaration order
  EXPECT_STREQ(table.by_name().front()->name, "big");
  ASSERT_NE(table.find("ratio"), nullptr);
  EXPECT_EQ(table.find("ratio")->type, FlagType::float64);
  EXPECT_EQ(table.find("ratio")->range, "> 0 and <= 1");
  EXPECT_EQ(table.find("colour")->allowed, (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(table.find("nope"), nullptr);
  EXPECT_STREQ(flag_type_name(table.find("count")->type), "int32");
  EXPECT_STREQ(flag_type_name(table.find("big")->type), "int64");
  EXPECT_STREQ(flag_type_name(table.find("verbose")->type), "bool");
  EXPECT_STREQ(flag_type_name(table.find("name")->type), "string");
  EXPECT_STREQ(flag_type_name(table.find("colour")->type), "choice");
}

TEST(Choices, NamesBothWays) {
  EXPECT_STREQ(choice_name(Colour::blue), "blue");
  EXPECT_EQ(parse_choice<Colour>("red"), Colour::red);
  EXPECT_EQ(parse_choice<Colour>("RED"), std::nullopt);
  EXPECT_EQ(choice_list<Colour>(), "red, green, blue");
}

}  // namespace
}  // namespace ic
