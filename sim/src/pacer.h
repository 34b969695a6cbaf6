// Holds sends to a rate: the i-th event no earlier than start + i / rate.
// It sleeps only when more than a millisecond ahead, so high rates do not pay
// a sleep per event; when it falls behind by more than 100 ms (the master
// pushed back) it forgets the debt instead of bursting to catch up.
#pragma once

#include <chrono>
#include <optional>
#include <thread>

namespace brine::sim {

class Pacer {
 public:
  // `events_per_s` nullopt: no pacing.
  explicit Pacer(std::optional<double> events_per_s) {
    if (events_per_s) interval_ = std::chrono::duration<double>(1.0 / *events_per_s);
  }

  // Blocks until the next event may go.
  void Wait() {
    if (!interval_) return;
    using Clock = std::chrono::steady_clock;
    const auto now = Clock::now();
    if (!next_) next_ = now;
    if (*next_ - now > std::chrono::milliseconds(1)) {
      std::this_thread::sleep_until(*next_);
    } else if (now - *next_ > std::chrono::milliseconds(100)) {
      next_ = now;
    }
    *next_ += std::chrono::duration_cast<Clock::duration>(*interval_);
  }

 private:
  std::optional<std::chrono::duration<double>> interval_;
  std::optional<std::chrono::steady_clock::time_point> next_;
};

}  // namespace brine::sim
