// Log: dashcam's own structured log. One JSON object per line on stderr:
//   {"ts":"2026-11-29T10:23:15.123Z","level":"info","event":"listening","addr":"127.0.0.1:9200"}
// `event` is a short stable name; the other keys are the event's fields.
// Callers must never pass request secrets (Authorization headers, redacted
// values) as fields.
//
// Thread-safety: all methods may be called from any thread; each line is
// written whole. The Log is created in main and passed down by reference.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

namespace spdlog {
class logger;
}

namespace dashcam {

class Log {
 public:
  struct Field {
    Field(std::string_view k, std::string_view v) : key(k), value(v) {}
    Field(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
    Field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
    Field(std::string_view k, std::int64_t v) : key(k), value(v) {}
    Field(std::string_view k, int v) : key(k), value(std::int64_t{v}) {}
    Field(std::string_view k, unsigned v) : key(k), value(std::int64_t{v}) {}
    Field(std::string_view k, std::uint64_t v) : key(k), value(static_cast<std::int64_t>(v)) {}
    Field(std::string_view k, double v) : key(k), value(v) {}
    Field(std::string_view k, bool v) : key(k), value(v) {}

    std::string_view key;
    std::variant<std::string_view, std::int64_t, double, bool> value;
  };
  using Fields = std::initializer_list<Field>;

  // Writes to stderr. `debug` enables Debug lines.
  explicit Log(bool debug = false);
  // Discards everything (tests).
  static Log Null();
  ~Log();
  Log(Log&&) noexcept;

  void Debug(std::string_view event, Fields fields = {}) const;
  void Info(std::string_view event, Fields fields = {}) const;
  void Warn(std::string_view event, Fields fields = {}) const;
  void Error(std::string_view event, Fields fields = {}) const;

  // The JSON line for an event, without the trailing newline (exposed for tests).
  static std::string Format(std::string_view level, std::string_view event, Fields fields);

 private:
  struct NullTag {};
  explicit Log(NullTag);
  void Write(int level, std::string_view name, std::string_view event, Fields fields) const;

  std::shared_ptr<spdlog::logger> logger_;  // null: discard
};

}  // namespace dashcam
