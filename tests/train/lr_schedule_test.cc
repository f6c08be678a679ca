#include "train/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ic {
namespace {

// Expected values are worked out by hand from the reference formulas (inception_v3.py,
// inception_v4.py, resnet_main.py); tolerances cover float-vs-double rounding only.
void expect_lr(const LrScheduleOptions& o, int64_t step, double want) {
  EXPECT_NEAR(learning_rate(o, step), want, 1e-9 * std::max(1.0, want))
      << "schedule " << static_cast<int>(o.kind) << " step " << step;
}

TEST(LrSchedule, InceptionV3DefaultStaircaseAndFloor) {
  LrScheduleOptions o =
      default_lr_schedule("inception_v3").value();  // 0.165, batch 1024, 0.94 every 3 epochs
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  // initial = 0.165 * 1024 / 256 = 0.66; decay_steps = int(3 * 1281167 / 1024) = int(3753.42) =
  // 3753.
  expect_lr(o, 0, 0.66);
  expect_lr(o, 3752, 0.66);
  expect_lr(o, 3753, 0.66 * 0.94);
  expect_lr(o, 7505, 0.66 * 0.94);
  expect_lr(o, 7506, 0.66 * 0.94 * 0.94);
  expect_lr(o, 213000, 0.66 * std::pow(0.94, 56));  // 213000 / 3753 = 56.75
  // 0.66 * 0.94^160 ≈ 3.3e-5 is under the floor 1e-4 * 0.66.
  expect_lr(o, 3753 * 160, 0.66e-4);
  // Another batch: 0.165 at 256 images, decay every int(3 * 5004.56) = 15013 steps.
  o.train_batch_size = 256;
  expect_lr(o, 15012, 0.165);
  expect_lr(o, 15013, 0.165 * 0.94);
}

TEST(LrSchedule, InceptionV3WarmupByEpoch) {
  LrScheduleOptions o = default_lr_schedule("inception_v3").value();
  o.use_warmup = true;  // cold 2, warmup 7, decay every 3 epochs
  // adjusted = 0.66 * 0.94^((7+2)/3) = 0.66 * 0.830584 = 0.54818544; wlr = 0.1 * adjusted;
  // height = 0.9 * adjusted / (7 + 3 - 1) = 0.1 * adjusted; epochs 2..11: wlr + (e - 1) * height.
  const double adjusted = 0.66 * 0.94 * 0.94 * 0.94;
  const double batches_per_epoch = 1281167.0 / 1024;  // 1251.1396484375
  auto mid_epoch = [&](int e) { return static_cast<int64_t>((e + 0.5) * batches_per_epoch); };
  expect_lr(o, 0, 0.1 * adjusted);
  expect_lr(o, mid_epoch(1), 0.1 * adjusted);
  expect_lr(o, mid_epoch(2), 0.2 * adjusted);
  expect_lr(o, mid_epoch(5), 0.5 * adjusted);
  expect_lr(o, mid_epoch(11), 1.1 * adjusted);  // peak 0.603
  // Epoch 12 starts at step 15014 (12 * 1251.14 = 15013.68): the rate drops back onto the
  // unadjusted decay, 0.66 * 0.94^int(15014 / 3753) = 0.66 * 0.94^4 = 0.515.
  expect_lr(o, 15013, 1.1 * adjusted);
  expect_lr(o, 15014, 0.66 * std::pow(0.94, 4));
  EXPECT_LT(learning_rate(o, 15014), learning_rate(o, 15013));
  expect_lr(o, mid_epoch(30), 0.66 * std::pow(0.94, static_cast<int>(mid_epoch(30) / 3753)));
  EXPECT_EQ(current_epoch(o, 15013), 11);
  EXPECT_EQ(current_epoch(o, 15014), 12);
}

TEST(LrSchedule, InceptionV4ColdWarmupDecay) {
  LrScheduleOptions o =
      default_lr_schedule("inception_v4").value();  // 0.15, batch 256, cold 1, warmup 2
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  // initial = 0.15 / 0.94^((2+1)/2) = 0.15 / 0.9113626 = 0.1645885; batches/epoch = 5004.5586;
  // decay_steps = int(2 * 5004.5586) = 10009.
  const double initial = 0.15 / std::pow(0.94, 1.5);
  EXPECT_NEAR(initial, 0.1645885, 1e-7);
  expect_lr(o, 0, 0.001);                            // epoch 0: cold rate
  expect_lr(o, 5004, 0.001);                         // still epoch 0 (5004 / 5004.56)
  expect_lr(o, 5005, initial / 3);                   // epoch 1: 1 * initial / 3 = 0.0549
  expect_lr(o, 12000, 2 * initial / 3);              // epoch 2: 0.1097
  expect_lr(o, 15014, initial * 0.94);               // epoch 3: decay, int(15014 / 10009) = 1
  expect_lr(o, 52547, initial * std::pow(0.94, 5));  // epoch 10, int(52547 / 10009) = 5
  expect_lr(o, 10009 * 300, 1e-4 * initial);         // floor: 0.94^300 is tiny
}

TEST(LrSchedule, Resnet50WarmupAndDrops) {
  LrScheduleOptions o =
      default_lr_schedule("resnet50").value();  // 0.1 * 1024 / 256 = 0.4, 112590 steps
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  // steps_per_epoch = floor(1251.14) = 1251, train_epochs = 112590 / 1251 = 90: boundaries
  // 5, 30, 60, 80; warmup 0.4 * epoch / 5 with epoch = step / 1251.1396.
  const double bpe = 1281167.0 / 1024;
  EXPECT_NEAR(learning_rate(o, 0), 0.0, 1e-12);
  EXPECT_NEAR(learning_rate(o, 1000), 0.4 * (1000 / bpe) / 5, 1e-6);
  EXPECT_NEAR(learning_rate(o, 6255), 0.4 * (6255 / bpe) / 5, 1e-6);  // epoch 4.9994
  expect_lr(o, 6256, 0.4);                                            // epoch 5.0002
  expect_lr(o, 37534, 0.4);                                           // 29.99997
  expect_lr(o, 37535, 0.04);
  expect_lr(o, 75069, 0.004);    // 60 * 1251.14 = 75068.4
  expect_lr(o, 100092, 0.0004);  // 80 * 1251.14 = 100091.2
  expect_lr(o, 112589, 0.0004);
  EXPECT_NEAR(current_epoch(o, 6256), 6256 / bpe, 1e-5);
}

TEST(LrSchedule, Resnet50BoundariesScaleToTrainSteps) {
  LrScheduleOptions o = default_lr_schedule("resnet50").value();
  o.train_steps = 11259;     // 9 epochs: boundaries floor(0.5, 3, 6, 8) = 0, 3, 6, 8
  expect_lr(o, 0, 0.4);      // zero-length warmup: full rate at once
  expect_lr(o, 3753, 0.4);   // epoch 2.9997
  expect_lr(o, 3754, 0.04);  // epoch 3.0005
  expect_lr(o, 7507, 0.004);
  expect_lr(o, 10010, 0.0004);
}

TEST(LrSchedule, MobilenetDecaysPerWholeBatchEpochs) {
  LrScheduleOptions o = default_lr_schedule("mobilenet_v1").value();  // 0.165, batch 1024
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  EXPECT_EQ(o.kind, LrScheduleKind::mobilenet);
  // initial 0.66; decay_steps = 3 * (1281167 // 1024) = 3 * 1251 = 3753.
  expect_lr(o, 0, 0.66);
  expect_lr(o, 3752, 0.66);
  expect_lr(o, 3753, 0.66 * 0.94);
  expect_lr(o, 3753 * 160, 0.66e-4);  // the floor
  // At 4096 images mobilenet.py decays every 3 * 312 = 936 steps, not int(3 * 312.78) = 938.
  o.train_batch_size = 4096;
  expect_lr(o, 935, 2.64);
  expect_lr(o, 936, 2.64 * 0.94);
  o.kind = LrScheduleKind::inception_v3;
  expect_lr(o, 937, 2.64);
  EXPECT_EQ(default_lr_schedule("mobilenet_v2").value().kind, LrScheduleKind::mobilenet);
}

TEST(LrSchedule, EfficientNetWarmupThenDecayEvery2Point4Epochs) {
  LrScheduleOptions o = default_lr_schedule("efficientnet_b0").value();
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  EXPECT_EQ(o.kind, LrScheduleKind::efficientnet);
  EXPECT_DOUBLE_EQ(o.decay_rate, 0.97);  // the model's learning_rate_decay flag default
  // initial = 0.016 * 2048 / 256 = 0.128; steps_per_epoch = 1281167 / 2048 = 625.5698;
  // warmup_steps = int(5 * 625.5698) = 3127; decay_steps = 2.4 * 625.5698 = 1501.37.
  expect_lr(o, 0, 0);
  expect_lr(o, 1000, 0.128 * 1000 / 3127);
  expect_lr(o, 3126, 0.128 * 3126 / 3127);
  expect_lr(o, 3127, 0.128 * 0.97 * 0.97);            // floor(3127 / 1501.37) = 2
  expect_lr(o, 218948, 0.128 * std::pow(0.97, 145));  // 218948 / 1501.37 = 145.8; no floor
  o.warmup_epochs = 0;
  expect_lr(o, 0, 0.128);
  expect_lr(o, 1501, 0.128);
  expect_lr(o, 1502, 0.128 * 0.97);
  // --learning_rate_decay_epochs does not move the 2.4.
  o.decay_epochs = 7;
  expect_lr(o, 1502, 0.128 * 0.97);
}

TEST(LrSchedule, DenseNetSteppedWarmupAndFixedDrops) {
  LrScheduleOptions o = default_lr_schedule("densenet121").value();  // 0.1 x 1024 / 256
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  EXPECT_EQ(o.kind, LrScheduleKind::densenet);
  const double bpe = 1281167.0 / 1024;
  auto mid_epoch = [&](double e) { return static_cast<int64_t>((e + 0.5) * bpe); };
  expect_lr(o, 0, 0.4 / 6);
  expect_lr(o, mid_epoch(1), 0.4 * 2 / 6);
  expect_lr(o, mid_epoch(4), 0.4 * 5 / 6);
  expect_lr(o, 6255, 0.4 * 5 / 6);  // epoch 4.9994
  expect_lr(o, 6256, 0.4);          // epoch 5.0002
  expect_lr(o, 37534, 0.4);         // 29.99997
  expect_lr(o, 37535, 0.04);
  expect_lr(o, mid_epoch(60), 0.004);
  expect_lr(o, mid_epoch(80), 0.0004);
  expect_lr(o, mid_epoch(90), 0.00004);
  expect_lr(o, 130000, 0.00004);  // 103.9 epochs: not scaled to the run
  o.train_steps = 1000;
  expect_lr(o, 37535, 0.04);
  EXPECT_NEAR(current_epoch(o, 6256), 6256 / bpe, 1e-5);
}

TEST(LrSchedule, SqueezeNetLinearDecayOverAnEighthOfTheRun) {
  LrScheduleOptions o = default_lr_schedule("squeezenet1_0").value();
  ASSERT_TRUE(validate_lr_schedule(o).ok());
  EXPECT_EQ(o.kind, LrScheduleKind::squeezenet);
  // 0.03 at 1024 images down to 0.005 over 190429 / 8 = 23803 steps, then 0.005.
  expect_lr(o, 0, 0.03);
  expect_lr(o, 11901, 0.025 * (1 - 11901.0 / 23803) + 0.005);
  expect_lr(o, 23803, 0.005);
  expect_lr(o, 190428, 0.005);
  o.train_batch_size = 256;  // the rates scale with the batch
  expect_lr(o, 0, 0.0075);
  expect_lr(o, 23803, 0.00125);
}

TEST(LrSchedule, KindsWithoutDecayEpochsDoNotCheckThem) {
  for (const char* model : {"densenet121", "squeezenet1_1", "efficientnet_b0"}) {
    LrScheduleOptions o = default_lr_schedule(model).value();
    o.decay_epochs = 0;
    EXPECT_TRUE(validate_lr_schedule(o).ok()) << model;
  }
  LrScheduleOptions o = default_lr_schedule("mobilenet_v1").value();
  o.decay_epochs = 0;
  EXPECT_FALSE(validate_lr_schedule(o).ok());
}

TEST(LrSchedule, UnknownModelsAndBadValuesAreRejected) {
  const Result<LrScheduleOptions> unknown = default_lr_schedule("vgg16");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("vgg16"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("inception_v3"), std::string::npos);
  LrScheduleOptions o = default_lr_schedule("inception_v3").value();
  o.train_batch_size = 0;
  EXPECT_FALSE(validate_lr_schedule(o).ok());
  o = default_lr_schedule("inception_v3").value();
  o.decay_epochs = 0;
  EXPECT_FALSE(validate_lr_schedule(o).ok());
}

TEST(LrSchedule, CurrentEpochIsTheIntegerEpoch) {
  const LrScheduleOptions o = default_lr_schedule("inception_v3").value();
  EXPECT_EQ(current_epoch(o, 0), 0);
  EXPECT_EQ(current_epoch(o, 1251), 0);
  EXPECT_EQ(current_epoch(o, 1252), 1);
  EXPECT_EQ(current_epoch(o, 250000), 199);  // 250000 / 1251.14 = 199.8
}

}  // namespace
}  // namespace ic
