// The whole of inception_v3 / inception_v4 / resnet50's main(): flags in (the model's
// defaults), backend chosen, mode run, messages out, exit code back. The edge where Status
// becomes text: errors go to stderr as "<program>: <message>" with exit code 1; a bad
// command line exits 2; --help prints every flag with its default and exits 0.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"

namespace ic {

// What --export_dir does once the run has finished: export the newest checkpoint of
// model_dir into a new numbered directory under export_dir and return its path. The programs
// pass infer/'s SavedModel export (infer/model_export.h); train/ cannot use infer/ itself.
using ExportNewestCheckpoint =
    std::function<Result<std::string>(const std::string& model_dir, const std::string& export_dir)>;

// With --export_dir set, replica 0 calls `export_newest` after a train, eval or train_and_eval
// run that succeeded; an export that fails fails the program.
int run_main(const std::string& model, int argc, char** argv,
             const ExportNewestCheckpoint& export_newest = nullptr);

}  // namespace ic
