// A program's exit status for a Status: the one table every main() (tools/, train/run_main.cc)
// turns its error into, after printing the message. docs/design.md ("Errors") lists it.
#pragma once

#include "core/status.h"

namespace ic {

// 0 success; 2 a bad command line (a flag or argument that cannot work, refused before any
// work is done); 1 every other failure. Scripts and tests read these three only, so the finer
// codes stay in the message rather than in more exit statuses.
inline int exit_code_for(StatusCode code) {
  struct Row {
    StatusCode code;
    int exit_code;
  };
  static constexpr Row kTable[] = {
      {StatusCode::ok, 0},
      {StatusCode::invalid_argument, 2},
  };
  for (const Row& row : kTable) {
    if (row.code == code) return row.exit_code;
  }
  return 1;
}

inline int exit_code_for(const Status& status) { return exit_code_for(status.code()); }

}  // namespace ic
