// Status and Result<T>: how the library reports failure. Errors are values inside the
// library and become messages (and exit codes) only at the edge, in tools/.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace ic {

// A success or an error message that says what failed and where (file, offset, flag...).
class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kOk = "OK";
    return message_ ? *message_ : kOk;
  }
  // Prefixes context ("reading train-00003: ") to an error; a success stays a success.
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + *message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// Builds an error from streamable parts: error("bad value ", v, " for --mode").
template <typename... Parts>
Status error(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return Status::error(out.str());
}

// A value or the Status that explains why there is none.
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
