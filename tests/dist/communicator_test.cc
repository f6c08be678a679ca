// The single-process communicator (what every run without mpirun uses): its collectives leave
// data as it is, and DeviceReducer over it is an identity.
#include "dist/communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "backend/backend.h"
#include "dist/device_reducer.h"

namespace ic {
namespace {

TEST(SingleProcessCommunicator, IsRankZeroOfOneAndLeavesDataAlone) {
  auto comm = make_single_process_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  std::vector<float> f = {1.5f, -2.f};
  std::vector<double> d = {3.25};
  comm->all_reduce_sum(f.data(), f.size());
  comm->all_reduce_sum(d.data(), d.size());
  comm->broadcast(f.data(), f.size() * sizeof(float), 0);
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(d, (std::vector<double>{3.25}));
}

TEST(SingleProcessCommunicator, DeviceReducerIsAnIdentity) {
  auto comm = make_single_process_communicator();
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  DeviceReducer reducer(*comm, **backend);
  auto buffer = (*backend)->allocate(3 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  const std::vector<float> values = {1.f, 2.f, 4.f};
  (*backend)->upload(buffer->data(), values.data(), 3 * sizeof(float));
  reducer.mean(buffer->as<float>(), 3);
  reducer.broadcast(buffer->as<float>(), 3, 0);
  std::vector<float> out(3);
  (*backend)->download(out.data(), buffer->data(), 3 * sizeof(float));
  EXPECT_EQ(out, values);
  EXPECT_TRUE(reducer.any(true));
  EXPECT_FALSE(reducer.any(false));
}

TEST(CommunicatorFromEnvironment, IsSingleProcessWithoutALauncher) {
  if (launched_by_mpi()) GTEST_SKIP() << "this test binary was started by mpirun";
  auto comm = communicator_from_environment();
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ((*comm)->size(), 1);
  EXPECT_EQ((*comm)->description(), "one process");
}

}  // namespace
}  // namespace ic
