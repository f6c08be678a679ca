#include "backend/backend.h"

namespace ic {

Status check_bindings(const char* op, const OpBindings& b, size_t inputs, size_t outputs,
                      size_t params, size_t state) {
  if (b.inputs.size() != inputs || b.outputs.size() != outputs || b.params.size() != params ||
      b.state.size() != state) {
    return error(op, ": bindings have ", b.inputs.size(), " inputs, ", b.outputs.size(),
                 " outputs, ", b.params.size(), " params, ", b.state.size(), " state; expected ",
                 inputs, ", ", outputs, ", ", params, ", ", state);
  }
  for (const void* p : b.inputs)
    if (!p) return error(op, ": null input pointer");
  for (void* p : b.outputs)
    if (!p) return error(op, ": null output pointer");
  for (void* p : b.params)
    if (!p) return error(op, ": null parameter pointer");
  for (void* p : b.state)
    if (!p) return error(op, ": null state pointer");
  return Status();
}

}  // namespace ic
