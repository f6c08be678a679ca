// The model registry: everything the system knows about one network, in one place. A model
// file (inception_v3.cc, ...) describes itself with a ModelSpec; model_spec.cc lists them. The
// graph builder, the trainer's recipe, the learning-rate schedule and the programs' flag
// defaults all read the spec instead of comparing model names. Adding a model is one new file
// plus one line in model_spec.cc (src/models/README.md shows how).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "models/model.h"

namespace ic {
namespace models {
struct NetworkOutputs;  // slim_layers.h
}

// Which reference application's learning-rate formula a model trains with (train/lr_schedule.h).
enum class LrScheduleKind {
  inception_v3,  // exponential decay every N epochs, optional cold + linear warmup
  inception_v4,  // cold phase, linear warmup, then exponential decay (always warms up)
  resnet50,      // linear warmup, then x0.1 at 30/60/80 of 90 epochs, scaled to the run
  mobilenet,     // exponential decay every N epochs of whole batches (mobilenet.py), floor
  efficientnet,  // linear warmup, then x0.97 every 2.4 epochs (efficientnet utils.py)
  densenet,      // 1/6..5/6 warmup steps over 5 epochs, then x0.1 at 30, 60, 80 and 90 epochs
  squeezenet,    // linear decay to 1/6 of the rate over the first 1/8 of the run (sic)
};

// The reference program's training recipe for the model: the defaults of its flags.
struct ModelRecipe {
  // The optimizer, by its --optimizer name in the trainers' optimizer table
  // (train/optimizer.cc): "sgd", "momentum", "RMS" (RMSProp), ...
  const char* optimizer = "RMS";
  bool nesterov = false;         // momentum with Nesterov's update
  double learning_rate = 0.165;  // per 256 images, scaled by the global batch
  int train_batch_size = 1024;
  int train_steps = 213000;
  LrScheduleKind lr_schedule = LrScheduleKind::inception_v3;
  int learning_rate_decay_epochs = 3;
  bool use_learning_rate_warmup = false;
  int cold_epochs = 2, warmup_epochs = 7;
  double weight_decay = 4e-5;
  bool moving_average = true;  // EMA of the weights, used for evaluation
};

// Flags whose default the reference program sets differently for this model, beyond the
// recipe and the network's defaults (image size, classes): name and value as on the command line.
struct FlagDefault {
  const char* flag;
  const char* value;
};

struct ModelSpec {
  const char* name = "";   // the program's name, and the checkpoints' "model": "inception_v3"
  const char* about = "";  // one line for --help: what the program trains
  // The network's defaults: name, image size, classes, batch norm, label smoothing, aux head.
  ModelOptions network;
  ModelRecipe recipe;
  std::vector<FlagDefault> flag_defaults;
  // Builds the body on `images`; assumes side_fits() accepted the image size.
  models::NetworkOutputs (*build)(GraphBuilder& builder, ValueId images,
                                  const ModelOptions& options) = nullptr;
  // Whether one image side (height or width) fits the network with these options.
  bool (*side_fits)(const ModelOptions& options, int64_t side) = nullptr;
};

// Every registered model, in a fixed order.
const std::vector<const ModelSpec*>& model_registry();
// The spec named `name`; an error listing the known names otherwise.
Result<const ModelSpec*> find_model_spec(const std::string& name);

}  // namespace ic
