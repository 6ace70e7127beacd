// PostgreSQL's zone database behind partitions::Zone, and the KeySpace of a
// spec with its zone looked up.
#pragma once

#include "partitions/key_space.hpp"
#include "pg/postgres.hpp"

namespace partheal::partitions {

// The zone of that name, as PostgreSQL's zone database has it (loaded once
// per process, then kept); nullptr when there is none.
const Zone* zone_named(const char* name);

// True when the zone database has a zone of that name, in any case. A name
// pg_tzset accepts without one, such as 'UTC+5', is a POSIX specification,
// whose offsets count west of Greenwich: UTC+5 is five hours behind UTC.
bool in_zone_database(const char* name);

// The key space of a spec. Throws 22023 when its zone is unknown (the zone
// database lost it since the registration).
KeySpace space_of(const KeySpec& spec);

// How far the wall clock of a timestamp or date key is ahead of UTC at
// `now` (a TimestampTz), in microseconds: such a key has no zone, and a
// writer's now() stores the wall clock of its session's TimeZone, so the
// clock partheal reads for it is this process's TimeZone (the worker's is
// the server's setting). 0 for a timestamptz key, whose clock is now itself.
int64 clock_offset(const KeySpace& keys, int64 now);

// How far this process's wall clock (its TimeZone) is ahead of UTC at
// `now`, in microseconds, whatever the key.
int64 wall_clock_offset(int64 now);

// The key an interval before now (months, days, us), subtracted on the wall
// clock of the key (the zone's, for a timestamptz; calendar days and months
// keep their local length across a DST change): retention's horizon
// (retention/horizon.hpp), and how far back the drain reaches. A window
// whose upper bound is at or below it holds nothing newer than the
// interval. For a date key, the last midnight at or before it, in days.
int64 key_before_now(const KeySpace& keys, const char* zone, int32 months, int32 days, int64 us,
                     int64 now);

// The finite limits of a timestamptz, timestamp or date key as int64
// (microseconds or days since 2000-01-01); false for any other type.
bool time_key_limits(Oid type, int64* min, int64* max);

}  // namespace partheal::partitions
