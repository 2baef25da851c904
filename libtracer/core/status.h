// The result of an operation that can fail in an expected way (a bad rule
// file, a missing option): either ok, or a one-line message for the user.
// Expected failures travel as values across module boundaries (analysis ->
// tools, capture -> injection) instead of exceptions, so a caller sees in the
// signature that it has to look, and no exception escapes a library.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tracer {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  // Empty when ok.
  const std::string& message() const { return message_; }

  // The same error with "<prefix>: " in front (e.g. the file and line).
  Status WithPrefix(std::string_view prefix) const {
    if (ok()) return *this;
    return Error(std::string(prefix) + ": " + message_);
  }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  std::string message_;
};

// A value, or the Status saying why there is none. Reading value() of an
// error is a programming mistake, not an expected failure: it aborts with the
// message rather than throwing.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).ok()) Die("StatusOr built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  T& value() & { return Checked(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return value(); }

 private:
  [[noreturn]] static void Die(const std::string& what) {
    std::fprintf(stderr, "tracer: internal error: %s\n", what.c_str());
    std::abort();
  }
  T& Checked() {
    if (!ok()) Die("value() of an error: " + std::get<Status>(state_).message());
    return std::get<T>(state_);
  }

  std::variant<Status, T> state_;
};

}  // namespace tracer
