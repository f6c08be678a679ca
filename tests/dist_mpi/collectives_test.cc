// MPI collectives across the ranks of the job: sums, broadcast, the device reducer's mean and
// agreement, and the eval counts' sum.
#include <gtest/gtest.h>

#include <vector>

#include "backend/backend.h"
#include "dist/device_reducer.h"
#include "dist_mpi/mpi_world.h"
#include "train/run_loop.h"

namespace ic {
namespace {

using testing::world;

TEST(MpiCollectives, AllReduceSumsEveryElementOnEveryRank) {
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  std::vector<float> f = {static_cast<float>(r), 1.f, static_cast<float>(r * r)};
  comm.all_reduce_sum(f.data(), f.size());
  float ranks = 0, squares = 0;
  for (int i = 0; i < n; ++i) ranks += i, squares += i * i;
  EXPECT_EQ(f, (std::vector<float>{ranks, static_cast<float>(n), squares}));
  std::vector<double> d(1000, 0.5 + r);
  comm.all_reduce_sum(d.data(), d.size());
  for (double x : d) ASSERT_EQ(x, 0.5 * n + ranks);
}

TEST(MpiCollectives, BroadcastCopiesTheRootsBytes) {
  Communicator& comm = world();
  const int root = comm.size() - 1;
  std::vector<int64_t> v = {comm.rank(), 7 * comm.rank()};
  comm.broadcast(v.data(), v.size() * sizeof(int64_t), root);
  EXPECT_EQ(v, (std::vector<int64_t>{root, 7 * root}));
}

TEST(MpiCollectives, DeviceReducerAveragesBroadcastsAndAgrees) {
  Communicator& comm = world();
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  DeviceReducer reducer(comm, **backend);
  auto buffer = (*backend)->allocate(2 * sizeof(float));
  ASSERT_TRUE(buffer.ok());
  float* data = buffer->as<float>();
  const float mine[2] = {2.f * comm.rank(), 1.f};
  (*backend)->upload(data, mine, sizeof(mine));
  reducer.mean(data, 2);
  float out[2];
  (*backend)->download(out, data, sizeof(out));
  EXPECT_FLOAT_EQ(out[0], static_cast<float>(comm.size() - 1));  // mean of 0, 2, .., 2(n-1)
  EXPECT_FLOAT_EQ(out[1], 1.f);

  (*backend)->upload(data, mine, sizeof(mine));
  reducer.broadcast(data, 2, 1);
  (*backend)->download(out, data, sizeof(out));
  EXPECT_EQ(out[0], 2.f);

  EXPECT_TRUE(reducer.any(comm.rank() == 1));  // one rank is enough
  EXPECT_FALSE(reducer.any(false));
  EXPECT_TRUE(reducer.any(true));
}

TEST(MpiCollectives, EvalCountsAddUp) {
  Communicator& comm = world();
  TopKCounts mine;
  mine.top1 = comm.rank() + 1;
  mine.top5 = 10;
  mine.count = 20;
  mine.loss_sum = 0.25;
  mine.loss_batches = 2;
  const TopKCounts sum = sum_over_replicas(mine, comm);
  const int n = comm.size();
  EXPECT_EQ(sum.top1, n * (n + 1) / 2);
  EXPECT_EQ(sum.top5, 10 * n);
  EXPECT_EQ(sum.count, 20 * n);
  EXPECT_DOUBLE_EQ(sum.loss_sum, 0.25 * n);
  EXPECT_EQ(sum.loss_batches, 2 * n);
  EXPECT_DOUBLE_EQ(sum.accuracy(), static_cast<double>(n * (n + 1) / 2) / (20 * n));
}

}  // namespace
}  // namespace ic
