// A small seeded random source whose output is fixed by its seed alone.
//
// The standard <random> engines are portable but its distributions are not
// (each library may draw differently), and brine-sim promises the same events
// for the same seed, byte for byte. So the generator (xoshiro256**, seeded
// through splitmix64) and the few distributions the fleet needs are written
// out here.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace brine::sim {

// splitmix64: one step; also used to derive independent seeds.
[[nodiscard]] inline std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A seed for a sub-stream, from a parent seed and a label, so each part of the
// fleet (presence, one minion's grains, one return) draws from its own stream
// and a change in one part does not shift the others.
[[nodiscard]] inline std::uint64_t DeriveSeed(std::uint64_t seed, std::uint64_t label) {
  std::uint64_t s = seed ^ (label * 0xd1342543de82ef95ULL);
  (void)SplitMix64(s);
  return SplitMix64(s);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : s_) word = SplitMix64(seed);
  }

  [[nodiscard]] std::uint64_t Next() {
    const std::uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 bits.
  [[nodiscard]] double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  [[nodiscard]] double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n) for n below 2^53; 0 when n is 0.
  [[nodiscard]] std::uint64_t Below(std::uint64_t n) {
    if (n == 0) return 0;
    const auto i = static_cast<std::uint64_t>(Uniform() * static_cast<double>(n));
    return i < n ? i : n - 1;
  }
  // Uniform integer in [lo, hi].
  [[nodiscard]] std::int64_t Between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(Below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  [[nodiscard]] bool Chance(double p) { return Uniform() < p; }
  // Standard normal (Box-Muller, one value per call).
  [[nodiscard]] double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Log-normal with the given median and sigma (of the underlying normal).
  [[nodiscard]] double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
  // Picks an index by weight.
  template <typename Container>
  [[nodiscard]] std::size_t Weighted(const Container& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = Uniform() * total;
    std::size_t i = 0;
    for (double w : weights) {
      if (x < w) return i;
      x -= w;
      ++i;
    }
    return i - 1;
  }

 private:
  static std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// FNV-1a of a string, for labels.
[[nodiscard]] inline std::uint64_t HashLabel(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace brine::sim
