// The key space: which partition a key belongs to, and the range partheal
// creates for it. No PostgreSQL: integer ids are cut into aligned ranges of
// `size` ids, times into windows by the calendar or by fixed lengths, with
// the zone's rules behind an interface. Every caller (the heal loop,
// create-ahead, partheal_reserve) asks through KeySpace, whatever the key.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace partheal::partitions {

// One end of a range partition. Unbounded ends are PostgreSQL's MINVALUE and
// MAXVALUE; a bound past the key type's range must be written as one of them.
struct Bound {
  enum class Kind { kMinValue, kValue, kMaxValue };
  Kind kind = Kind::kValue;
  int64_t value = 0;

  static Bound min() { return {Kind::kMinValue, 0}; }
  static Bound max() { return {Kind::kMaxValue, 0}; }
  static Bound at(int64_t v) { return {Kind::kValue, v}; }
};

// [lower, upper), as FOR VALUES FROM (lower) TO (upper).
struct Range {
  Bound lower;
  Bound upper;
};

// True when r takes key.
bool contains(const Range& r, int64_t key);

// The partition number n with n*size <= id < (n+1)*size; ids below zero too.
int64_t partition_number(int64_t id, int64_t size);

// The create-ahead mark of partition n: n*size + size*percent/100, the id
// whose appearance asks for partition n+1.
int64_t mark_of(int64_t n, int64_t size, int percent);

// The first id of partition n, or nothing past the key type's maximum; for
// the partition that reaches below int64's minimum, that minimum.
bool first_id_of(int64_t n, int64_t size, int64_t type_max, int64_t* id);

// The range partheal creates for an uncovered id: the aligned partition
// [n*size, (n+1)*size), cut to the free gap around the id so that it never
// overlaps a partition somebody else made, and to the key type's limits.
Range covering_range(int64_t id, int64_t size, const std::vector<Range>& existing, int64_t type_min,
                     int64_t type_max);

// How a key type's values are cut into partitions. Plain data, so that it
// crosses shared memory as it is (a heal request carries it to the worker).
// Times are PostgreSQL's: microseconds (timestamp, timestamptz) or days
// (date) since 2000-01-01 00:00, which is a midnight of the Unix epoch's
// grid, so windows that divide a day align to the epoch too.
enum class Cut : uint8_t {
  kIds,           // aligned ranges of `step` ids
  kMicroseconds,  // fixed windows of `step` microseconds (under a day), from the epoch
  kDays,          // `step` days (1, or 7 from a Monday), from a local midnight
  kMonths,        // `step` months (dividing a year), from the 1st of a month, local midnight
};

constexpr int kZoneNameSize = 64;

struct KeySpec {
  Cut cut = Cut::kIds;
  bool date_key = false;  // the key counts days (date), not microseconds
  bool zoned = false;     // timestamptz: days and months are the zone's
  int64_t step = 0;
  int64_t min = 0;  // the key type's limits; infinities are outside them
  int64_t max = 0;
  char zone[kZoneNameSize] = {};  // the registration's zone; UTC when not zoned

  bool is_time() const { return cut != Cut::kIds; }
  // A number that changes whenever the cut changes: the shared state resets
  // the watermark on it. The partition size for ids; negative for times.
  int64_t fingerprint() const;
};
bool operator==(const KeySpec& a, const KeySpec& b);

// A zone's wall clock. Both sides are microseconds since 2000-01-01 00:00,
// of UTC (an instant, as timestamptz stores it) and of the wall clock (as
// timestamp stores it). Implemented over PostgreSQL's zone database in
// partitions/time_zone.hpp, and by fixed rules in the unit tests.
class Zone {
 public:
  virtual ~Zone() = default;
  virtual int64_t local_of(int64_t utc) const = 0;
  // A wall-clock time the zone skips (a DST gap) or repeats gets one
  // instant; any is fine as long as it is the same every time.
  virtual int64_t utc_of(int64_t local) const = 0;
};

constexpr int64_t kUsPerDay = 86400LL * 1000000LL;

