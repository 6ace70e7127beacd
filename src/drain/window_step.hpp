// One step of the drain of a table's DEFAULT partition, inside the
// scheduler's transaction: the oldest window DEFAULT holds rows for (and
// that is not backing off) is cut as the heal cuts it and attached by
// attach_window, moving its rows; or else the first window ahead not made
// yet is.
#pragma once

#include <optional>
#include <string>

#include "pg/postgres.hpp"
#include "worker/scheduler.hpp"

namespace partheal::drain {

// One move statement's rows: a window's transaction grows with the window,
// and the bulk move runs under ROW EXCLUSIVE, which blocks no one.
constexpr int64 kBatchRows = 50000;
// The most rows of one window the worker moves: a window's move and attach
// are one transaction, and heal requests wait for its end.
constexpr int64 kMaxWindowRows = 100000;
// How far the rows past the horizon are counted.
constexpr int64 kExpiredCap = 10000;

struct Step {
  bool attached = false;
  bool ahead = false;  // the window attached was one ahead, with nothing to move
  int64 attached_lower = 0;
  int64 rows_moved = 0;
  std::optional<int64> gave_up;  // the window's lower key
  std::optional<int64> too_big;  // the window's lower key
  std::string window;            // FROM (...) TO (...), for messages
  std::optional<int64> expired;  // rows in DEFAULT older than the horizon's window, when counted
  std::string horizon_key;       // the first key of that window, for messages
  bool past_horizon = false;     // that window is the retention horizon's, not the reach's
  bool held_back = false;        // rows to move, not moved: older snapshots may still read them
  std::string held_window;       // FROM (...) TO (...) of that window
};

// `attempting` is the lower key of the window being attached, for the
// caller to back off when the transaction fails. `count_expired`: count
// the rows DEFAULT keeps past the reach; `snapshots_gone`: rows may move
// now (no older snapshot holds them back).
Step drain_one(Oid relid, std::optional<int64>& attempting, bool count_expired, bool snapshots_gone,
               const worker::Schedule& schedule);

}  // namespace partheal::drain
