// For main() only: runs a program's body and turns any C++ exception that escapes it (a
// std::bad_alloc, a std::filesystem_error, anything a library call did not turn into a Status)
// into one line on stderr and exit code 1, instead of std::terminate's abort and core dump.
// Library code still reports errors as Status values; this is the last line of defence.
#pragma once

#include <cstdio>
#include <exception>
#include <new>

namespace ic {

template <typename Body>
int run_guarded(const char* program, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory (std::bad_alloc); stopping\n", program);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unexpected error: %s\n", program, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unexpected error of unknown type\n", program);
  }
  std::fflush(stdout);
  return 1;
}

}  // namespace ic
