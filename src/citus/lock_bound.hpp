// The lock bound of partheal's DDL on a Citus cluster's worker nodes.
// Citus runs a distributed table's DDL (and a move's DML) on every worker
// node too: there its lock waits get the bound they have here, and after it
// the rest of the caller's transaction has the caller's own lock_timeout
// there again.
#pragma once

#include <utility>

#include "pg/citus.hpp"

namespace partheal::citus {

// Runs `f` with the worker nodes' lock_timeout set to `ms` (0: none), then
// gives them `caller_ms` back. For a table not in Citus's metadata, `f`
// alone. On an error nothing is given back: the setting is a SET LOCAL,
// which the (sub)transaction's rollback takes back. Needs SPI connected.
template <typename F>
void with_lock_bound_on_nodes(bool citus_table, int ms, int caller_ms, F&& f) {
  if (citus_table) pg::citus::set_lock_timeout_on_nodes(ms);
  std::forward<F>(f)();
  if (citus_table) pg::citus::restore_lock_timeout_on_nodes(caller_ms);
}

}  // namespace partheal::citus
