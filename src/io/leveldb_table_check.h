// A check of a LevelDB-format table's block handles before LevelDB opens it. LevelDB trusts the
// handles in a table's footer and index block: it allocates each block's claimed size before
// reading it, so a hostile or damaged TensorFlow checkpoint index claiming a 32 GiB block made
// the reader allocate 32 GiB (found by fuzz/fuzz_tensor_bundle). This walks the footer and the
// index block (the format of leveldb's doc/table_format.md) and refuses any handle that does
// not lie inside the table, naming the file. LevelDB still does all the reading.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace ic {

Status check_table_block_handles(std::string_view table, const std::string& path);

}  // namespace ic
