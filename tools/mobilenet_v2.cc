// mobilenet_v2: train, evaluate or summarise mobilenet_v2 with the reference application's command
// line (see docs/tutorial.md). Everything happens in ic::run_main;
// --export_dir and --export_best use infer/'s SavedModel export.
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "infer/model_export.h"
#include "train/run_main.h"

int main(int argc, char** argv) {
  ic::use_short_openmp_spin(argv);
  return ic::run_guarded("mobilenet_v2", [&] {
    return ic::run_main("mobilenet_v2", argc, argv,
                        {ic::export_checkpoint_saved_model, ic::remove_export});
  });
}
