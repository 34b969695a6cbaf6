// The PostgreSQL live tail's cursor (Store::TailEvents; docs/web.md, "The
// live tail"). Event ids come from an identity sequence when a row is
// inserted, not when its transaction commits, so two masters can commit out
// of id order: after reading up to id 200, a transaction holding ids 100-199
// may still commit. A cursor that were only "the last id" would skip those.
//
// So the cursor is:
//   floor     every event with id <= floor was given, or never will be
//             committed (its transaction rolled back, or the id was burnt);
//   seen      id ranges above the floor already given (a few: rows arrive
//             almost in order);
//   pending   a candidate floor `mark` (the newest id visible in an earlier
//             read) and `xmax` (the next transaction id of a snapshot taken
//             one read later). Once a read's snapshot has xmin >= xmax,
//             every transaction that could have held an id <= mark has
//             ended, so nothing at or below mark can appear any more and the
//             floor moves up to it. xmax is taken one read (a poll interval)
//             after mark, so a transaction that drew its id from the
//             sequence just before `mark` was read already has its
//             transaction id by then.
// Text form (the SSE `id:` line): "p" floor ["~" mark ["~" xmax]] {"," lo "-" hi}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace brine::store::detail {

struct TailCursor {
  std::int64_t floor = 0;
  std::optional<std::int64_t> mark;
  std::optional<std::int64_t> xmax;
  std::vector<std::pair<std::int64_t, std::int64_t>> seen;  // sorted, disjoint, above floor, not adjacent

  // At most this many seen ranges: a row that would open one more waits in
  // the database until the floor has moved (it is given later, never lost).
  static constexpr std::size_t kMaxRanges = 16;

  // Throws std::invalid_argument for text that Format did not make.
  [[nodiscard]] static TailCursor Parse(const std::string& text);
  [[nodiscard]] std::string Format() const;

  // The highest id given above the floor (the floor when none).
  [[nodiscard]] std::int64_t Top() const { return seen.empty() ? floor : seen.back().second; }
  // The ranges of ids in (floor, Top()) not yet seen: the holes a late
  // commit may still fill.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::int64_t>> Holes() const;
  [[nodiscard]] bool Seen(std::int64_t id) const;
  // False (and nothing changes) when marking `id` would need more than
  // kMaxRanges ranges.
  [[nodiscard]] bool Mark(std::int64_t id);
  // Raises the floor to `to` (ranges at or below it go; a range that starts
  // just above it is folded in).
  void RaiseFloor(std::int64_t to);
};

}  // namespace brine::store::detail
