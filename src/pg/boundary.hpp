// The C++/PostgreSQL boundary, written once.
//
// PostgreSQL reports errors with longjmp, which skips C++ destructors; C++
// reports them with exceptions, which must never unwind through PostgreSQL's C
// frames. Two mechanisms keep the two apart:
//
//  * guard(f) runs a PostgreSQL call from C++. A PostgreSQL error inside it
//    stops at a sigsetjmp frame that holds no C++ objects and continues as a
//    PgError carrying the whole ErrorData.
//  * PARTHEAL_SQL_FUNCTION, enter() and entry() are the only ways PostgreSQL
//    calls into partheal. They catch every C++ exception and raise it as ereport
//    after the last C++ frame is gone; a PgError is raised with its fields
//    unchanged, so an error may cross the boundary any number of times.
//
// A lambda passed to guard must not own objects with destructors: a longjmp
// out of it would skip them.
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "pg/postgres.hpp"

namespace partheal::pg {

void run_guarded(void (*fn)(void*), void* ctx);

template <typename F>
auto guard(F&& f) -> decltype(f()) {
  using Result = decltype(f());
  if constexpr (std::is_void_v<Result>) {
    run_guarded([](void* c) { (*static_cast<std::remove_reference_t<F>*>(c))(); }, &f);
  } else {
    Result result{};
    auto store = [&] { result = f(); };
    run_guarded([](void* c) { (*static_cast<decltype(store)*>(c))(); }, &store);
    return result;
  }
}

// A PostgreSQL call that returns a C string (nullptr for none), run under
// guard(); the std::string is made after the guard, outside its frame.
template <typename F>
std::string guarded_text(F&& f) {
  const char* text = guard(std::forward<F>(f));
  return text == nullptr ? std::string() : std::string(text);
}

// The self-test's way to make the next copy of a caught PostgreSQL error
// fail as an out-of-memory error would.
void fail_next_error_copy_for_test();

// Raises an ERROR from C++ code with a SQLSTATE; the entry point reports it.
[[noreturn]] void fail(int sqlerrcode, std::string message, std::string detail = {},
                       std::string hint = {});

using SqlBody = Datum (*)(FunctionCallInfo);
Datum enter_sql(FunctionCallInfo fcinfo, SqlBody body);

// The entry for hooks and background worker mains.
using EntryBody = void (*)(Datum);
void enter(EntryBody body, Datum arg);

// The entry for every callback and hook: exit callbacks, shared memory
// hooks, transaction and invalidation callbacks, the ProcessUtility hook.
// The C++ body runs in a noexcept frame; what it throws is raised as
// ereport once that frame is gone (in an exit callback, a FATAL-time
// ERROR is PostgreSQL's to handle, as for its own callbacks).
using CallbackBody = void (*)(void*);
void enter_callback(CallbackBody body, void* ctx);
template <typename F>
void entry(F&& body) {
  enter_callback([](void* c) { (*static_cast<std::remove_reference_t<F>*>(c))(); }, &body);
}

// Converts the exception being handled into a palloc'd ErrorData without
// ever raising a PostgreSQL error itself; call only inside a catch block.
ErrorData* current_exception_as_errordata() noexcept;

}  // namespace partheal::pg

// Defines a SQL-callable function whose body is C++. The body runs inside
// enter_sql, so it may throw and may call guard()ed PostgreSQL functions.
#define PARTHEAL_SQL_FUNCTION(name)                        \
  static Datum name##_body(FunctionCallInfo fcinfo);       \
  extern "C" {                                             \
  PG_FUNCTION_INFO_V1(name);                               \
  Datum name(PG_FUNCTION_ARGS) {                           \
    return ::partheal::pg::enter_sql(fcinfo, name##_body); \
  }                                                        \
  }                                                        \
  static Datum name##_body(FunctionCallInfo fcinfo)
