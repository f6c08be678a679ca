#include "train/resume_state.h"

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <random>
#include <sstream>

namespace ic {
namespace {

std::vector<float*> arenas(ModelState& state) {
  std::vector<float*> out;
  for (float* arena : {state.state(), state.ema_state()}) {
    if (arena != nullptr) out.push_back(arena);
  }
  return out;
}

// Both gather_to_leader overloads: each rank's value may have its own length, so its size goes
// first.
template <typename Values>
std::vector<Values> gather_values(Communicator& comm, const Values& mine) {
  std::vector<Values> all;
  for (int r = 0; r < comm.size(); ++r) {
    Values value = comm.rank() == r ? mine : Values();
    if (r != 0) {  // broadcast is the collective the communicator has
      uint64_t size = value.size();
      comm.broadcast(&size, sizeof(size), r);
      value.resize(size);
      if (size > 0) comm.broadcast(value.data(), size * sizeof(typename Values::value_type), r);
    }
    if (comm.rank() == 0) all.push_back(std::move(value));
  }
  return all;
}

}  // namespace

std::string input_position_key(int rank) { return "input_position/rank_" + std::to_string(rank); }

std::string new_run_id() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << static_cast<uint32_t>(device());
  return out.str();
}

std::vector<std::string> gather_to_leader(Communicator& comm, const std::string& mine) {
  return gather_values(comm, mine);
}

std::vector<std::vector<float>> gather_to_leader(Communicator& comm,
                                                 const std::vector<float>& mine) {
  return gather_values(comm, mine);
}

size_t moving_statistics_count(ModelState& state) {
  return state.layout().state_count * arenas(state).size();
}

std::vector<float> average_moving_statistics(ModelState& state, DeviceReducer& reducer) {
  if (reducer.size() == 1) return {};
  const size_t count = state.layout().state_count;
  std::vector<float> own;
  for (float* arena : arenas(state)) {
    own.insert(own.end(), arena, arena + count);
    reducer.mean(arena, count);
  }
  return own;
}

void restore_moving_statistics(ModelState& state, const std::vector<float>& own) {
  const size_t count = state.layout().state_count;
  size_t at = 0;
  for (float* arena : arenas(state)) {
    if (at + count > own.size()) return;
    std::copy(own.begin() + static_cast<std::ptrdiff_t>(at),
              own.begin() + static_cast<std::ptrdiff_t>(at + count), arena);
    at += count;
  }
}

}  // namespace ic
