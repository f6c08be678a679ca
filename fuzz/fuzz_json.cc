// The JSON reader of safetensors headers (io/json.h). A parsed document's strings must quote
// back (json_quote) to text that parses to the same string.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "io/json.h"

namespace {

void check(const ic::JsonValue& value, int depth) {
  if (depth > 70) std::abort();  // parse_json promises to refuse nesting deeper than 64
  switch (value.kind) {
    case ic::JsonValue::Kind::string: {
      ic::Result<ic::JsonValue> again = ic::parse_json(ic::json_quote(value.text));
      if (!again.ok() || again->kind != ic::JsonValue::Kind::string || again->text != value.text) {
        std::abort();
      }
      break;
    }
    case ic::JsonValue::Kind::number: (void)value.as_int64(); break;
    case ic::JsonValue::Kind::array:
      for (const ic::JsonValue& item : value.items) check(item, depth + 1);
      break;
    case ic::JsonValue::Kind::object:
      for (const auto& [key, item] : value.members) {
        if (value.find(key) == nullptr) std::abort();
        check(item, depth + 1);
      }
      break;
    default: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ic::Result<ic::JsonValue> value = ic::parse_json(ic::fuzz::as_view(data, size));
  if (value.ok()) check(*value, 0);
  return 0;
}
