#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>

#include "pg/boundary.hpp"

extern "C" {
#include "utils/elog.h"
#include "utils/memutils.h"
}

namespace partheal::pg {

namespace {

std::string text_or_empty(const char* s) {
  return s != nullptr ? std::string(s) : std::string();
}

ErrorFields fields_of(const ErrorData* e) {
  ErrorFields f;
  f.sqlerrcode = e->sqlerrcode;
  f.message = text_or_empty(e->message);
  f.detail = text_or_empty(e->detail);
  f.hint = text_or_empty(e->hint);
  f.context = text_or_empty(e->context);
  f.schema_name = text_or_empty(e->schema_name);
  f.table_name = text_or_empty(e->table_name);
  f.column_name = text_or_empty(e->column_name);
  f.datatype_name = text_or_empty(e->datatype_name);
  f.constraint_name = text_or_empty(e->constraint_name);
  f.cursorpos = e->cursorpos;
  f.internalpos = e->internalpos;
  f.internalquery = text_or_empty(e->internalquery);
  f.filename = text_or_empty(e->filename);
  f.lineno = e->lineno;
  f.funcname = text_or_empty(e->funcname);
  f.context_complete = true;
  return f;
}

// Allocation here must never raise: it runs while a C++ exception is being
// handled, so an ereport would longjmp out of a catch block. On failure the
// field is dropped; ThrowErrorData then reports what is left.
char* copy_or_null(const char* s) noexcept {
  if (s == nullptr || *s == '\0') return nullptr;
  size_t len = std::strlen(s);
  auto* out = static_cast<char*>(palloc_extended(len + 1, MCXT_ALLOC_NO_OOM));
  if (out != nullptr) std::memcpy(out, s, len + 1);
  return out;
}

// errfinish and CopyErrorData keep filename and funcname as pointers to
// static text (they are __FILE__ and __func__). A copy handed to
// ThrowErrorData must live as long: these are kept for the life of the
// process, one per distinct source location, so the set stays small.
const char* interned(const std::string& s) noexcept {
  if (s.empty()) return nullptr;
  try {
    static auto* names = new std::unordered_set<std::string>();
    return names->insert(s).first->c_str();
  } catch (...) {
    return nullptr;
  }
}

// The answer when even an ErrorData cannot be allocated.
ErrorData out_of_memory;

ErrorData* make_errordata(int sqlerrcode, const char* message, const char* detail = nullptr,
                          const char* hint = nullptr) noexcept {
  auto* e = static_cast<ErrorData*>(
      palloc_extended(sizeof(ErrorData), MCXT_ALLOC_NO_OOM | MCXT_ALLOC_ZERO));
  if (e == nullptr) {
    out_of_memory = ErrorData{};
    out_of_memory.elevel = ERROR;
    out_of_memory.sqlerrcode = ERRCODE_OUT_OF_MEMORY;
    out_of_memory.message = const_cast<char*>("out of memory");
    return &out_of_memory;
  }
  e->elevel = ERROR;
  e->sqlerrcode = sqlerrcode;
  e->message = copy_or_null(message);
  e->detail = copy_or_null(detail);
  e->hint = copy_or_null(hint);
  if (e->message == nullptr) e->message = const_cast<char*>("out of memory");
  return e;
}

ErrorData* errordata_of(const ErrorFields& f) noexcept {
  ErrorData* e = make_errordata(f.sqlerrcode, f.message.c_str(), f.detail.c_str(), f.hint.c_str());
  if (e == &out_of_memory) return e;
  e->cursorpos = f.cursorpos;
  e->internalpos = f.internalpos;
  e->internalquery = copy_or_null(f.internalquery.c_str());
  e->filename = const_cast<char*>(interned(f.filename));
  e->lineno = f.lineno;
  e->funcname = const_cast<char*>(interned(f.funcname));
  e->context = copy_or_null(f.context.c_str());
  e->schema_name = copy_or_null(f.schema_name.c_str());
  e->table_name = copy_or_null(f.table_name.c_str());
  e->column_name = copy_or_null(f.column_name.c_str());
  e->datatype_name = copy_or_null(f.datatype_name.c_str());
  e->constraint_name = copy_or_null(f.constraint_name.c_str());
  return e;
}

[[noreturn]] void throw_errordata(ErrorData* e, bool context_complete) {
  // The context callbacks of every caller already ran when PostgreSQL first
  // raised this error, and their lines are in e->context. Running them again
  // would print each outer CONTEXT line twice. Whoever catches the error
  // (PG_CATCH, the main loop) restores error_context_stack.
  if (context_complete) error_context_stack = nullptr;
  ThrowErrorData(e);
  // ThrowErrorData returns only for levels below ERROR, which partheal never builds.
  elog(ERROR, "partheal: an error was not raised");
  pg_unreachable();
}

struct Failure {
  ErrorData* error = nullptr;
  bool context_complete = false;
};

// Called only inside a catch block.
Failure current_failure() noexcept {
  Failure out;
  out.error = current_exception_as_errordata();
  try {
    throw;
  } catch (const PgError& e) {
    // If the copy lost the context (out of memory), let the callbacks
    // rebuild what they can rather than print none.
    const ErrorFields& f = e.fields();
    out.context_complete =
        f.context_complete && (f.context.empty() || out.error->context != nullptr);
  } catch (...) {
  }
  return out;
}

Datum run_sql_body(FunctionCallInfo fcinfo, SqlBody body, Failure* failure) noexcept {
  try {
    return body(fcinfo);
  } catch (...) {
    *failure = current_failure();
    return Datum(0);
  }
}

void run_worker_body(EntryBody body, Datum arg, Failure* failure) noexcept {
  try {
    body(arg);
  } catch (...) {
    *failure = current_failure();
  }
}

void run_callback_body(CallbackBody body, void* ctx, Failure* failure) noexcept {
  try {
    body(ctx);
  } catch (...) {
    *failure = current_failure();
  }
}

// CopyErrorData allocates, and an out-of-memory ERROR raised inside a
// PG_CATCH block would longjmp past run_guarded's C++ frames. A nested
// sigsetjmp frame, holding no C++ objects, stops it here.
bool fail_next_copy = false;

ErrorData* copy_error_or_null(MemoryContext context) {
  ErrorData* volatile copy = nullptr;
  PG_TRY();
  {
    if (fail_next_copy) {
      fail_next_copy = false;
      ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory (simulated)")));
    }
    copy = CopyErrorData();
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(context);
    copy = nullptr;
  }
  PG_END_TRY();
  return copy;
}

}  // namespace

void run_guarded(void (*fn)(void*), void* ctx) {
  MemoryContext caller_context = CurrentMemoryContext;
  ErrorData* volatile caught = nullptr;
  volatile bool failed = false;
  std::exception_ptr thrown;
  PG_TRY();
  {
    // A C++ exception must not leave before PG_END_TRY restores
    // PG_exception_stack: it is carried past it and thrown again.
    try {
      fn(ctx);
    } catch (...) {
      thrown = std::current_exception();
    }
  }
  PG_CATCH();
  {
    MemoryContextSwitchTo(caller_context);
    caught = copy_error_or_null(caller_context);
    FlushErrorState();
    failed = true;
  }
  PG_END_TRY();
  if (thrown) std::rethrow_exception(thrown);
  if (!failed) return;
  // The sigsetjmp frame is gone; from here on C++ rules apply.
  if (caught == nullptr)
    throw PgError(ERRCODE_OUT_OF_MEMORY, "out of memory",
                  "An error raised inside PostgreSQL could not be copied to be reported.");
  ErrorData* e = caught;
  ErrorFields fields = fields_of(e);
  FreeErrorData(e);
  throw PgError(std::move(fields));
}

void fail_next_error_copy_for_test() {
  fail_next_copy = true;
}

void fail(int sqlerrcode, std::string message, std::string detail, std::string hint) {
  throw PgError(sqlerrcode, std::move(message), std::move(detail), std::move(hint));
}

ErrorData* current_exception_as_errordata() noexcept {
  try {
    throw;
  } catch (const PgError& e) {
    return errordata_of(e.fields());
  } catch (const std::bad_alloc&) {
    return make_errordata(ERRCODE_OUT_OF_MEMORY, "out of memory",
                          "partheal could not allocate memory in C++ code.");
  } catch (const fmt::format_error& e) {
    return make_errordata(ERRCODE_INTERNAL_ERROR, "partheal: message formatting failed", e.what());
  } catch (const std::exception& e) {
    return make_errordata(ERRCODE_INTERNAL_ERROR, "partheal: internal error", e.what());
  } catch (...) {
    return make_errordata(ERRCODE_INTERNAL_ERROR, "partheal: internal error",
                          "An exception of unknown type reached the boundary.");
  }
}

Datum enter_sql(FunctionCallInfo fcinfo, SqlBody body) {
  Failure failure;
  Datum result = run_sql_body(fcinfo, body, &failure);
  if (failure.error != nullptr) throw_errordata(failure.error, failure.context_complete);
  return result;
}

void enter(EntryBody body, Datum arg) {
  Failure failure;
  run_worker_body(body, arg, &failure);
  if (failure.error != nullptr) throw_errordata(failure.error, failure.context_complete);
}

void enter_callback(CallbackBody body, void* ctx) {
  Failure failure;
  run_callback_body(body, ctx, &failure);
  if (failure.error != nullptr) throw_errordata(failure.error, failure.context_complete);
}

}  // namespace partheal::pg
