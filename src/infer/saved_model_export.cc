#include "infer/saved_model_export.h"

#include "infer/saved_model_graph.h"
#include "io/file_system.h"
#include "io/tensor_bundle.h"

namespace ic {

Status write_saved_model(const InferenceModel& model, const std::string& dir) {
  // The graph's batch size does not matter: the export's batch dimension is -1.
  IC_ASSIGN_OR_RETURN(Graph graph, build_inference_graph(model, 1));
  IC_ASSIGN_OR_RETURN(SavedModelGraph exported, saved_model_graph(graph, model.meta.preprocessing));

  std::vector<TensorView> tensors;
  for (const std::string& name : exported.variables) {
    auto found = model.weights.find(name);
    if (found == model.weights.end())
      return error(model.checkpoint, ": no tensor ", name, " for the SavedModel's variables");
    const TensorEntry& entry = found->second;
    tensors.push_back(TensorView{entry.name, entry.dtype, entry.shape, entry.bytes.data()});
  }
  // The checkpoint's metadata travels in the bundle (one more entry, which TensorFlow's restore
  // never asks for), so load_for_inference can read this export back as the model it is.
  std::map<std::string, std::string> metadata = checkpoint_metadata(model.meta);
  metadata["source"] = model.checkpoint;
  metadata["weights"] = "inference (exponential moving averages where the checkpoint has them)";
  metadata[kExportGlobalStepKey] = std::to_string(model.global_step);
  // Through the seam (a no-op on an object store); saved_model.pb is written last, so a
  // poller that waits for it (TF Serving) never loads half an export.
  IC_RETURN_IF_ERROR(make_dirs(join_path(dir, "variables")));
  IC_RETURN_IF_ERROR(write_tensor_bundle(join_path(dir, "variables/variables"), metadata, tensors));

  std::string bytes;
  if (!exported.saved_model.SerializeToString(&bytes))
    return error("cannot serialise the SavedModel of ", model.checkpoint);
  return write_file_atomically(join_path(dir, "saved_model.pb"), {bytes});
}

}  // namespace ic
