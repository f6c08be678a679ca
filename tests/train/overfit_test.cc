// The engine end to end: a tiny Inception v3 (depth multiplier 0.1, 75x75 images, 10
// classes) trained on one fixed batch of 8 drives the loss below 0.05. Label smoothing,
// dropout and weight decay are off here because each puts a floor under the loss
// (smoothing 0.1 alone keeps cross-entropy above ~0.3 for 10 classes).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "backend/backend.h"
#include "models/model.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace ic {
namespace {

TEST(Overfit, TinyInceptionV3LearnsOneBatch) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  auto m = default_model_options("inception_v3");
  ASSERT_TRUE(m.ok());
  m->batch_size = 8;
  m->height = m->width = 75;
  m->num_classes = 10;
  m->depth_multiplier = 0.1f;
  m->label_smoothing = 0.f;
  m->dropout_keep_prob = 1.f;
  auto graph = build_model(*m);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto state = ModelState::create(**backend, *graph, find_optimizer("momentum"), true, true);
  ASSERT_TRUE(state.ok()) << state.status().message();
  ASSERT_TRUE((*state)->initialize(1).ok());

  TrainRecipe recipe;
  recipe.optimizer = find_optimizer("momentum");
  recipe.weight_decay = 0.f;
  recipe.schedule = default_lr_schedule("inception_v3").value();
  recipe.schedule.base_learning_rate = 0.05 * 256 / 8;  // lr 0.05, staircase decay far away
  recipe.schedule.train_batch_size = 8;
  auto trainer = Trainer::create(**state, *graph, recipe);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(8 * 75 * 75 * 3);
  for (float& x : images) x = pixel(rng);
  const std::vector<int32_t> labels = {0, 1, 2, 3, 4, 5, 6, 7};

  (*trainer)->step(images.data(), labels.data(), true);
  const float first = (*trainer)->loss();
  EXPECT_GT(first, 2.0f);  // ~1.4 * ln(10) at the start
  float loss = first;
  int steps = 1;
  for (; steps < 150 && loss >= 0.05f; ++steps) {
    (*trainer)->step(images.data(), labels.data(), true);
    loss = (*trainer)->loss();
    ASSERT_TRUE(std::isfinite(loss)) << "step " << steps;
  }
  EXPECT_LT(loss, 0.05f) << "after " << steps << " steps, first loss " << first;
  EXPECT_EQ((*state)->global_step, steps);
  std::printf("overfit: loss %.3f -> %.4f in %d steps\n", first, loss, steps);
}

}  // namespace
}  // namespace ic
