#include "storage/log.h"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "storage/json_text.h"
#include "storage/time_format.h"

namespace dashcam {
namespace {

void AppendValue(std::string& out, const Log::Field& f) {
  if (auto* s = std::get_if<std::string_view>(&f.value)) {
    AppendJsonString(out, *s);
  } else if (auto* i = std::get_if<std::int64_t>(&f.value)) {
    out += fmt::format("{}", *i);
  } else if (auto* d = std::get_if<double>(&f.value)) {
    out += fmt::format("{}", *d);
  } else {
    out += std::get<bool>(f.value) ? "true" : "false";
  }
}

}  // namespace

Log::Log(bool debug) {
  // The sink is private to this Log (not registered globally).
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  logger_ = std::make_shared<spdlog::logger>("dashcam", std::move(sink));
  logger_->set_pattern("%v");
  logger_->set_level(debug ? spdlog::level::debug : spdlog::level::info);
  logger_->flush_on(spdlog::level::debug);
}

Log::Log(NullTag) {}
Log Log::Null() {
  return Log(NullTag{});
}
Log::~Log() = default;
Log::Log(Log&&) noexcept = default;

std::string Log::Format(std::string_view level, std::string_view event, Fields fields) {
  std::string line = "{\"ts\":\"";
  line += FormatRfc3339Ms(WallClockMs());
  line += "\",\"level\":\"";
  line += level;
  line += "\",\"event\":";
  AppendJsonString(line, event);
  for (const Field& f : fields) {
    line.push_back(',');
    AppendJsonString(line, f.key);
    line.push_back(':');
    AppendValue(line, f);
  }
  line.push_back('}');
  return line;
}

void Log::Write(int level, std::string_view name, std::string_view event, Fields fields) const {
  if (!logger_ || !logger_->should_log(static_cast<spdlog::level::level_enum>(level))) return;
  logger_->log(static_cast<spdlog::level::level_enum>(level), Format(name, event, fields));
}

void Log::Debug(std::string_view e, Fields f) const {
  Write(spdlog::level::debug, "debug", e, f);
}
void Log::Info(std::string_view e, Fields f) const {
  Write(spdlog::level::info, "info", e, f);
}
void Log::Warn(std::string_view e, Fields f) const {
  Write(spdlog::level::warn, "warn", e, f);
}
void Log::Error(std::string_view e, Fields f) const {
  Write(spdlog::level::err, "error", e, f);
}

}  // namespace dashcam
