#include "partitions/key_space.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace partheal::partitions {

namespace {

using Wide = __int128;  // room for n*size and (n+1)*size at the ends of int64

// Orders bounds as PostgreSQL does: MINVALUE < every value < MAXVALUE.
Wide rank(const Bound& b) {
  constexpr Wide kBelow = -(static_cast<Wide>(1) << 100);
  constexpr Wide kAbove = static_cast<Wide>(1) << 100;
  switch (b.kind) {
    case Bound::Kind::kMinValue:
      return kBelow;
    case Bound::Kind::kMaxValue:
      return kAbove;
    case Bound::Kind::kValue:
      break;
  }
  return b.value;
}

}  // namespace

int64_t partition_number(int64_t id, int64_t size) {
  int64_t q = id / size;
  if (id % size != 0 && id < 0) --q;
  return q;
}

int64_t mark_of(int64_t n, int64_t size, int percent) {
  Wide mark = static_cast<Wide>(n) * size + static_cast<Wide>(size) * percent / 100;
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::min(mark, kMax));
}

bool first_id_of(int64_t n, int64_t size, int64_t type_max, int64_t* id) {
  Wide first = static_cast<Wide>(n) * size;
  if (first > type_max || first < std::numeric_limits<int64_t>::min()) return false;
  *id = static_cast<int64_t>(first);
  return true;
}

Range covering_range(int64_t id, int64_t size, const std::vector<Range>& existing, int64_t type_min,
                     int64_t type_max) {
  Wide lo = static_cast<Wide>(partition_number(id, size)) * size;
  Wide hi = lo + size;
  for (const Range& r : existing) {
    Wide upper = rank(r.upper);
    Wide lower = rank(r.lower);
    if (upper <= id) lo = std::max(lo, upper);
    if (lower > id) hi = std::min(hi, lower);
  }
  Range out;
  out.lower = lo <= type_min ? Bound::min() : Bound::at(static_cast<int64_t>(lo));
  out.upper = hi > type_max ? Bound::max() : Bound::at(static_cast<int64_t>(hi));
  return out;
}

std::string partition_suffix(const Bound& lower) {
  switch (lower.kind) {
    case Bound::Kind::kMinValue:
      return "_pmin";
    case Bound::Kind::kMaxValue:
      return "_pmax";
    case Bound::Kind::kValue:
      break;
  }
  if (lower.value >= 0) return "_p" + std::to_string(lower.value);
  // Written digit by digit so that INT64_MIN needs no negation.
  std::string digits = std::to_string(lower.value);
  return "_pm" + digits.substr(1);
}

std::string value_suffix(bool is_time, const std::string& text) {
  std::string out = "_p";
  if (is_time) {
    for (size_t i = 0; i < text.size() && i < 10; ++i)
      if (std::isdigit(static_cast<unsigned char>(text[i]))) out += text[i];
    std::string time = text.size() >= 19 ? text.substr(11, 8) : std::string("00:00:00");
    if (time != "00:00:00") {
      out += '_';
      for (char c : time)
        if (std::isdigit(static_cast<unsigned char>(c))) out += c;
    }
    return out;
  }
  for (char c : text) {
    if (c == '-')
      out += 'm';
    else if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      out += '_';
  }
  return out;
}

std::string bound_sql(const Bound& b) {
  switch (b.kind) {
    case Bound::Kind::kMinValue:
      return "MINVALUE";
    case Bound::Kind::kMaxValue:
      return "MAXVALUE";
    case Bound::Kind::kValue:
      break;
  }
  return std::to_string(b.value);
}

}  // namespace partheal::partitions
