// One trainer per model_dir: a second process is refused with the holder's pid and host, a dead
// holder's lock is taken over, and the lock goes with the object.
#include "io/model_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace ic {
namespace {

namespace fs = std::filesystem;

class TempModelDir {
 public:
  TempModelDir() {
    path_ = (fs::temp_directory_path() / ("ic_lock_test_" + std::to_string(getpid()))).string();
    fs::create_directories(path_);
  }
  ~TempModelDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process that takes the lock, says so through a pipe, and sleeps until killed.
pid_t start_holder(const std::string& model_dir) {
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    Result<ModelDirLock> lock = ModelDirLock::acquire(model_dir);
    const char answer = lock.ok() ? 'y' : 'n';
    if (write(ready[1], &answer, 1) != 1) _exit(3);
    while (true) pause();
  }
  close(ready[1]);
  char answer = 0;
  EXPECT_EQ(read(ready[0], &answer, 1), 1);
  close(ready[0]);
  EXPECT_EQ(answer, 'y');
  return child;
}

TEST(ModelDirLock, ASecondProcessIsRefusedNamingTheHolderAndADeadHoldersLockIsTakenOver) {
  TempModelDir dir;
  const pid_t holder = start_holder(dir.path());
  Result<ModelDirLock> second = ModelDirLock::acquire(dir.path());
  ASSERT_FALSE(second.ok());
  const std::string message = second.status().message();
  EXPECT_NE(message.find(dir.path()), std::string::npos) << message;
  EXPECT_NE(message.find("pid " + std::to_string(holder)), std::string::npos) << message;
  EXPECT_NE(message.find("another trainer"), std::string::npos) << message;

  // SIGKILL leaves the .lock file with the dead pid in it: the kernel dropped the lock.
  kill(holder, SIGKILL);
  int status = 0;
  waitpid(holder, &status, 0);
  ASSERT_TRUE(fs::exists(dir.path() + "/.lock"));
  Result<ModelDirLock> taken = ModelDirLock::acquire(dir.path());
  ASSERT_TRUE(taken.ok()) << taken.status().message();
}

TEST(ModelDirLock, ReleasedWhenTheObjectGoesAndMovesWithIt) {
  TempModelDir dir;
  {
    Result<ModelDirLock> first = ModelDirLock::acquire(dir.path());
    ASSERT_TRUE(first.ok());
    ModelDirLock moved = std::move(*first);
    // A second open file description in this very process conflicts too (flock semantics).
    EXPECT_FALSE(ModelDirLock::acquire(dir.path()).ok());
  }
  EXPECT_TRUE(ModelDirLock::acquire(dir.path()).ok());
}

TEST(ModelDirLock, MissingDirectoryIsAnError) {
  Result<ModelDirLock> lock = ModelDirLock::acquire("/nonexistent/ic/model_dir");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("/nonexistent/ic/model_dir/.lock"), std::string::npos);
}

}  // namespace
}  // namespace ic
