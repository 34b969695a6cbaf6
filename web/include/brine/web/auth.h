// brine-web's login: the token file, sessions and the failed-login limit
// (docs/web.md, "Security model").
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "brine/core/time.h"

namespace brine::web {

// Octets of the login token; the file holds them as 64 lowercase hex digits.
inline constexpr std::size_t kTokenBytes = 32;

// `n` random octets from the kernel (getrandom), as lowercase hex. Throws
// std::runtime_error when the kernel gives none.
[[nodiscard]] std::string RandomHex(std::size_t n);

// The token in `path`, creating it at first start: 64 hex digits and "\n",
// mode 0600, made under a random name O_CREAT|O_EXCL|O_NOFOLLOW and renamed
// into place without replacing anything (AtomicFile, Replace::kNever), so a
// reader never sees half a token. An existing file is read with O_NOFOLLOW
// and must be a regular file of this process's user that nobody else may
// read, holding a token. Throws std::runtime_error naming the path and the
// reason (a symlink, another owner, mode other than 0600, bad content).
[[nodiscard]] std::string LoadOrCreateToken(const std::filesystem::path& path);

// Reads the token as LoadOrCreateToken does, never creating it (brine-run's
// brine.web_url). Throws std::runtime_error as it does; a missing file says
// brine-web has not started yet.
[[nodiscard]] std::string ReadToken(const std::filesystem::path& path);

// Equal length and content, in time that depends only on the lengths.
[[nodiscard]] bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Sessions in memory, shared by the server's threads under one lock. A
// session ends `max_age` after login or `idle` after its last use,
// whichever comes first; beyond `max_count` sessions the least recently used
// one is ended. A restart ends them all.
class Sessions {
 public:
  struct Limits {
    std::chrono::seconds max_age{12 * 3600};  // Salt's token_expire
    std::chrono::seconds idle{3600};
    std::size_t max_count = 256;
  };
  struct Session {
    std::string user;
    std::string csrf;  // the token the session's POST forms carry
  };
  // `clock` must outlive the Sessions.
  Sessions(const Clock& clock, Limits limits) : clock_(clock), limits_(limits) {}

  // A new session for `user`; returns its id (32 random octets as hex).
  [[nodiscard]] std::string Create(const std::string& user);
  // The live session `id` names, marking it used; nullopt when unknown,
  // expired or idle too long (and then it is removed).
  [[nodiscard]] std::optional<Session> Use(const std::string& id);
  void End(const std::string& id);
  [[nodiscard]] std::size_t Count();

 private:
  struct Entry {
    Session session;
    Micros created;
    Micros last_used;
  };
  const Clock& clock_;  // outlives this (constructor's contract)
  const Limits limits_;
  std::mutex mutex_;  // guards sessions_
  std::unordered_map<std::string, Entry> sessions_;
};

// Failed logins, counted over a sliding window for the whole server (every
// browser on loopback has the same address, so a per-address limit would
// limit nothing): after `max_failures` in `window`, logins are refused
// without looking at the token until the oldest failure leaves the window.
class LoginLimiter {
 public:
  LoginLimiter(const Clock& clock, std::size_t max_failures, std::chrono::seconds window)
      : clock_(clock), max_failures_(max_failures), window_(window) {}
  [[nodiscard]] bool Allowed();
  void Failed();
  [[nodiscard]] std::int64_t total_failures();

 private:
  void Expire(Micros now);
  const Clock& clock_;  // outlives this
  const std::size_t max_failures_;
  const std::chrono::seconds window_;
  std::mutex mutex_;  // guards the two below
  std::deque<Micros> failures_;
  std::int64_t total_ = 0;
};

}  // namespace brine::web
