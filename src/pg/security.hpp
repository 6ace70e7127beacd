// Running partheal's SQL as another role: the table's owner.
//
// What partheal creates belongs to the table's owner, and nothing runs with
// more rights than that owner has: the worker's superuser rights, or a
// superuser caller's, never reach a user's objects. The restricted-operation
// flag keeps the owner's own code (a default expression, a trigger) from
// switching roles or leaving session state behind.
#pragma once

#include <utility>

#include "pg/boundary.hpp"

extern "C" {
#include "miscadmin.h"
}

namespace partheal::pg {

// Runs body as `role` with the security context `context`, and puts the
// caller's user and context back on every way out.
template <typename F>
void with_user(Oid role, int context, F&& body) {
  Oid saved_user = InvalidOid;
  int saved_context = 0;
  GetUserIdAndSecContext(&saved_user, &saved_context);
  guard([&] { SetUserIdAndSecContext(role, context); });
  try {
    body();
  } catch (...) {
    // A caller that catches the error and goes on must not go on as `role`.
    SetUserIdAndSecContext(saved_user, saved_context);
    throw;
  }
  SetUserIdAndSecContext(saved_user, saved_context);
}

template <typename F>
void as_role(Oid role, F&& body) {
  Oid user = InvalidOid;
  int context = 0;
  GetUserIdAndSecContext(&user, &context);
  with_user(role, context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION,
            std::forward<F>(body));
}

// as_role for a command that commits and starts transactions itself
// (pg::run_top_level): PostgreSQL requires that no security context be in
// force when a transaction starts (an assertion in StartTransaction), so
// the role is set alone, without the restricted-operation flag. What runs
// inside is PostgreSQL's own DDL on built-in key types, and event triggers,
// which only a superuser can make. The caller restores its own user after
// an abort too: the abort of a transaction the command began puts back the
// user that transaction began with, `role`.
template <typename F>
void as_role_across_transactions(Oid role, F&& body) {
  with_user(role, 0, std::forward<F>(body));
}

}  // namespace partheal::pg
