// What a training checkpoint keeps beyond the model so that a resumed run continues exactly as
// the run would have gone on straight through (docs/design.md, "Reproducibility"): the run's id,
// each replica's input position (data/input_position.h) and, data parallel, each replica's own
// batch-norm moving statistics. train/run_loop.cc writes and reads them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/device_reducer.h"
#include "train/model_state.h"

namespace ic {

// The checkpoint metadata key of replica `rank`'s input position.
std::string input_position_key(int rank);
// The checkpoint tensor (f32, [n]) holding replica r's own moving statistics, then their EMA.
inline constexpr char kReplicaStatsPrefix[] = "inception_cpp/replica_moving_statistics/rank_";
// 128 random bits in hex: a new run's id (io/checkpoint_dir.h kRunIdKey).
std::string new_run_id();

// Every rank's value, on rank 0 in rank order (the other ranks get an empty vector). Every rank
// must call it; `mine` may differ in size between ranks.
std::vector<std::string> gather_to_leader(Communicator& comm, const std::string& mine);
std::vector<std::vector<float>> gather_to_leader(Communicator& comm,
                                                 const std::vector<float>& mine);

// The moving statistics (and their EMA when kept) of `state`, as one vector's worth of floats.
size_t moving_statistics_count(ModelState& state);
// With more than one replica: replaces them by their mean over the replicas and returns this
// replica's own values (empty with one replica). Every rank must call it.
std::vector<float> average_moving_statistics(ModelState& state, DeviceReducer& reducer);
// Puts back values average_moving_statistics() returned (or a checkpoint kept).
void restore_moving_statistics(ModelState& state, const std::vector<float>& own);

}  // namespace ic
