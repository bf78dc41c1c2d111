// Status, StatusOr and the string helpers every layer uses to report errors.
//
// strata throws nothing: anything a user, a file or a request can cause is returned as a Status with a
// canonical code (the gRPC set) and a message that says what was expected, what was found and where.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

// Canonical codes; the numbers are gRPC's so that the server can pass them through unchanged.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "INVALID_ARGUMENT", "NOT_FOUND", ... as TensorFlow and gRPC spell them.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);
  Status(const Status& other) : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message with every context prefix: "node 'conv1' (Conv): input X expects rank 4, got 3".
  const std::string& message() const;
  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string ToString() const;

  // Prefixes the message with where the error happened; returns *this so it chains on return statements.
  Status& WithContext(std::string_view context) &;
  Status&& WithContext(std::string_view context) &&;

  // Marks an error as already handled; for the rare place that deliberately drops a Status.
  void IgnoreError() const {}

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

inline bool operator==(const Status& a, const Status& b) { return a.code() == b.code() && a.message() == b.message(); }

// ---- string building (g++ 12 has no <format>) ----

namespace internal {
inline void AppendPiece(std::string* out, std::string_view s) { out->append(s); }
inline void AppendPiece(std::string* out, const char* s) { out->append(s ? s : "(null)"); }
inline void AppendPiece(std::string* out, const std::string& s) { out->append(s); }
inline void AppendPiece(std::string* out, char c) { out->push_back(c); }
inline void AppendPiece(std::string* out, bool b) { out->append(b ? "true" : "false"); }
void AppendPiece(std::string* out, double v);
inline void AppendPiece(std::string* out, float v) { AppendPiece(out, static_cast<double>(v)); }
template <typename T, typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                                  !std::is_same_v<T, char>>>
void AppendPiece(std::string* out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}
template <typename T>
void AppendPiece(std::string* out, const std::vector<T>& v) {
  out->push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out->push_back(',');
    AppendPiece(out, v[i]);
  }
  out->push_back(']');
}
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>, typename = void>
void AppendPiece(std::string* out, E e) {
  AppendPiece(out, static_cast<std::underlying_type_t<E>>(e));
}
}  // namespace internal

// Concatenates strings, numbers (shortest round-trip for floats) and vectors ("[1,2,3]").
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (internal::AppendPiece(&out, args), ...);
  return out;
}

template <typename Container>
std::string StrJoin(const Container& items, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out.append(sep);
    first = false;
    internal::AppendPiece(&out, item);
  }
  return out;
}

// ---- error constructors: InvalidArgumentError("expected ", a, ", got ", b) ----

#define STRATA_DEFINE_ERROR_FN(Fn, Code)                   \
  template <typename... Args>                              \
  Status Fn(const Args&... args) {                         \
    return Status(StatusCode::Code, StrCat(args...));      \
  }
STRATA_DEFINE_ERROR_FN(CancelledError, kCancelled)
STRATA_DEFINE_ERROR_FN(UnknownError, kUnknown)
STRATA_DEFINE_ERROR_FN(InvalidArgumentError, kInvalidArgument)
STRATA_DEFINE_ERROR_FN(DeadlineExceededError, kDeadlineExceeded)
STRATA_DEFINE_ERROR_FN(NotFoundError, kNotFound)
STRATA_DEFINE_ERROR_FN(AlreadyExistsError, kAlreadyExists)
STRATA_DEFINE_ERROR_FN(PermissionDeniedError, kPermissionDenied)
STRATA_DEFINE_ERROR_FN(ResourceExhaustedError, kResourceExhausted)
STRATA_DEFINE_ERROR_FN(FailedPreconditionError, kFailedPrecondition)
STRATA_DEFINE_ERROR_FN(AbortedError, kAborted)
STRATA_DEFINE_ERROR_FN(OutOfRangeError, kOutOfRange)
STRATA_DEFINE_ERROR_FN(UnimplementedError, kUnimplemented)
STRATA_DEFINE_ERROR_FN(InternalError, kInternal)
STRATA_DEFINE_ERROR_FN(UnavailableError, kUnavailable)
STRATA_DEFINE_ERROR_FN(DataLossError, kDataLoss)
#undef STRATA_DEFINE_ERROR_FN

// ---- StatusOr ----

[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const std::string& message);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}                // NOLINT(google-explicit-constructor)
  StatusOr(T&& value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  StatusOr(const Status& status) : status_(status) { CheckNotOk(); }  // NOLINT
  StatusOr(Status&& status) : status_(std::move(status)) { CheckNotOk(); }  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U&&, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, T>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  const T& value() const& {
    if (!ok()) CheckFailed(__FILE__, __LINE__, "StatusOr::value()", status_.ToString());
    return *value_;
  }
  T& value() & {
    if (!ok()) CheckFailed(__FILE__, __LINE__, "StatusOr::value()", status_.ToString());
    return *value_;
  }
  T&& value() && {
    if (!ok()) CheckFailed(__FILE__, __LINE__, "StatusOr::value()", status_.ToString());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void CheckNotOk() {
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK status without a value");
  }
  Status status_;
  std::optional<T> value_;
};

// ---- macros ----

#define STRATA_INTERNAL_CONCAT2(a, b) a##b
#define STRATA_INTERNAL_CONCAT(a, b) STRATA_INTERNAL_CONCAT2(a, b)

#define STRATA_RETURN_IF_ERROR(expr)                      \
  do {                                                    \
    ::strata::Status strata_status_ = (expr);             \
    if (!strata_status_.ok()) return strata_status_;      \
  } while (0)

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_INTERNAL_ASSIGN_OR_RETURN(STRATA_INTERNAL_CONCAT(strata_statusor_, __LINE__), lhs, expr)
#define STRATA_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return std::move(tmp).status();         \
  lhs = std::move(tmp).value()

// CHECK is for strata's own bugs only; bad input must return a Status.
#define STRATA_CHECK(cond, ...)                                                                   \
  do {                                                                                           \
    if (!(cond)) ::strata::CheckFailed(__FILE__, __LINE__, #cond, ::strata::StrCat(__VA_ARGS__)); \
  } while (0)
#ifdef NDEBUG
#define STRATA_DCHECK(cond, ...) \
  do {                           \
  } while (0)
#else
#define STRATA_DCHECK(cond, ...) STRATA_CHECK(cond, __VA_ARGS__)
#endif
#define STRATA_CHECK_OK(expr)                                                                       \
  do {                                                                                             \
    ::strata::Status strata_check_status_ = (expr);                                                \
    if (!strata_check_status_.ok())                                                                \
      ::strata::CheckFailed(__FILE__, __LINE__, #expr, strata_check_status_.ToString());           \
  } while (0)

}  // namespace strata
