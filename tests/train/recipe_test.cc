// The recipe a run's options turn into: the weight decay the trainer and the evaluator use
// comes from --weight_decay, the losses' label smoothing from --label_smoothing, whose defaults
// are the model's (checked in flags_test).
#include "train/recipe.h"

#include <gtest/gtest.h>

#include <string>

#include "train/flag_table.h"

namespace ic {
namespace {

TEST(Recipe, WeightDecayComesFromTheOptions) {
  RunOptions options;
  options.model = "inception_v3";
  options.weight_decay = 1e-3;
  Result<TrainRecipe> recipe = train_recipe_for(options);
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_FLOAT_EQ(recipe->weight_decay, 1e-3f);

  options.weight_decay = 0;
  recipe = train_recipe_for(options);
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_EQ(recipe->weight_decay, 0.f);
}

TEST(Recipe, LabelSmoothingComesFromTheOptions) {
  RunOptions options;
  options.model = "inception_v3";
  options.label_smoothing = 0.25;
  for (const bool training : {true, false}) {
    Result<ModelOptions> model = model_options_for(options, training, 1);
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_FLOAT_EQ(model->label_smoothing, 0.25f);
  }
}

TEST(Recipe, InceptionTrainsWithRmsPropAndTheReferenceSchedule) {
  RunOptions options;
  options.model = "inception_v3";
  Result<TrainRecipe> recipe = train_recipe_for(options);
  ASSERT_TRUE(recipe.ok()) << recipe.status().message();
  EXPECT_EQ(recipe->optimizer, find_optimizer("RMS"));
  EXPECT_FLOAT_EQ(recipe->weight_decay, 4e-5f);
  EXPECT_DOUBLE_EQ(recipe->schedule.base_learning_rate, 0.165);
  EXPECT_EQ(recipe->schedule.train_batch_size, 1024);
}

// EfficientNet's reference keeps its EMA at 0.9999 and runs RMSProp with epsilon 0.001; the
// Inception applications' are 0.995 and 1.0. Another optimizer keeps its own epsilon.
TEST(Recipe, EmaDecayAndRmspropEpsilonAreTheModelsReferences) {
  const struct {
    const char* model;
    float ema_decay;
    double epsilon;
  } kCases[] = {{"inception_v3", 0.995f, 1.0}, {"efficientnet_b0", 0.9999f, 0.001}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.model);
    Result<RunOptions> options = default_run_options(c.model);
    ASSERT_TRUE(options.ok()) << options.status().message();
    Result<TrainRecipe> recipe = train_recipe_for(*options);
    ASSERT_TRUE(recipe.ok()) << recipe.status().message();
    EXPECT_FLOAT_EQ(recipe->moving_average_decay, c.ema_decay);
    ASSERT_EQ(recipe->hyperparameters.size(), recipe->optimizer->hyperparameters.size());
    for (const Hyperparameter& h : recipe->hyperparameters) {
      if (std::string(h.name) == "epsilon") {
        EXPECT_DOUBLE_EQ(h.value, c.epsilon);
      }
    }
    options->optimizer = find_optimizer("adamw");
    recipe = train_recipe_for(*options);
    ASSERT_TRUE(recipe.ok()) << recipe.status().message();
    EXPECT_TRUE(recipe->hyperparameters.empty());  // AdamW's own 1e-8
  }
}

}  // namespace
}  // namespace ic
