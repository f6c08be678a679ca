// Status and Result<T>: how the library reports failure. Errors are values inside the
// library; a Status carries a code, so that callers tell "not found" from "corrupt" without
// reading the message, and the edges map codes: exit codes (core/exit_code.h), HTTP statuses
// (serve/http_status.h). Messages say what failed and where, for people.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace ic {

// Kinds of failure, named as gRPC and TensorFlow name theirs. A code is set where the error
// starts, and only where some caller or edge acts on the difference; the rest stay internal.
enum class StatusCode {
  ok,
  invalid_argument,    // a bad flag or a bad request: the caller must ask differently
  not_found,           // a file, object, checkpoint or model that is not there
  already_exists,      // something that must not be replaced is in the way
  resource_exhausted,  // over a limit: memory, disk, image pixels, request body size
  unavailable,         // worth trying again later: a remote failure after retries, a full queue
  data_loss,           // corrupt or truncated bytes: a bad CRC, a malformed file
  internal,            // any other failure, and what error(...) without a code gives
  cancelled,           // stopped on request: a stop signal, a shutdown
};

// "NOT_FOUND", "DATA_LOSS", ... ("OK" for ok).
inline const char* status_code_name(StatusCode code) {
  static constexpr const char* kNames[] = {
      "OK",          "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "RESOURCE_EXHAUSTED",
      "UNAVAILABLE", "DATA_LOSS",        "INTERNAL",  "CANCELLED"};
  const auto index = static_cast<size_t>(code);
  return index < std::size(kNames) ? kNames[index] : "UNKNOWN";
}

// A success, or an error: a code and a message that says what failed and where.
class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  // An error; an ok code is taken as internal, so that an error is never ok().
  Status(StatusCode code, std::string message)
      : code_(code == StatusCode::ok ? StatusCode::internal : code), message_(std::move(message)) {}
  static Status error(std::string message) {
    return Status(StatusCode::internal, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const {
    static const std::string kOk = "OK";
    return ok() ? kOk : message_;
  }
  // Prefixes context ("reading train-00003: ") to an error, keeping its code; a success stays
  // a success.
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

// Builds an error from streamable parts: error(StatusCode::not_found, path, ": no such file").
template <typename... Parts>
Status error(StatusCode code, const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return Status(code, out.str());
}
// Without a code the error is internal: error("bad value ", v, " for --mode").
template <typename... Parts>
Status error(const Parts&... parts) {
  return error(StatusCode::internal, parts...);
}

// The codes callers test for, short to write: not_found(path, ": no such file").
template <typename... Parts>
Status invalid_argument(const Parts&... parts) {
  return error(StatusCode::invalid_argument, parts...);
}
template <typename... Parts>
Status not_found(const Parts&... parts) {
  return error(StatusCode::not_found, parts...);
}
template <typename... Parts>
Status already_exists(const Parts&... parts) {
  return error(StatusCode::already_exists, parts...);
}
template <typename... Parts>
Status resource_exhausted(const Parts&... parts) {
  return error(StatusCode::resource_exhausted, parts...);
}
template <typename... Parts>
Status unavailable(const Parts&... parts) {
  return error(StatusCode::unavailable, parts...);
}
template <typename... Parts>
Status data_loss(const Parts&... parts) {
  return error(StatusCode::data_loss, parts...);
}
template <typename... Parts>
Status cancelled(const Parts&... parts) {
  return error(StatusCode::cancelled, parts...);
}

// A value or the Status that explains why there is none (its code included).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT: implicit on purpose
  Result(Status status) : state_(std::move(status)) {}  // NOLINT: must not be ok()

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace ic

#define IC_CONCAT_INNER(a, b) a##b
#define IC_CONCAT(a, b) IC_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function if it is an error.
#define IC_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::ic::Status ic_status_ = (expr);        \
    if (!ic_status_.ok()) return ic_status_; \
  } while (0)

// `IC_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result or returns its error.
#define IC_ASSIGN_OR_RETURN(lhs, expr) \
  IC_ASSIGN_OR_RETURN_IMPL(IC_CONCAT(ic_result_, __LINE__), lhs, expr)
#define IC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
