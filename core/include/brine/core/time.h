// Instants inside brine are UTC microseconds; text appears only at the edges.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <date/date.h>

namespace brine {

using Micros = date::sys_time<std::chrono::microseconds>;

// Where "now" comes from; injected so tests are deterministic.
class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual Micros Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] Micros Now() const override;
};

// A clock that only moves when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Micros start) : now_(start) {}
  [[nodiscard]] Micros Now() const override { return now_; }
  void Set(Micros t) { now_ = t; }
  void Advance(std::chrono::microseconds d) { now_ += d; }

 private:
  Micros now_;
};

// Microseconds since the Unix epoch, and back.
[[nodiscard]] inline std::int64_t ToUnixMicros(Micros t) { return t.time_since_epoch().count(); }
[[nodiscard]] inline Micros FromUnixMicros(std::int64_t us) {
  return Micros(std::chrono::microseconds(us));
}

// Salt's `_stamp`: datetime.utcnow().isoformat(), `YYYY-MM-DDTHH:MM:SS.ffffff`,
// the fraction left out when it is zero.
[[nodiscard]] std::string FormatStamp(Micros t);
// Parses a `_stamp` with or without the fraction (1-6 digits), `T` or space
// between date and time. nullopt when it is not one.
[[nodiscard]] std::optional<Micros> ParseStamp(std::string_view text);

// SQLite's own text form, `YYYY-MM-DD HH:MM:SS.SSS` (milliseconds, truncated).
[[nodiscard]] std::string FormatSqliteTime(Micros t);

}  // namespace brine
