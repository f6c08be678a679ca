// The whole of inception_v3 / inception_v4 / resnet50's main(): flags in (the model's
// defaults), backend chosen, mode run, messages out, exit code back. The edge where Status
// becomes text: errors go to stderr as "<program>: <message>" with exit code 1; a bad
// command line exits 2; --help prints every flag with its default and exits 0.
#pragma once

#include <string>

#include "core/status.h"
#include "dist/communicator.h"
#include "train/best_export.h"

namespace ic {

// With --export_dir set, replica 0 exports through `exporter` (the programs pass infer/'s
// SavedModel export; train/ cannot use infer/ itself): the newest checkpoint after a train,
// eval or train_and_eval run that succeeded, or, with --export_best, each evaluated checkpoint
// that beats the best so far (train/best_export.h). An export that fails fails the program.
//
// `communicator`: the processes to train over, data parallel (a sweep's group of an mpirun
// job, dist/communicator.h split()); null: the launcher's, from the environment.
int run_main(const std::string& model, int argc, char** argv,
             const CheckpointExporter& exporter = {}, Communicator* communicator = nullptr);

}  // namespace ic
