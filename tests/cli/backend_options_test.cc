// --device parsed once for every program, and backend_options_for: the device, the GPU a local
// process takes, and the thread count (all cores shared among local processes; more than the
// cores capped, with the notice the programs print).
#include "cli/backend_options.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/device.h"

namespace ic {
namespace {

TEST(Device, ParsesCpuCudaAndCudaN) {
  EXPECT_EQ(parse_device(""), DeviceChoice{});
  EXPECT_EQ(parse_device("cpu"), (DeviceChoice{DeviceChoice::Kind::cpu, std::nullopt}));
  EXPECT_EQ(parse_device("cuda"), (DeviceChoice{DeviceChoice::Kind::cuda, std::nullopt}));
  EXPECT_EQ(parse_device("cuda:3"), (DeviceChoice{DeviceChoice::Kind::cuda, 3}));
  EXPECT_EQ(parse_device("cuda:123456789"), (DeviceChoice{DeviceChoice::Kind::cuda, 123456789}));
  for (const char* text : {"", "cpu", "cuda", "cuda:0", "cuda:17"}) {
    const std::optional<DeviceChoice> parsed = parse_device(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(device_name(*parsed), text);
  }
}

TEST(Device, RefusesEverythingElse) {
  for (const char* text : {"gpu", "CPU", "cudaz9", "cuda:", "cuda:abc", "cuda:-1", "cuda:1x",
                           "cuda:1234567890", " cpu", "tpu:0"}) {
    EXPECT_EQ(parse_device(text), std::nullopt) << text;
  }
}

TEST(BackendOptionsFor, CpuWithTheThreadsAsked) {
  Result<BackendChoice> cpu = backend_options_for(parse_device("cpu").value(), 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  EXPECT_EQ(cpu->options.kind, DeviceKind::cpu);
  EXPECT_EQ(cpu->options.num_threads, 1);
  EXPECT_EQ(cpu->notice, "");
  Result<BackendChoice> all = backend_options_for(parse_device("cpu").value(), 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->options.num_threads, 0);  // 0: every core, for the backend to take
  Result<BackendChoice> cores = backend_options_for(parse_device("cpu").value(), machine_cores());
  ASSERT_TRUE(cores.ok());
  EXPECT_EQ(cores->options.num_threads, machine_cores());
  EXPECT_EQ(cores->notice, "");
}

TEST(BackendOptionsFor, CudaNOrTheLocalProcesssGpu) {
  Result<BackendChoice> three = backend_options_for(parse_device("cuda:3").value(), 0);
  ASSERT_TRUE(three.ok()) << three.status().message();
  EXPECT_EQ(three->options.kind, DeviceKind::cuda);
  EXPECT_EQ(three->options.device_index, 3);
  // cuda:N wins over the local process's index; plain "cuda" takes that index.
  Result<BackendChoice> pinned =
      backend_options_for(parse_device("cuda:3").value(), 0, LocalProcess{1, 2});
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->options.device_index, 3);
  Result<BackendChoice> second =
      backend_options_for(parse_device("cuda").value(), 0, LocalProcess{1, 2});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->options.kind, DeviceKind::cuda);
  EXPECT_EQ(second->options.device_index, 1);
  Result<BackendChoice> first = backend_options_for(parse_device("cuda").value(), 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->options.device_index, 0);
}

TEST(BackendOptionsFor, ThreadsBeyondTheCoresAreCappedWithANotice) {
  const int cores = machine_cores();
  Result<BackendChoice> many = backend_options_for(parse_device("cpu").value(), 100000);
  ASSERT_TRUE(many.ok()) << many.status().message();
  EXPECT_EQ(many->options.num_threads, cores);
  EXPECT_EQ(many->notice, "--num_threads=100000 is more than the " + std::to_string(cores) +
                              " cores of this machine; using " + std::to_string(cores));
  Result<BackendChoice> one_more = backend_options_for(parse_device("cpu").value(), cores + 1);
  ASSERT_TRUE(one_more.ok());
  EXPECT_EQ(one_more->options.num_threads, cores);
  EXPECT_NE(one_more->notice, "");
}

TEST(BackendOptionsFor, LocalProcessesShareTheCores) {
  const int cores = machine_cores();
  Result<BackendChoice> shared =
      backend_options_for(parse_device("cpu").value(), 0, LocalProcess{0, 2});
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->options.num_threads, std::max(1, cores / 2));
  Result<BackendChoice> crowded =
      backend_options_for(parse_device("cpu").value(), 0, LocalProcess{3, 4 * cores});
  ASSERT_TRUE(crowded.ok());
  EXPECT_EQ(crowded->options.num_threads, 1);  // at least one each
  Result<BackendChoice> asked =
      backend_options_for(parse_device("cpu").value(), 1, LocalProcess{0, 2});
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->options.num_threads, 1);  // a count given is kept
}

TEST(BackendOptionsFor, BadValuesAreErrors) {
  const Result<BackendChoice> unset = backend_options_for(DeviceChoice{}, 0);
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.status().message().find("--device"), std::string::npos)
      << unset.status().message();
  const Result<BackendChoice> negative = backend_options_for(parse_device("cpu").value(), -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "bad value -1 for --num_threads (allowed: 0 or more)");
}

}  // namespace
}  // namespace ic
