// When retention tries a window again after its detach stopped: per
// (table, window), a back-off from 1 s doubling to a minute, and, for a
// DETACH CONCURRENTLY or FINALIZE that gave way to older transactions or to
// a heal request, as soon as what it gave way to has ended. Kept by the
// worker; a table's entries go when it is no longer retained, a window's
// when it leaves the table.
#pragma once

#include <functional>

#include "pg/postgres.hpp"

namespace partheal::retention {

// An error that says a lock wait, or the whole command's budget, ran out
// (a give-way to a heal request included).
bool waited_for(int sqlerrcode);

// After a detach of the window stopped: `waited` (waited_for) notes what a
// FINALIZE would wait for; `early` says the try came before its back-off
// ran out.
void stopped(Oid relid, Oid partition, bool waited, bool early);

// Inside a transaction: whether the window waits for its back-off. One that
// gave way is not, once what it gave way to has ended (twice in a row at
// most, then only the back-off).
bool backing_off(Oid relid, Oid partition);

// Whether a try now comes before the window's back-off ran out.
bool early(Oid relid, Oid partition);

// A window left attached for a reason that lasts (referenced, foreign):
// looked at again in a minute.
void back_off_for_a_minute(Oid relid, Oid partition);

// The window went: its back-off with it.
void forget_back_off(Oid relid, Oid partition);

// The back-offs of the table's windows that `present` says are gone.
void forget_back_offs_of_windows(Oid relid, const std::function<bool(Oid)>& present);

// The back-offs of the tables `retained` says are no longer retained.
void forget_back_offs_of_tables(const std::function<bool(Oid)>& retained);

}  // namespace partheal::retention
