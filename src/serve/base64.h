// Standard base64 (RFC 4648, '+' and '/', '=' padding), as TensorFlow Serving's JSON carries
// binary values: {"b64": "..."}. URL-safe '-' and '_' are accepted too.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace ic {

Result<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

}  // namespace ic
