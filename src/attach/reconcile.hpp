// Attaching a window a live writer may be filling: the design of the earlier,
// client-side attach, done inside the calling backend and inside the
// caller's transaction.
//
//  1. The plain ATTACH. When the parent has a DEFAULT partition the parent is
//     locked EXCLUSIVE first: an INSERT that had already routed a row to
//     DEFAULT and then waited on ATTACH's lock would come out still aimed at
//     DEFAULT and be rejected. Holding the parent means no insert is
//     mid-routing while the partition set changes.
//  2. On a DEFAULT conflict, the bulk of the window's rows moves out of DEFAULT
//     under ROW EXCLUSIVE, which blocks no reader and no writer.
//  3. The locked form: the parent first, then ACCESS EXCLUSIVE on the
//     window's table and on DEFAULT; the tail moves, then ATTACH. The parent
//     is locked ACCESS EXCLUSIVE here, one step above the client-side design's EXCLUSIVE:
//     with rows moving, a reader must plan after the commit, not before it
//     (attach_writer.spec's reader permutation loses the rows otherwise).
//
// The moves and the ATTACH commit together, with the caller's transaction, so
// readers of the parent see a window's rows before or after, never neither.
// Every lock wait is bounded below deadlock_timeout: when partheal and an
// application wait on each other, partheal gives way and tries again.
#pragma once

#include <optional>
#include <string>

#include "attach/window.hpp"

namespace partheal::attach {

// kNotAttached: as kDefaultHoldsRows, for a table with no DEFAULT partition,
// where no row can be held anywhere: the window's locks could not be had.
enum class Outcome { kAttached, kAlreadyAttached, kDefaultHoldsRows, kNotAttached };
const char* outcome_name(Outcome o);

struct Result {
  Outcome outcome = Outcome::kAttached;
  Oid partition = InvalidOid;  // invalid when a table partheal created was rolled back
  int64 rows_moved = 0;
  int attempts = 0;
  int64 move_statements = 0;
  std::string reason;  // why a window is left in DEFAULT
  // How long attempts held the parent EXCLUSIVE or ACCESS EXCLUSIVE, up to the
  // end of the call; the last hold goes on until the caller commits.
  long parent_held_ms = 0;
  long parent_held_longest_ms = 0;
};

// batch_rows > 0 splits the bulk move into statements of at most that many
// rows, all in the same transaction. Needs SPI connected and partheal's GUC
// level entered.
Result attach_window(const Parent& parent, const Window& window,
                     const std::optional<std::string>& table_name, int64 batch_rows);

}  // namespace partheal::attach
