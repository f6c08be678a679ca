// The --model_config_file parser (serve/model_config.h): TF Serving's ModelServerConfig in
// protobuf text format to checked settings, each kind of bad config an error naming the file
// and the problem, and the version policies' choices.
#include "serve/model_config.h"

#include <gtest/gtest.h>

namespace ic {
namespace {

constexpr char kSource[] = "/etc/models.config";

constexpr char kGood[] = R"pb(
  model_config_list {
    config {
      name: "flowers"
      base_path: "/models/flowers"
      model_platform: "tensorflow"
      model_version_policy { specific { versions: 1 versions: 2 } }
      version_labels { key: "stable" value: 1 }
      version_labels { key: "canary" value: 2 }
    }
    config { name: "mnist" base_path: "gs://bucket/mnist" }
    config {
      name: "every"
      base_path: "/models/every"
      model_version_policy { all {} }
    }
    config {
      name: "newest"
      base_path: "/models/newest"
      model_version_policy { latest { num_versions: 3 } }
    }
  }
)pb";

TEST(ModelConfig, AGoodConfigBecomesItsSettings) {
  const Result<ModelServerSettings> settings = parse_model_config_text(kGood, kSource);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  ASSERT_EQ(settings->models.size(), 4u);
  const ModelConfigEntry& flowers = settings->models[0];
  EXPECT_EQ(flowers.name, "flowers");
  EXPECT_EQ(flowers.base_path, "/models/flowers");
  EXPECT_EQ(flowers.policy.kind, VersionPolicy::Kind::specific);
  EXPECT_EQ(flowers.policy.versions, (std::set<int64_t>{1, 2}));
  EXPECT_EQ(flowers.labels, (std::map<std::string, int64_t>{{"stable", 1}, {"canary", 2}}));
  const ModelConfigEntry& mnist = settings->models[1];
  EXPECT_EQ(mnist.base_path, "gs://bucket/mnist");
  EXPECT_EQ(mnist.policy.kind, VersionPolicy::Kind::latest);
  EXPECT_EQ(mnist.policy.num_versions, 1);
  EXPECT_TRUE(mnist.labels.empty());
  EXPECT_EQ(settings->models[2].policy.kind, VersionPolicy::Kind::all);
  EXPECT_EQ(settings->models[3].policy.kind, VersionPolicy::Kind::latest);
  EXPECT_EQ(settings->models[3].policy.num_versions, 3);
}

TEST(ModelConfig, EachBadConfigIsAnErrorNamingTheFileAndTheProblem) {
  struct Case {
    const char* what;
    const char* text;
    std::vector<const char*> expected;  // each in the message
  };
  const std::vector<Case> cases = {
      {"not text format", "model_config_list { config { name: ", {"line", "protobuf text"}},
      {"an unknown field", "model_config_list { config { nme: \"a\" } }", {"nme"}},
      {"no model_config_list", "", {"no model_config_list"}},
      {"no models", "model_config_list {}", {"lists no models"}},
      {"a duplicate name",
       R"(model_config_list { config { name: "a" base_path: "/a" }
                              config { name: "a" base_path: "/b" } })",
       {"'a'", "twice"}},
      {"an empty name", R"(model_config_list { config { base_path: "/a" } })", {"empty name"}},
      {"an empty base_path",
       R"(model_config_list { config { name: "a" } })",
       {"'a'", "empty base_path"}},
      {"another platform",
       R"(model_config_list { config { name: "a" base_path: "/a" model_platform: "pytorch" } })",
       {"'a'", "pytorch"}},
      {"a label at a version the policy does not serve",
       R"(model_config_list { config { name: "a" base_path: "/a"
            model_version_policy { specific { versions: 1 } }
            version_labels { key: "canary" value: 2 } } })",
       {"'a'", "canary", "version 2", "does not serve"}},
      {"specific without versions",
       R"(model_config_list { config { name: "a" base_path: "/a"
            model_version_policy { specific {} } } })",
       {"'a'", "no versions"}},
  };
  for (const Case& c : cases) {
    const Result<ModelServerSettings> settings = parse_model_config_text(c.text, kSource);
    ASSERT_FALSE(settings.ok()) << c.what;
    EXPECT_EQ(settings.status().code(), StatusCode::invalid_argument) << c.what;
    const std::string message = settings.status().message();
    EXPECT_NE(message.find(kSource), std::string::npos) << c.what << ": " << message;
    for (const char* part : c.expected)
      EXPECT_NE(message.find(part), std::string::npos) << c.what << ": " << message;
  }
}

TEST(ModelConfig, AMissingFileIsAnErrorNamingIt) {
  const Result<ModelServerSettings> settings = read_model_config_file("/no/such/models.config");
  ASSERT_FALSE(settings.ok());
  EXPECT_NE(settings.status().message().find("/no/such/models.config"), std::string::npos)
      << settings.status().message();
}

TEST(ModelConfig, PoliciesChooseFromTheAvailableVersions) {
  const std::set<int64_t> available = {1, 2, 5, 9};
  VersionPolicy latest;
  EXPECT_EQ(select_versions(latest, available), (std::set<int64_t>{9}));
  latest.num_versions = 2;
  EXPECT_EQ(select_versions(latest, available), (std::set<int64_t>{5, 9}));
  latest.num_versions = 10;
  EXPECT_EQ(select_versions(latest, available), available);
  VersionPolicy all;
  all.kind = VersionPolicy::Kind::all;
  EXPECT_EQ(select_versions(all, available), available);
  VersionPolicy specific;
  specific.kind = VersionPolicy::Kind::specific;
  specific.versions = {2, 3, 9};
  EXPECT_EQ(select_versions(specific, available), (std::set<int64_t>{2, 9}));
  EXPECT_TRUE(select_versions(latest, {}).empty());
}

}  // namespace
}  // namespace ic
