#include "models/model.h"

#include <cmath>

#include "graph/precision_pass.h"
#include "models/model_spec.h"
#include "models/slim_layers.h"

namespace ic {
namespace {

using models::NetworkOutputs;

// Checks every option but the image size; the message names the option and what it allows.
Status check_options(const ModelOptions& o) {
  if (o.batch_size < 1) return error(o.name, ": batch_size must be >= 1, got ", o.batch_size);
  if (o.num_classes < 2) return error(o.name, ": num_classes must be >= 2, got ", o.num_classes);
  if (!(o.depth_multiplier > 0.f) || !std::isfinite(o.depth_multiplier))
    return error(o.name, ": depth_multiplier must be greater than zero, got ", o.depth_multiplier);
  if (o.min_depth < 1) return error(o.name, ": min_depth must be >= 1, got ", o.min_depth);
  if (!(o.dropout_keep_prob > 0.f && o.dropout_keep_prob <= 1.f))
    return error(o.name, ": dropout_keep_prob must be in (0, 1], got ", o.dropout_keep_prob);
  if (!(o.batch_norm_decay >= 0.f && o.batch_norm_decay < 1.f))
    return error(o.name, ": batch_norm_decay must be in [0, 1), got ", o.batch_norm_decay);
  if (!(o.batch_norm_epsilon > 0.f))
    return error(o.name, ": batch_norm_epsilon must be > 0, got ", o.batch_norm_epsilon);
  if (!(o.label_smoothing >= 0.f && o.label_smoothing <= 1.f))
    return error(o.name, ": label_smoothing must be in [0, 1], got ", o.label_smoothing);
  if (!(o.aux_loss_weight >= 0.f) || !std::isfinite(o.aux_loss_weight))
    return error(o.name, ": aux_loss_weight must be >= 0, got ", o.aux_loss_weight);
  if (o.compute == DType::i32) return error(o.name, ": compute type must be f32 or bf16");
  if (o.activations != DType::f32 && o.activations != DType::bf16)
    return error(o.name, ": activations must be f32 or bf16");
  return Status();
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelSpec* spec : model_registry()) names.emplace_back(spec->name);
  return names;
}

Result<ModelOptions> default_model_options(const std::string& name) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(name));
  return spec->network;
}

Result<ImageSideRange> supported_image_sides(const ModelOptions& options) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(options.name));
  // The networks' grids are integer chains; scanning sides is cheap and needs no algebra.
  constexpr int kScanLimit = 4096;
  ImageSideRange range{0, 0};
  for (int side = 1; side <= kScanLimit; ++side) {
    if (!spec->side_fits(options, side)) continue;
    if (range.min == 0) range.min = side;
    range.max = side;
  }
  if (range.max == kScanLimit) range.max = ImageSideRange{}.max;  // no upper limit
  return range;
}

Result<Graph> build_model(const ModelOptions& options) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(options.name));
  IC_RETURN_IF_ERROR(check_options(options));
  IC_ASSIGN_OR_RETURN(const ImageSideRange range, supported_image_sides(options));
  for (const auto& [what, side] : {std::pair{"height", options.height}, {"width", options.width}}) {
    if (side >= range.min && side <= range.max && spec->side_fits(options, side)) continue;
    const std::string upper =
        range.max == ImageSideRange{}.max ? "" : " to " + std::to_string(range.max);
    const char* aux = options.aux_logits && spec->network.aux_logits ? " with AuxLogits" : "";
    return error(options.name, aux, " takes image sides from ", range.min, upper, ", got ", what,
                 " ", side);
  }

  GraphBuilder builder(options.training);
  const ValueId images =
      builder.images(Shape{options.batch_size, options.height, options.width, 3});
  const ValueId labels = options.build_losses ? builder.labels(options.batch_size) : kNone;

  const NetworkOutputs out = spec->build(builder, images, options);
  builder.set_logits(out.logits);

  // The reference's loss terms, main first: softmax cross-entropy with label smoothing on the
  // logits (weight 1) and on AuxLogits (weight 0.4 by default).
  if (options.build_losses) {
    builder.softmax_cross_entropy(out.logits, labels, options.label_smoothing, 1.f,
                                  "losses/softmax_cross_entropy");
    if (out.aux_logits != kNone)
      builder.softmax_cross_entropy(out.aux_logits, labels, options.label_smoothing,
                                    options.aux_loss_weight, "losses/aux_softmax_cross_entropy");
  }
  if (options.activations == DType::bf16) return store_activations_in_bf16(builder.finish());
  return builder.finish();
}

}  // namespace ic
