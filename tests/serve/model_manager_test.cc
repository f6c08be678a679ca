// The model manager's version states without a model (serve/model_manager.h): a loader that
// holds its first load shows the versions waiting as START and the one loading as LOADING;
// loads that fail end as END with their error, and are not tried again from the same files.
// A version replaced while a request still holds its model is UNLOADING until that request
// lets go, then END.
#include "serve/model_manager.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "serve/served_model.h"
#include "tools/tool_runner.h"

namespace ic {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string states(const ModelManager& manager, const std::string& name) {
  Result<std::vector<VersionStatus>> versions = manager.status(name, std::nullopt);
  if (!versions.ok()) return versions.status().message();
  std::string text;
  for (const VersionStatus& v : *versions) {
    text +=
        (text.empty() ? "" : " ") + std::to_string(v.version) + ":" + version_state_name(v.state);
  }
  return text;
}

TEST(ModelManager, VersionsAreStartThenLoadingThenEndWithTheirError) {
  TempDir dir;
  for (const char* version : {"1", "2"}) {
    fs::create_directories(dir.sub("m") + "/" + version);
    std::ofstream(dir.sub("m") + "/" + version + "/model.safetensors") << "not safetensors";
  }
  std::mutex mutex;
  std::condition_variable wake;
  bool release = false;
  int loads = 0;
  ModelManager manager(
      [&](const std::string&, const std::string&,
          const std::string& path) -> Result<std::shared_ptr<ServedModel>> {
        std::unique_lock lock(mutex);
        ++loads;
        wake.notify_all();
        wake.wait(lock, [&] { return release; });
        return data_loss(path, ": not safetensors");
      },
      nullptr);
  ModelServerSettings settings;
  ModelConfigEntry entry;
  entry.name = "m";
  entry.base_path = dir.sub("m");
  entry.policy.kind = VersionPolicy::Kind::all;
  settings.models.push_back(entry);
  std::thread applying([&] { EXPECT_TRUE(manager.apply(settings, "test").ok()); });
  {
    std::unique_lock lock(mutex);
    wake.wait(lock, [&] { return loads == 1; });
  }
  // The newest loads first; the other waits its turn.
  EXPECT_EQ(states(manager, "m"), "2:LOADING 1:START");
  const Result<std::shared_ptr<ServedModel>> early = manager.resolve({"m", std::nullopt, {}});
  EXPECT_EQ(early.status().code(), StatusCode::unavailable) << early.status().message();
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  wake.notify_all();
  applying.join();
  EXPECT_EQ(states(manager, "m"), "2:END 1:END");
  const Result<std::vector<VersionStatus>> ended = manager.status("m", 1);
  ASSERT_TRUE(ended.ok());
  ASSERT_EQ(ended->size(), 1u);
  EXPECT_EQ((*ended)[0].status.code(), StatusCode::data_loss);
  EXPECT_NE((*ended)[0].status.message().find("/1/model.safetensors"), std::string::npos);
  // The same files are not loaded again.
  manager.poll_versions();
  EXPECT_EQ(loads, 2);
  const Result<std::shared_ptr<ServedModel>> unknown = manager.resolve({"other", std::nullopt, {}});
  EXPECT_EQ(unknown.status().code(), StatusCode::not_found);
  EXPECT_NE(unknown.status().message().find("'m'"), std::string::npos);
}

TEST(ModelManager, AReplacedVersionIsUnloadingWhileARequestHoldsItThenEnd) {
  TempDir dir;
  const std::string model_dir = dir.sub("m");
  ASSERT_EQ(testing::train_tiny_model(model_dir, 1).exit_code, 0);
  ModelManager manager(
      [](const std::string&, const std::string& base_path,
         const std::string& path) -> Result<std::shared_ptr<ServedModel>> {
        BackendOptions backend;
        backend.num_threads = 1;
        IC_ASSIGN_OR_RETURN(std::unique_ptr<ServedModel> loaded,
                            ServedModel::load(backend, base_path, path, 1));
        return std::shared_ptr<ServedModel>(std::move(loaded));
      },
      nullptr);
  ModelServerSettings settings;
  ModelConfigEntry entry;
  entry.name = "m";
  entry.base_path = model_dir;       // checkpoints: each version is a global step
  settings.models.push_back(entry);  // the default policy: the latest version
  ASSERT_TRUE(manager.apply(settings, "test").ok());
  Result<std::shared_ptr<ServedModel>> resolved = manager.resolve({"m", std::nullopt, {}});
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  std::shared_ptr<ServedModel> in_flight = std::move(*resolved);  // a request being answered
  EXPECT_EQ(states(manager, "m"), "1:AVAILABLE");

  ASSERT_EQ(testing::train_tiny_model(model_dir, 2).exit_code, 0);
  manager.poll_versions();
  EXPECT_EQ(states(manager, "m"), "2:AVAILABLE 1:UNLOADING");
  // New requests get the new version; the one in flight still has the old one whole.
  Result<std::shared_ptr<ServedModel>> next = manager.resolve({"m", std::nullopt, {}});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)->version(), 2);
  EXPECT_EQ(in_flight->version(), 1);
  in_flight.reset();  // the request is answered: the old model's memory goes
  EXPECT_EQ(states(manager, "m"), "2:AVAILABLE 1:END");
  manager.poll_versions();
  EXPECT_EQ(states(manager, "m"), "2:AVAILABLE 1:END");
}

}  // namespace
}  // namespace ic
