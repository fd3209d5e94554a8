// Recoverable errors as values. A Status carries a canonical code and a
// message a user can act on; Expected<T> is a value or a Status.
// No exceptions on the data path: code that calls a throwing dependency
// catches at one boundary and converts to a Status.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace brisk {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad input from a user: request, flag, file contents
  kNotFound,           // missing file, unknown model
  kOutOfRange,         // prompt over context, offsets past end of file
  kResourceExhausted,  // queue full, KV pool exhausted
  kUnimplemented,      // valid but unsupported (a quant type we lack)
  kDeadlineExceeded,
  kCancelled,
  kUnavailable,  // draining, not ready
  kDataLoss,     // truncated / corrupt file
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  std::string ToString() const;

  // Prepends context: "loading model: <old message>".
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Status(code_, fmt::format("{}: {}", context, message_));
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidArgument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status OutOfRange(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kOutOfRange, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status DataLoss(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kDataLoss, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status ResourceExhausted(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kResourceExhausted, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status Internal(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

// A value or an error. Minimal stand-in for std::expected (C++23).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace brisk

#define BRISK_CONCAT_INNER(a, b) a##b
#define BRISK_CONCAT(a, b) BRISK_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define RETURN_IF_ERROR(expr)     \
  do {                            \
    ::brisk::Status _st = (expr); \
    if (!_st.ok()) return _st;    \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MaybeX()); binds x or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr)                                                       \
  auto BRISK_CONCAT(_res_, __LINE__) = (expr);                                            \
  if (!BRISK_CONCAT(_res_, __LINE__).ok()) return BRISK_CONCAT(_res_, __LINE__).status(); \
  lhs = std::move(BRISK_CONCAT(_res_, __LINE__)).value()
