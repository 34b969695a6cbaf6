// A std::thread for tests that is joined on every path: a REQUIRE that throws
// while it runs unwinds the test (and runs the destructors that kill its child
// processes) instead of calling std::terminate on a joinable thread.
#pragma once

#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>

namespace brine::test {

class JoiningThread {
 public:
  JoiningThread() = default;

  // Runs `body` on a new thread. `stop`, when given, is what makes `body`
  // return early (set its flag, close its socket); the destructor calls it
  // before joining, so a test that fails halfway does not wait out the body.
  // An exception from `body` is kept for Join().
  explicit JoiningThread(std::function<void()> body, std::function<void()> stop = {})
      : state_(std::make_shared<State>()), stop_(std::move(stop)) {
    thread_ = std::thread([state = state_, body = std::move(body)] {
      try {
        body();
      } catch (...) {
        state->error = std::current_exception();
      }
    });
  }

  // Stops (when a stop was given) and joins. An exception of the body that
  // Join() never returned is printed to stderr: a destructor must not throw.
  ~JoiningThread() { Finish(); }

  JoiningThread(JoiningThread&&) noexcept = default;
  JoiningThread& operator=(JoiningThread&& other) noexcept {
    if (this != &other) {
      Finish();
      state_ = std::move(other.state_);
      thread_ = std::move(other.thread_);
      stop_ = std::move(other.stop_);
    }
    return *this;
  }
  JoiningThread(const JoiningThread&) = delete;
  JoiningThread& operator=(const JoiningThread&) = delete;

  // Waits for the body to return; rethrows what it threw (once).
  void Join() {
    if (thread_.joinable()) thread_.join();
    if (state_ && state_->error) std::rethrow_exception(std::exchange(state_->error, nullptr));
  }

  // Calls the stop (if any), then Join().
  void StopAndJoin() {
    if (stop_ && thread_.joinable()) stop_();
    Join();
  }

  [[nodiscard]] bool joinable() const { return thread_.joinable(); }

 private:
  struct State {
    std::exception_ptr error;
  };

  void Finish() noexcept {
    if (!thread_.joinable()) return;
    try {
      if (stop_) stop_();
    } catch (...) {
    }
    thread_.join();
    if (state_ && state_->error) {
      try {
        std::rethrow_exception(std::exchange(state_->error, nullptr));
      } catch (const std::exception& e) {
        std::cerr << "brine::test::JoiningThread: the thread threw, and nobody joined it to see: " << e.what() << "\n";
      } catch (...) {
        std::cerr << "brine::test::JoiningThread: the thread threw a non-exception, and nobody joined it to see\n";
      }
    }
  }

  std::shared_ptr<State> state_;  // shared with the thread, which may outlive a move
  std::thread thread_;
  std::function<void()> stop_;
};

}  // namespace brine::test