// A key type's values cut into partitions within the type's own limits:
// what the heal loop, create-ahead and partheal_reserve ask "which partition
// covers this key" of. Partition n of a time cut is the n-th window since
// 2000-01-01 (negative before it).
class KeySpace {
 public:
  KeySpace() = default;
  // A zoned spec needs its zone; it must outlive the KeySpace.
  explicit KeySpace(const KeySpec& spec, const Zone* zone = nullptr) : spec_(spec), zone_(zone) {}
  static KeySpace ids(int64_t size, int64_t min, int64_t max);

  const KeySpec& spec() const { return spec_; }
  int64_t size() const { return spec_.step; }  // ids only
  bool is_time() const { return spec_.is_time(); }

  // True for a key partheal can make a partition for: within the type's
  // limits (a time's infinities are not).
  bool finite(int64_t key) const { return key >= spec_.min && key <= spec_.max; }
  int64_t number_of(int64_t key) const;
  // The first key of partition n; false outside the type's limits.
  bool first_key_of(int64_t n, int64_t* key) const;
  // Partition n's range, cut to the type's limits (MINVALUE, MAXVALUE).
  Range window(int64_t n) const;
  // The range partheal creates for an uncovered key: its partition, cut to
  // the free gap around the key so that it never overlaps a partition
  // somebody else made, and to the key type's limits.
  Range covering(int64_t key, const std::vector<Range>& existing) const;
  // The key at `percent` of partition n, whose arrival asks for n+1.
  int64_t mark_of(int64_t n, int percent) const;

  // The key a clock reading `now` (a TimestampTz) stands for: now itself for
  // timestamptz, and for timestamp its UTC wall clock, which is the same
  // number; for a date, the UTC date. And the time a key stands for.
  int64_t key_at(int64_t now) const;
  int64_t time_of(int64_t key) const;

  // The bound as SQL inside FOR VALUES FROM (...) TO (...): digits for an
  // id, a quoted ISO literal for a time (in UTC, '+00', for timestamptz).
  std::string bound_sql(const Bound& b) const;
  // A key as a message shows it: bound_sql's text without the quotes.
  std::string key_text(int64_t key) const;
  // "_p<lower>": digits for ids; for a time, the lower bound's date in the
  // zone, "_pYYYYMMDD", with "_HH24MISS" after it for windows under a day.
  std::string suffix(const Bound& lower) const;

 private:
  // Partition n's first key before it is cut to the type's limits.
  __int128 lower_of(int64_t n) const;
  // Days since 2000-01-01 of the (local) date holding key.
  int64_t local_day(int64_t key) const;
  // The key of local midnight `day` days after 2000-01-01.
  __int128 key_of_day(int64_t day) const;
  int64_t local_us(int64_t key) const;

  KeySpec spec_;
  const Zone* zone_ = nullptr;
};

// The cut of a time key registered with `months`, `days` and `us` (an
// interval's three fields), or why there is none (`why` says, for a message).
struct IntervalCut {
  bool ok = false;
  Cut cut = Cut::kDays;
  int64_t step = 0;
  std::string why;
};
IntervalCut cut_of_interval(int32_t months, int32_t days, int64_t us, bool date_key);

// Days since 2000-01-01 of a proleptic Gregorian date, and back.
int64_t days_from_civil(int64_t year, int month, int day);
void civil_from_days(int64_t days, int64_t* year, int* month, int* day);

// "_p<lower>", the part of a partition's name that must survive clipping.
// A negative lower bound reads "_pm5", since '-' would force quoting.
std::string partition_suffix(const Bound& lower);

// The same part for a window's lower bound given as the text of a value
// (partheal_attach_window: any key type): "_p20260101" for a date or a time
// at midnight, "_p20260101_063000" for another time, "_p1000" or "_pm5" for
// a number, and the letters and digits of the text for any other type.
std::string value_suffix(bool is_time, const std::string& text);

// The SQL text of a bound inside FOR VALUES FROM (...) TO (...).
std::string bound_sql(const Bound& b);

}  // namespace partheal::partitions
