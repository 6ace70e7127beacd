// When retention tries a window again after its detach stopped: the
// scheduler's back-off of (table, window), from 1 s doubling to a minute,
// and, for a DETACH CONCURRENTLY or FINALIZE that gave way to older
// transactions or to a heal request, as soon as what it gave way to has
// ended (what it gave way to is in the table's memo, retention/watch.hpp).
#pragma once

#include <vector>

#include "pg/postgres.hpp"
#include "retention/watch.hpp"
#include "worker/scheduler.hpp"

namespace partheal::retention {

// An error that says a lock wait, or the whole command's budget, ran out
// (a give-way to a heal request included).
bool waited_for(int sqlerrcode);

// What retention's back-offs work with: the scheduler's, and the table's
// memo.
struct BackOffs {
  worker::Schedule& s;
  TableWatch& watch;
  Oid relid;

  // After a detach of the window stopped: `waited` (waited_for) notes what
  // a FINALIZE would wait for; `early` says the try came before its
  // back-off ran out.
  void stopped(Oid partition, bool waited, bool early);

  // Inside a transaction: whether the window waits for its back-off. One
  // that gave way is not, once what it gave way to has ended (twice in a
  // row at most, then only the back-off).
  bool backing_off(Oid partition);

  // Whether a try now comes before the window's back-off ran out.
  bool early(Oid partition) const;

  // A window left attached for a reason that lasts (referenced, foreign):
  // looked at again in a minute.
  void for_a_minute(Oid partition);

  // The window went: its back-off with it.
  void forget(Oid partition);

  // The back-offs of the table's windows not in `present` go (retired by a
  // batch, dropped by hand).
  void keep_only(const std::vector<Oid>& present);
};

}  // namespace partheal::retention
