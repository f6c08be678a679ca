// Test-only driver for tests/interop/run.sh until the export_model tool (--format=onnx) is on
// this branch: writes the ONNX file of a model directory's latest checkpoint.
//   onnx_export_driver MODEL_DIR OUT.onnx
#include <cstdio>

#include "core/main_guard.h"
#include "infer/onnx_export.h"
#include "infer/trained_model.h"

int main(int argc, char** argv) {
  return ic::run_guarded("onnx_export_driver", [&]() {
    if (argc != 3) {
      std::fprintf(stderr, "usage: onnx_export_driver MODEL_DIR OUT.onnx\n");
      return 2;
    }
    ic::Result<ic::TrainedModel> model = ic::load_trained_model(argv[1], "");
    ic::Status written = model.ok() ? ic::export_onnx(*model, argv[2]) : model.status();
    if (!written.ok()) {
      std::fprintf(stderr, "onnx_export_driver: %s\n", written.message().c_str());
      return 1;
    }
    std::printf("wrote %s from %s (global step %lld)\n", argv[2], model->checkpoint.c_str(),
                static_cast<long long>(model->global_step));
    return 0;
  });
}
