// partheal's own SQLSTATEs and server-log codes. They are a contract with
// users' retry logic and log alerts: never renumber one.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::errors {

// Permanent: the heal loop ran out. Rerunning the same append unchanged is
// exactly what just failed.
constexpr int kPartitionCreationBehind = MAKE_SQLSTATE('P', 'H', '0', '0', '1');
// The worker did not answer within partheal.heal_wait_timeout.
constexpr int kHealWaitTimeout = MAKE_SQLSTATE('P', 'H', '0', '0', '2');
// No background worker could be started to create the partition.
constexpr int kWorkerUnavailable = MAKE_SQLSTATE('P', 'H', '0', '0', '3');
// The caller holds a lock that ATTACH needs; waiting would deadlock.
constexpr int kHealLockConflict = MAKE_SQLSTATE('P', 'H', '0', '0', '4');
// A row older than the table's retention: its window would be dropped at
// once, so partheal does not make it.
constexpr int kOlderThanRetention = MAKE_SQLSTATE('P', 'H', '0', '0', '5');
// On a Citus worker node, for a table in Citus's metadata: registrations
// and partition creation live on the coordinator.
constexpr int kNotOnCoordinator = MAKE_SQLSTATE('P', 'H', '0', '0', '6');
// The library was not loaded through shared_preload_libraries.
constexpr int kNotPreloaded = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;

// Server-log codes, the first word of each line partheal writes.
constexpr const char* kLogHeal = "PHL01";
constexpr const char* kLogCreated = "PHL02";
constexpr const char* kLogCreateFailed = "PHL03";
constexpr const char* kLogAheadGaveUp = "PHL04";   // WARNING: an attempt dropped after retries
constexpr const char* kLogAheadDropped = "PHL05";  // an attempt that could not even be queued
constexpr const char* kLogAttached = "PHL06";      // partheal_attach_window attached a window
constexpr const char* kLogAttachGaveUp = "PHL07";  // a window left in DEFAULT (default_holds_rows)
// WARNING: a managed table got a DEFAULT partition after registration.
constexpr const char* kLogDefaultPartition = "PHL08";
constexpr const char* kLogRetired = "PHL09";        // retention detached a window (and dropped it)
constexpr const char* kLogRetentionLeft = "PHL10";  // a due window retention left attached, and why
constexpr const char* kLogExpiredInDefault = "PHL11";  // rows in DEFAULT past the retention horizon
// The drain held a move back for older snapshots, or moved once they went.
constexpr const char* kLogHeldForSnapshots = "PHL12";

}  // namespace partheal::errors
