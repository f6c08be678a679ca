// One Trainer step against a host re-computation from the gradients the graph wrote: weight
// decay joins the gradients of the decayed kernels only, RMSProp starts from ms = 1 with TF's
// update, the learning rate is the schedule's at the step before the update, and the EMA uses
// decay min(0.995, (1 + n) / (10 + n)) with n the step after it.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "train/model_state.h"

namespace ic {
namespace {

Graph small_training_graph() {
  GraphBuilder b(true);
  ValueId x = b.images(Shape{4, 6, 6, 3});
  ValueId labels = b.labels(4);
  GraphBuilder::ConvOptions conv;
  conv.filters = 4;
  conv.kernel_h = conv.kernel_w = 3;
  x = b.conv2d(x, conv, "Net/Conv");
  x = b.batch_norm(x, GraphBuilder::BatchNormOptions{0.9f, 1e-3f, false, true}, "Net/Conv");
  x = b.global_avg_pool(x, "Net/Pool");
  ValueId logits = b.dense(x, 3, ParamInit{ParamInit::Kind::truncated_normal, 0.5f}, "Net/Logits");
  b.set_logits(logits);
  b.softmax_cross_entropy(logits, labels, 0.f, 1.f, "Net/Loss");
  return b.finish();
}

std::vector<float> download(Backend& backend, const float* data, size_t count) {
  std::vector<float> host(count);
  backend.download(host.data(), data, count * sizeof(float));
  return host;
}

TEST(Trainer, OneRmsPropStepMatchesTheHostRecomputation) {
  auto backend = make_backend(BackendOptions{});
  ASSERT_TRUE(backend.ok());
  Backend& be = **backend;
  Graph graph = small_training_graph();
  auto state = ModelState::create(be, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(state.ok()) << state.status().message();
  ModelState& s = **state;
  ASSERT_TRUE(s.initialize(11).ok());
  s.global_step = 100;  // the EMA decay is then min(0.995, 102/111), not the cap

  TrainRecipe recipe;
  recipe.weight_decay = 0.25f;  // large, so a missing or misplaced decay shows
  recipe.schedule = default_lr_schedule("inception_v3").value();
  recipe.schedule.train_batch_size = 4;
  auto trainer = Trainer::create(s, graph, recipe);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(-1.f, 1.f);
  std::vector<float> images(4 * 6 * 6 * 3);
  for (float& v : images) v = pixel(rng);
  const std::vector<int32_t> labels = {0, 2, 1, 2};

  const size_t n = s.layout().trainable_count, decayed = s.layout().decayed_count;
  ASSERT_GT(decayed, 0u);
  ASSERT_LT(decayed, n);
  const std::vector<float> w0 = download(be, s.weights(), n);
  (*trainer)->step(images.data(), labels.data(), true);
  EXPECT_EQ(s.global_step, 101);
  const std::vector<float> grads = download(be, s.grads(), n);  // g + wd * w on the prefix
  const std::vector<float> w1 = download(be, s.weights(), n);
  const std::vector<float> ema = download(be, s.ema_weights(), n);
  const std::vector<float> ms = download(be, s.slot(0), n);

  const double lr = learning_rate(recipe.schedule, 100);
  EXPECT_DOUBLE_EQ((*trainer)->last_learning_rate(), lr);
  const double decay = std::min(0.995, 102.0 / 111.0);
  double sum_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = grads[i];
    const double ms_expected = 0.9 * 1.0 + 0.1 * g * g;
    const double w_expected = w0[i] - lr * g / std::sqrt(ms_expected + 1.0);
    ASSERT_NEAR(ms[i], ms_expected, 1e-6) << i;
    ASSERT_NEAR(w1[i], w_expected, 1e-6) << i;
    const double ema_expected = w0[i] - (1 - decay) * (w0[i] - w_expected);
    ASSERT_NEAR(ema[i], ema_expected, 1e-6) << i;
    if (i < decayed) sum_sq += double{w0[i]} * w0[i];
  }

  // A second state, same start, no weight decay: its gradients differ by exactly wd * w on
  // the decayed prefix, and not at all elsewhere.
  auto plain_state = ModelState::create(be, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(plain_state.ok());
  ASSERT_TRUE((*plain_state)->initialize(11).ok());
  TrainRecipe plain = recipe;
  plain.weight_decay = 0.f;
  auto plain_trainer = Trainer::create(**plain_state, graph, plain);
  ASSERT_TRUE(plain_trainer.ok());
  (*plain_trainer)->step(images.data(), labels.data(), true);
  const std::vector<float> plain_grads = download(be, (*plain_state)->grads(), n);
  for (size_t i = 0; i < n; ++i) {
    const double expected = plain_grads[i] + (i < decayed ? 0.25 * w0[i] : 0.0);
    ASSERT_NEAR(grads[i], expected, 1e-5 + 1e-5 * std::fabs(expected)) << i;
  }
  // The loss adds wd * sum(w^2) / 2 of the weights before the update.
  EXPECT_NEAR((*trainer)->loss() - (*plain_trainer)->loss(), 0.25 * sum_sq / 2,
              1e-4 * (1 + sum_sq));
}

}  // namespace
}  // namespace ic
