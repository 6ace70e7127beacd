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

bool contains(const Range& r, int64_t key) {
  return rank(r.lower) <= key && key < rank(r.upper);
}

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
  constexpr Wide kMin = std::numeric_limits<int64_t>::min();
  Wide first = static_cast<Wide>(n) * size;
  if (first > type_max) return false;
  // The lowest partition starts below int64's minimum when the size does
  // not divide it: its first id is that minimum (a sequence that starts at
  // MINVALUE draws it first), as its bound is MINVALUE.
  if (first < kMin) {
    if (first + size - 1 < kMin) return false;
    first = kMin;
  }
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

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Far enough past every time type's limits that no window there matters,
// near enough that day arithmetic cannot overflow.
constexpr int64_t kDayLimit = int64_t{1} << 40;
// A key this close to int64's ends is past every time type's limits (the
// zone's offset cannot overflow it), so it has no local time to convert.
constexpr int64_t kLocalLimit = std::numeric_limits<int64_t>::max() - 2 * 86400LL * 1000000LL;

int64_t clamp64(Wide v) {
  constexpr Wide kMax = std::numeric_limits<int64_t>::max();
  constexpr Wide kMin = std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::max(kMin, std::min(kMax, v)));
}

// 2000-01-03, the first Monday on or after 2000-01-01: weeks start there.
constexpr int64_t kFirstMonday = 2;

std::string pad(int64_t v, int width) {
  std::string digits = std::to_string(v);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// A date as ISO writes it, the year of a BC date as its number BC.
std::string fmt_date(int64_t year, int month, int day, const char* sep) {
  int64_t shown = year <= 0 ? 1 - year : year;
  return pad(shown, 4) + sep + pad(month, 2) + sep + pad(day, 2);
}

}  // namespace

int64_t days_from_civil(int64_t year, int month, int day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468 - 10957;  // 1970-01-01 is day -10957
}

void civil_from_days(int64_t days, int64_t* year, int* month, int* day) {
  const int64_t z = days + 10957 + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *year = yoe + era * 400 + (*month <= 2);
}

int64_t KeySpec::fingerprint() const {
  if (cut == Cut::kIds) return step;
  // FNV-1a over what defines the windows.
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  mix(static_cast<uint64_t>(cut));
  mix(static_cast<uint64_t>(date_key) | (static_cast<uint64_t>(zoned) << 1));
  mix(static_cast<uint64_t>(step));
  for (const char* c = zone; *c != '\0'; ++c) mix(static_cast<unsigned char>(*c));
  return static_cast<int64_t>(h | (uint64_t{1} << 63));
}

bool operator==(const KeySpec& a, const KeySpec& b) {
  return a.cut == b.cut && a.date_key == b.date_key && a.zoned == b.zoned && a.step == b.step &&
         a.min == b.min && a.max == b.max && std::strncmp(a.zone, b.zone, kZoneNameSize) == 0;
}

IntervalCut cut_of_interval(int32_t months, int32_t days, int64_t us, bool date_key) {
  IntervalCut out;
  const int kinds = (months != 0) + (days != 0) + (us != 0);
  if (kinds == 0 || months < 0 || days < 0 || us < 0) {
    out.why = "it is not greater than zero";
    return out;
  }
  if (kinds > 1) {
    out.why = "it mixes months, days and times of day";
    return out;
  }
  if (months != 0) {
    if (12 % months != 0) {
      out.why = "its months do not divide a year";
      return out;
    }
    out = {true, Cut::kMonths, months, {}};
    return out;
  }
  if (days != 0) {
    if (days != 1 && days != 7) {
      out.why = "only 1 day and 1 week are calendar windows of days";
      return out;
    }
    out = {true, Cut::kDays, days, {}};
    return out;
  }
  if (date_key) {
    out.why = "a date key has no time of day";
    return out;
  }
  if (us % 1000000 != 0 || us >= kUsPerDay || kUsPerDay % us != 0) {
    out.why = us >= kUsPerDay ? "a window of a day or longer is given in days"
                              : "it does not divide a day into whole seconds";
    return out;
  }
  out = {true, Cut::kMicroseconds, us, {}};
  return out;
}

KeySpace KeySpace::ids(int64_t size, int64_t min, int64_t max) {
  KeySpec spec;
  spec.cut = Cut::kIds;
  spec.step = size;
  spec.min = min;
  spec.max = max;
  return KeySpace(spec);
}

int64_t KeySpace::local_us(int64_t key) const {
  if (!spec_.zoned || zone_ == nullptr) return key;
  if (key < -kLocalLimit || key > kLocalLimit) return key;
  return zone_->local_of(key);
}

int64_t KeySpace::local_day(int64_t key) const {
  if (spec_.date_key) return key;
  return floor_div(local_us(key), kUsPerDay);
}

Wide KeySpace::key_of_day(int64_t day) const {
  if (spec_.date_key) return day;
  Wide local = static_cast<Wide>(day) * kUsPerDay;
  if (!spec_.zoned || zone_ == nullptr || local < -kLocalLimit || local > kLocalLimit) return local;
  return zone_->utc_of(static_cast<int64_t>(local));
}

Wide KeySpace::lower_of(int64_t n) const {
  switch (spec_.cut) {
    case Cut::kIds:
    case Cut::kMicroseconds:
      return static_cast<Wide>(n) * spec_.step;
    case Cut::kDays: {
      Wide day = static_cast<Wide>(n) * spec_.step + (spec_.step == 7 ? kFirstMonday : 0);
      if (day > kDayLimit) return static_cast<Wide>(1) << 100;
      if (day < -kDayLimit) return -(static_cast<Wide>(1) << 100);
      return key_of_day(static_cast<int64_t>(day));
    }
    case Cut::kMonths: {
      Wide month = static_cast<Wide>(n) * spec_.step;
      if (month > kDayLimit / 31) return static_cast<Wide>(1) << 100;
      if (month < -kDayLimit / 31) return -(static_cast<Wide>(1) << 100);
      int64_t m = static_cast<int64_t>(month);
      int64_t year = 2000 + floor_div(m, 12);
      int mon = static_cast<int>(m - floor_div(m, 12) * 12) + 1;
      return key_of_day(days_from_civil(year, mon, 1));
    }
  }
  return 0;
}

