// Status and Result<T>: how every fallible call below the HTTP layer reports
// failure. Errors are values; no exception crosses a module boundary.
//
// A Status is cheap to copy when ok (no allocation). "Not found" is a normal
// outcome and is usually expressed with std::optional rather than a Status.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dashcam {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller sent something malformed
  kNotFound,          // a named thing does not exist
  kAlreadyExists,     // a unique key is taken
  kTooLarge,          // the input exceeds a size limit
  kOverloaded,        // cannot take this now; retry later
  kUnavailable,       // storage cannot serve (closed, shutting down)
  kNoSpace,           // the disk (or the test quota) is full: nothing was written; retry later
  kDeadlineExceeded,  // the operation ran out of time
  kCorruption,        // on-disk data is damaged
  kIoError,           // the operating system reported a failure
  kInternal,          // a bug
};

class Status {
 public:
  Status() = default;  // ok

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status TooLarge(std::string msg) { return {StatusCode::kTooLarge, std::move(msg)}; }
  static Status Overloaded(std::string msg) { return {StatusCode::kOverloaded, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status NoSpace(std::string msg) { return {StatusCode::kNoSpace, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The same code with another message.
  Status WithMessage(std::string msg) const { return {code_, std::move(msg)}; }
  // "invalid_argument: <message>", for logs.
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Name of a code in snake_case ("overloaded"), stable: it appears in API error bodies.
std::string_view StatusCodeName(StatusCode code);

// Either a T or a non-ok Status.
template <class T>
class Result {
 public:
  // An empty result (Asio's completion machinery default-constructs values).
  Result() : v_(Status::Internal("no result")) {}
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace dashcam
