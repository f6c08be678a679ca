// "Did you mean": the known flag name nearest to a mistyped one, for the trainers' parser
// (train_flags.cc) and the other tools' (flag_parser.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ic {

// The candidate within a few edits (insertions, deletions, substitutions) of `name`, the
// nearest first in `candidates`' order; "" when none is that close (a different word, not a
// slip of the keyboard).
std::string nearest_flag_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ic