int64_t KeySpace::number_of(int64_t key) const {
  int64_t n = 0;
  switch (spec_.cut) {
    case Cut::kIds:
    case Cut::kMicroseconds:
      return partition_number(key, spec_.step);
    case Cut::kDays:
      n = floor_div(local_day(key) - (spec_.step == 7 ? kFirstMonday : 0), spec_.step);
      break;
    case Cut::kMonths: {
      int64_t year = 0;
      int month = 0, day = 0;
      civil_from_days(local_day(key), &year, &month, &day);
      n = floor_div((year - 2000) * 12 + (month - 1), spec_.step);
      break;
    }
  }
  // A zone's midnight can be skipped or repeated: the windows are what
  // lower_of says, so the number is checked against them.
  for (int i = 0; i < 4 && lower_of(n) > key; ++i) --n;
  for (int i = 0; i < 4 && lower_of(n + 1) <= key; ++i) ++n;
  return n;
}

bool KeySpace::first_key_of(int64_t n, int64_t* key) const {
  if (spec_.cut == Cut::kIds) return first_id_of(n, spec_.step, spec_.max, key);
  Wide lower = lower_of(n);
  if (lower > spec_.max) return false;
  if (lower_of(n + 1) <= spec_.min) return false;
  *key = static_cast<int64_t>(std::max(lower, static_cast<Wide>(spec_.min)));
  return true;
}

namespace {

// A window wholly past a limit is [MAXVALUE, MAXVALUE) or [MINVALUE,
// MINVALUE): empty, never a bound outside the type.
Range cut_to_type(Wide lo, Wide hi, int64_t min, int64_t max) {
  Range out;
  out.lower = lo <= min  ? Bound::min()
              : lo > max ? Bound::max()
                         : Bound::at(static_cast<int64_t>(lo));
  out.upper = hi > max    ? Bound::max()
              : hi <= min ? Bound::min()
                          : Bound::at(static_cast<int64_t>(hi));
  return out;
}

}  // namespace

Range KeySpace::window(int64_t n) const {
  return cut_to_type(lower_of(n), lower_of(n + 1), spec_.min, spec_.max);
}

Range KeySpace::covering(int64_t key, const std::vector<Range>& existing) const {
  if (spec_.cut == Cut::kIds)
    return covering_range(key, spec_.step, existing, spec_.min, spec_.max);
  const int64_t n = number_of(key);
  Wide lo = lower_of(n);
  Wide hi = lower_of(n + 1);
  for (const Range& r : existing) {
    Wide upper = rank(r.upper);
    Wide lower = rank(r.lower);
    if (upper <= key) lo = std::max(lo, upper);
    if (lower > key) hi = std::min(hi, lower);
  }
  return cut_to_type(lo, hi, spec_.min, spec_.max);
}

int64_t KeySpace::mark_of(int64_t n, int percent) const {
  if (spec_.cut == Cut::kIds) return partitions::mark_of(n, spec_.step, percent);
  Wide lo = lower_of(n);
  Wide hi = lower_of(n + 1);
  return clamp64(lo + (hi - lo) * percent / 100);
}

int64_t KeySpace::key_at(int64_t now) const {
  return spec_.date_key ? floor_div(now, kUsPerDay) : now;
}

int64_t KeySpace::time_of(int64_t key) const {
  return spec_.date_key ? clamp64(static_cast<Wide>(key) * kUsPerDay) : key;
}

std::string KeySpace::key_text(int64_t key) const {
  if (!is_time()) return std::to_string(key);
  int64_t day = spec_.date_key ? key : floor_div(key, kUsPerDay);
  int64_t year = 0;
  int month = 0, mday = 0;
  civil_from_days(day, &year, &month, &mday);
  std::string out = fmt_date(year, month, mday, "-");
  if (!spec_.date_key) {
    int64_t us = key - day * kUsPerDay;
    int64_t secs = us / 1000000;
    out += " " + pad(secs / 3600, 2) + ":" + pad(secs / 60 % 60, 2) + ":" + pad(secs % 60, 2);
    if (us % 1000000 != 0) out += "." + pad(us % 1000000, 6);
    if (spec_.zoned) out += "+00";
  }
  if (year <= 0) out += " BC";
  return out;
}

std::string KeySpace::bound_sql(const Bound& b) const {
  if (b.kind != Bound::Kind::kValue || !is_time()) return partitions::bound_sql(b);
  return "'" + key_text(b.value) + "'";
}

std::string KeySpace::suffix(const Bound& lower) const {
  if (lower.kind != Bound::Kind::kValue || !is_time()) return partition_suffix(lower);
  int64_t day = local_day(lower.value);
  int64_t year = 0;
  int month = 0, mday = 0;
  civil_from_days(day, &year, &month, &mday);
  std::string out = "_p" + fmt_date(year, month, mday, "");
  if (spec_.cut == Cut::kMicroseconds) {
    int64_t secs = (local_us(lower.value) - day * kUsPerDay) / 1000000;
    out += "_" + pad(secs / 3600, 2) + pad(secs / 60 % 60, 2) + pad(secs % 60, 2);
  }
  if (year <= 0) out += "bc";
  return out;
}

}  // namespace partheal::partitions
