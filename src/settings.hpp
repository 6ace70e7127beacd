// partheal's GUCs, registered in _PG_init (src/partheal.cpp).
#pragma once

namespace partheal::settings {

extern int max_retries;             // partheal.max_retries
extern int ddl_lock_timeout_ms;     // partheal.ddl_lock_timeout
extern int heal_wait_timeout_ms;    // partheal.heal_wait_timeout
extern int max_tables;              // partheal.max_tables (postmaster)
extern int naptime_ms;              // partheal.naptime
extern int ahead_seconds;           // partheal.ahead_seconds
extern int max_ahead_partitions;    // partheal.max_ahead_partitions
extern int attach_lock_timeout_ms;  // partheal.attach_lock_timeout
extern int attach_lock_attempts;    // partheal.attach_lock_attempts
extern bool drain_default;          // partheal.drain_default
extern int drain_snapshot_wait_ms;  // partheal.drain_snapshot_wait
extern bool retention;              // partheal.retention
extern bool heal_inserts;           // partheal.heal_inserts

// One attach attempt's budget for its lock waits: partheal.attach_lock_timeout,
// never more than half of this session's deadlock_timeout.
int attach_lock_budget_ms();

// A DETACH ... CONCURRENTLY or FINALIZE run by the worker waits, in the
// lock manager, for the transactions older than it, one after the other,
// blocking no one but the worker (heals and create-ahead queue behind it).
// The whole command: twice the attach budget. One wait: as long as that,
// never less than the attach budget, and not past half of deadlock_timeout:
// writers whose transactions overlap, each shorter than the budget, end
// within one wait, where a wait of one attach budget each gave way to them.
int detach_wait_budget_ms();
int detach_wait_lock_timeout_ms();

// True when the library was loaded through shared_preload_libraries.
bool preloaded();
// Fails with a HINT naming the setting when it was not.
void require_preloaded();

}  // namespace partheal::settings
