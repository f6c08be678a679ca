// Data-parallel training step: with each rank on its own batch, one SGD step of the replicated
// trainer equals the mean of the steps a single process takes on each rank's batch alone (SGD is
// linear in the gradient), the reported loss is the mean of the replicas' losses, batch norm's
// moving statistics stay each replica's own, and after further RMSProp steps every rank holds
// the very same weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "dist/device_reducer.h"
#include "dist_mpi/mpi_world.h"
#include "models/model.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace ic {
namespace {

using testing::world;

constexpr int kBatch = 2, kSize = 75, kClasses = 10;

struct Replica {
  std::unique_ptr<Backend> backend;
  Graph graph;
  std::unique_ptr<ModelState> state;
  std::unique_ptr<Trainer> trainer;
};

TrainRecipe sgd_recipe() {
  TrainRecipe recipe;
  recipe.optimizer = find_optimizer("sgd");
  recipe.weight_decay = 1e-3f;  // applied after the mean: the same on every replica
  recipe.schedule = default_lr_schedule("inception_v3").value();
  recipe.schedule.base_learning_rate = 0.1 * 256 / kBatch;
  recipe.schedule.train_batch_size = kBatch;
  return recipe;
}

// A tiny Inception v3 from seed 3, without dropout unless asked (replicas draw different masks).
void make_replica(const TrainRecipe& recipe, DeviceReducer* reducer, Backend* shared_backend,
                  Replica* out, float dropout_keep_prob = 1.f) {
  if (shared_backend == nullptr) {
    auto backend = make_backend(BackendOptions{});
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    out->backend = std::move(*backend);
    shared_backend = out->backend.get();
  }
  auto m = default_model_options("inception_v3");
  ASSERT_TRUE(m.ok());
  m->batch_size = kBatch;
  m->height = m->width = kSize;
  m->num_classes = kClasses;
  m->depth_multiplier = 0.1f;
  m->dropout_keep_prob = dropout_keep_prob;
  auto graph = build_model(*m);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  out->graph = std::move(*graph);
  auto state = ModelState::create(*shared_backend, out->graph, recipe.optimizer, true, true);
  ASSERT_TRUE(state.ok()) << state.status().message();
  out->state = std::move(*state);
  ASSERT_TRUE(out->state->initialize(3).ok());
  auto trainer = Trainer::create(*out->state, out->graph, recipe, reducer);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  out->trainer = std::move(*trainer);
}

// Rank r's batch.
void batch_of(int rank, std::vector<float>* images, std::vector<int32_t>* labels) {
  std::mt19937 rng(100 + rank);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  images->resize(kBatch * kSize * kSize * 3);
  for (float& x : *images) x = pixel(rng);
  *labels = {static_cast<int32_t>(rank % kClasses),
             static_cast<int32_t>((3 * rank + 1) % kClasses)};
}

std::vector<float> download(Backend& backend, const float* data, size_t count) {
  std::vector<float> host(count);
  backend.download(host.data(), data, count * sizeof(float));
  return host;
}

TEST(ReplicaTraining, OneSgdStepIsTheMeanOfTheReplicasSteps) {
  Communicator& comm = world();
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  DeviceReducer reducer(comm, **backend);
  const TrainRecipe recipe = sgd_recipe();
  Replica replicated;
  ASSERT_NO_FATAL_FAILURE(make_replica(recipe, &reducer, backend->get(), &replicated));
  std::vector<float> images;
  std::vector<int32_t> labels;
  batch_of(comm.rank(), &images, &labels);
  replicated.trainer->step(images.data(), labels.data(), true);
  const float loss = replicated.trainer->loss();  // collective: the replicas' mean
  const size_t weights = replicated.state->layout().trainable_count;
  const size_t stats = replicated.state->layout().state_count;

  // The same steps one process would take on each rank's batch alone.
  std::vector<double> expected(weights, 0.0);
  double expected_loss = 0;
  std::vector<float> own_stats;
  for (int r = 0; r < comm.size(); ++r) {
    Replica alone;
    ASSERT_NO_FATAL_FAILURE(make_replica(recipe, nullptr, nullptr, &alone));
    std::vector<float> other_images;
    std::vector<int32_t> other_labels;
    batch_of(r, &other_images, &other_labels);
    alone.trainer->step(other_images.data(), other_labels.data(), true);
    expected_loss += alone.trainer->loss() / comm.size();
    const std::vector<float> w = download(*alone.backend, alone.state->weights(), weights);
    for (size_t i = 0; i < weights; ++i) expected[i] += static_cast<double>(w[i]) / comm.size();
    if (r == comm.rank()) own_stats = download(*alone.backend, alone.state->state(), stats);
  }

  const std::vector<float> got = download(**backend, replicated.state->weights(), weights);
  double max_error = 0, max_change = 0;
  const std::vector<float> initial = [&] {
    Replica fresh;
    make_replica(recipe, nullptr, nullptr, &fresh);
    return download(*fresh.backend, fresh.state->weights(), weights);
  }();
  for (size_t i = 0; i < weights; ++i) {
    max_error = std::max(max_error, std::abs(got[i] - expected[i]));
    max_change = std::max(max_change, std::abs(static_cast<double>(got[i]) - initial[i]));
  }
  EXPECT_GT(max_change, 1e-3);  // the step moved the weights
  EXPECT_LT(max_error, 1e-5 + 1e-4 * max_change) << "max change " << max_change;
  EXPECT_NEAR(loss, expected_loss, 1e-4 * std::abs(expected_loss));
  EXPECT_EQ(download(**backend, replicated.state->state(), stats), own_stats);
}

TEST(ReplicaTraining, ReplicasKeepIdenticalWeightsUnderRmsProp) {
  Communicator& comm = world();
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  DeviceReducer reducer(comm, **backend);
  TrainRecipe recipe = sgd_recipe();
  recipe.optimizer = find_optimizer("RMS");
  recipe.schedule.base_learning_rate = 0.01 * 256 / kBatch;
  Replica replicated;
  ASSERT_NO_FATAL_FAILURE(make_replica(recipe, &reducer, backend->get(), &replicated));
  for (int step = 0; step < 3; ++step) {
    std::vector<float> images;
    std::vector<int32_t> labels;
    batch_of(comm.rank() + 10 * step, &images, &labels);
    replicated.trainer->step(images.data(), labels.data(), false);
  }
  const size_t weights = replicated.state->layout().trainable_count;
  // Weights and their EMA shadows, bit for bit the leader's.
  for (const float* arena : {replicated.state->weights(), replicated.state->ema_weights()}) {
    const std::vector<float> mine = download(**backend, arena, weights);
    std::vector<float> leaders = mine;
    comm.broadcast(leaders.data(), leaders.size() * sizeof(float), 0);
    EXPECT_EQ(mine, leaders);
  }
}

// --micro_batch_size: one process running a step as N micro-batches applies exactly the update
// N replicas apply to the same N batches, bit for bit, dropout included (micro-batch k draws
// replica k's masks), and reports the same loss.
TEST(ReplicaTraining, MicroBatchesInOneProcessApplyTheReplicasUpdateBitForBit) {
  Communicator& comm = world();
  const int n = comm.size();
  TrainRecipe recipe = sgd_recipe();
  recipe.optimizer = find_optimizer("RMS");
  recipe.schedule.base_learning_rate = 0.01 * 256 / kBatch;
  const float keep = 0.8f;

  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  DeviceReducer reducer(comm, **backend);
  Replica replicated;
  ASSERT_NO_FATAL_FAILURE(make_replica(recipe, &reducer, backend->get(), &replicated, keep));

  TrainRecipe micro_recipe = recipe;
  micro_recipe.micro_batches = n;
  Replica micro;  // every rank runs it alone, on all the replicas' batches
  ASSERT_NO_FATAL_FAILURE(make_replica(micro_recipe, nullptr, nullptr, &micro, keep));
  ASSERT_EQ(micro.trainer->batch_size(), kBatch * n);

  for (int step = 0; step < 3; ++step) {
    std::vector<float> images, all_images;
    std::vector<int32_t> labels, all_labels;
    batch_of(comm.rank() + 10 * step, &images, &labels);
    replicated.trainer->step(images.data(), labels.data(), true);
    for (int r = 0; r < n; ++r) {
      batch_of(r + 10 * step, &images, &labels);
      all_images.insert(all_images.end(), images.begin(), images.end());
      all_labels.insert(all_labels.end(), labels.begin(), labels.end());
    }
    micro.trainer->step(all_images.data(), all_labels.data(), true);
    const float replicas_loss = replicated.trainer->loss();  // collective
    EXPECT_EQ(micro.trainer->loss(), replicas_loss) << "step " << step;
  }
  const size_t weights = replicated.state->layout().trainable_count;
  EXPECT_EQ(download(*micro.backend, micro.state->weights(), weights),
            download(**backend, replicated.state->weights(), weights));
  EXPECT_EQ(download(*micro.backend, micro.state->ema_weights(), weights),
            download(**backend, replicated.state->ema_weights(), weights));
}

}  // namespace
}  // namespace ic
