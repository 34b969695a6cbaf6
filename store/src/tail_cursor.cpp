#include "tail_cursor.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace brine::store::detail {
namespace {

[[noreturn]] void Bad(const std::string& text) {
  throw std::invalid_argument("not a live-tail cursor of this store: '" + text.substr(0, 64) + "'");
}

std::int64_t Number(const std::string& text, std::size_t& pos) {
  std::int64_t v = 0;
  const char* begin = text.data() + pos;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr == begin) Bad(text);
  pos = static_cast<std::size_t>(ptr - text.data());
  return v;
}

}  // namespace

TailCursor TailCursor::Parse(const std::string& text) {
  if (text.empty() || text[0] != 'p' || text.size() > 2048) Bad(text);
  TailCursor c;
  std::size_t pos = 1;
  c.floor = Number(text, pos);
  if (pos < text.size() && text[pos] == '~') {
    ++pos;
    c.mark = Number(text, pos);
    if (pos < text.size() && text[pos] == '~') {
      ++pos;
      c.xmax = Number(text, pos);
    }
  }
  std::int64_t last = c.floor;
  while (pos < text.size()) {
    if (text[pos] != ',') Bad(text);
    ++pos;
    const std::int64_t lo = Number(text, pos);
    if (pos >= text.size() || text[pos] != '-') Bad(text);
    ++pos;
    const std::int64_t hi = Number(text, pos);
    if (lo <= last + 1 || hi < lo || c.seen.size() >= kMaxRanges) Bad(text);
    c.seen.emplace_back(lo, hi);
    last = hi;
  }
  return c;
}

std::string TailCursor::Format() const {
  std::string out = "p" + std::to_string(floor);
  if (mark) {
    out += "~" + std::to_string(*mark);
    if (xmax) out += "~" + std::to_string(*xmax);
  }
  for (const auto& [lo, hi] : seen) out += "," + std::to_string(lo) + "-" + std::to_string(hi);
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> TailCursor::Holes() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  std::int64_t from = floor + 1;
  for (const auto& [lo, hi] : seen) {
    if (lo > from) out.emplace_back(from, lo - 1);
    from = hi + 1;
  }
  return out;
}

bool TailCursor::Seen(std::int64_t id) const {
  if (id <= floor) return true;
  for (const auto& [lo, hi] : seen) {
    if (id >= lo && id <= hi) return true;
  }
  return false;
}

bool TailCursor::Mark(std::int64_t id) {
  if (Seen(id)) return true;
  auto it = std::lower_bound(seen.begin(), seen.end(), std::make_pair(id, id));
  const bool joins_prev = it != seen.begin() && std::prev(it)->second + 1 == id;
  const bool joins_next = it != seen.end() && it->first == id + 1;
  const bool joins_floor = id == floor + 1;
  if (joins_floor) {
    RaiseFloor(id);
    return true;
  }
  if (joins_prev && joins_next) {
    std::prev(it)->second = it->second;
    seen.erase(it);
  } else if (joins_prev) {
    std::prev(it)->second = id;
  } else if (joins_next) {
    it->first = id;
  } else {
    if (seen.size() >= kMaxRanges) return false;
    seen.insert(it, {id, id});
  }
  return true;
}

void TailCursor::RaiseFloor(std::int64_t to) {
  if (to <= floor) return;
  floor = to;
  while (!seen.empty() && seen.front().first <= floor + 1) {
    floor = std::max(floor, seen.front().second);
    seen.erase(seen.begin());
  }
  if (mark && *mark <= floor) {
    mark.reset();
    xmax.reset();
  }
}

}  // namespace brine::store::detail
