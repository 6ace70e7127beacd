// Inside attach_window (attach/reconcile.hpp), for attach/ only: what its
// pieces share. reconcile.cpp is the call itself; locks.cpp the lock budget
// and the lock polling; move.cpp the moves out of DEFAULT and the looks that
// decide whether rows may move; attempt.cpp the attempt loop.
#pragma once

#include "attach/locks.hpp"

#include <string>
#include <utility>
#include <vector>

#include "attach/reconcile.hpp"
#include "attach/window.hpp"

extern "C" {
#include "storage/lockdefs.h"
#include "utils/timestamp.h"
}

namespace partheal::attach::reconcile {

// The lock discipline (attach/locks.hpp), which every piece uses.
using namespace locks;

// Thrown inside the attach's subtransaction to roll back everything it did
// (a table it created, rows it moved) and report default_holds_rows.
struct GiveUp {
  std::string reason;
  std::string hint;  // what the caller can do about it
};

enum class Try { kAttached, kDefaultConflict };

struct Names {
  std::string parent;      // schema.name, quoted
  std::string table;       // the window's table, schema.name, quoted
  std::string table_name;  // unqualified, as it is
  std::string range;       // FROM (...) TO (...)
};

// move.cpp

int64 move_rows(const Parent& p, const Window& w, const Names& n, int64 batch_rows, Result& r);
bool default_holds_window_rows(const Parent& p, const Window& w);
int64 move_skipped(const Parent& p, const Window& w, const Names& n, Result& r);
bool referenced_by_foreign_keys(const Parent& p);
bool published(const Parent& p);

// attempt.cpp

Try attempt(const Parent& p, const Window& w, const Names& n, Oid table, bool locked, Result& r);

}  // namespace partheal::attach::reconcile
