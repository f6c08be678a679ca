// A training step whose planned memory does not fit what the backend has left is refused before
// anything is allocated, with the figures and the largest batch that would fit.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "graph/compiled_graph.h"
#include "models/model.h"
#include "train/forwarding_backend.h"
#include "train/model_state.h"
#include "train/trainer.h"

namespace ic {
namespace {

// The CPU backend with a fixed amount of free memory.
class SmallMemoryBackend final : public testing::ForwardingBackend {
 public:
  SmallMemoryBackend() : ForwardingBackend(testing::cpu_backend_for_tests()) {}
  std::optional<size_t> available_memory() const override { return available; }
  std::optional<size_t> available;
};

constexpr int kBatch = 8;

Graph tiny_training_graph() {
  ModelOptions o = default_model_options("inception_v3").value();
  o.batch_size = kBatch;
  o.height = o.width = 75;
  o.num_classes = 11;
  o.depth_multiplier = 0.25f;
  return build_model(o).value();
}

TrainRecipe recipe() {
  TrainRecipe r;
  r.optimizer = find_optimizer("RMS");
  r.schedule = default_lr_schedule("inception_v3").value();
  return r;
}

TEST(MemoryFit, AStepThatDoesNotFitIsRefusedWithTheFiguresAndTheLargestBatch) {
  const Graph graph = tiny_training_graph();
  SmallMemoryBackend backend;  // unknown memory first: the arena size is measured
  auto state = ModelState::create(backend, graph, find_optimizer("RMS"), true, true);
  ASSERT_TRUE(state.ok()) << state.status().message();
  auto fits = Trainer::create(**state, graph, recipe(), nullptr);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  auto measured =
      CompiledGraph::compile(graph, backend, (*state)->layout(), (*state)->train_binding());
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  const size_t arena = (*measured)->activation_bytes();
  // The model state's host copies for checkpoints: weights, EMA and two RMSProp slots of every
  // trainable value, moving statistics and their EMA.
  const ParamLayout& layout = (*state)->layout();
  const size_t keep_free = 4 * (4 * layout.trainable_count + 2 * layout.state_count);

  // Exactly enough: accepted.
  backend.available = arena + keep_free;
  EXPECT_TRUE(Trainer::create(**state, graph, recipe(), nullptr).ok());

  // Room for half the activations: refused, and 0.9 * 8 / 2 = 3.6 -> about 3 images fit.
  backend.available = keep_free + arena / 2;
  auto refused = Trainer::create(**state, graph, recipe(), nullptr);
  ASSERT_FALSE(refused.ok());
  const std::string message = refused.status().message();
  EXPECT_NE(message.find("one training step of 8 images needs"), std::string::npos) << message;
  EXPECT_NE(message.find("the largest batch that fits is about 3 images"), std::string::npos)
      << message;

  // Less than the model state alone needs: not even one image.
  backend.available = keep_free / 2;
  auto none = Trainer::create(**state, graph, recipe(), nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("not even one image fits"), std::string::npos)
      << none.status().message();
}

TEST(MemoryFit, TheCpuBackendReportsTheMachinesAvailableMemory) {
  auto cpu = testing::cpu_backend_for_tests();
  ASSERT_NE(cpu, nullptr);
  const std::optional<size_t> available = cpu->available_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, size_t{1} << 20);  // some memory is left on any machine running this
}

}  // namespace
}  // namespace ic
