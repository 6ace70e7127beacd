// A CONTEXT line for errors PostgreSQL raises while C++ code runs, pushed
// and popped as a scope: a guard() that turns the error into a PgError has
// already run the callback, and the C++ unwind pops the entry.
#pragma once

#include "pg/postgres.hpp"

namespace partheal::pg {

class ErrorContext {
 public:
  // `callback` runs inside errfinish: it may call errcontext(), never throw.
  ErrorContext(void (*callback)(void*), void* arg) {
    entry_.callback = callback;
    entry_.arg = arg;
    entry_.previous = error_context_stack;
    error_context_stack = &entry_;
  }
  ErrorContext(const ErrorContext&) = delete;
  ErrorContext& operator=(const ErrorContext&) = delete;
  ~ErrorContext() { error_context_stack = entry_.previous; }

 private:
  ErrorContextCallback entry_{};
};

}  // namespace partheal::pg
