#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "append/rows.hpp"
#include "pg/boundary.hpp"
#include "pg/error_context.hpp"

extern "C" {
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/numeric.h"
}

namespace partheal::append {

namespace {

constexpr const char* kRowsHint =
    "Pass a JSON object, or an array of objects, keyed by column name.";

struct Cell {
  int row;
  int column;
  JsonbValue value;
};

const char* kind_name(enum jbvType type) {
  switch (type) {
    case jbvNull:
      return "null";
    case jbvString:
      return "string";
    case jbvNumeric:
      return "number";
    case jbvBool:
      return "boolean";
    case jbvArray:
      return "array";
    default:
      return "object";
  }
}

std::string with_article(enum jbvType type) {
  std::string kind = kind_name(type);
  return (kind == "array" || kind == "object" ? "an " : "a ") + kind;
}

// Walks one object's keys; nested values come back whole (jbvBinary).
void read_object(const Target& target, JsonbContainer* object, int row, std::vector<Cell>& cells) {
  JsonbIterator* it = pg::guard([&] { return JsonbIteratorInit(object); });
  JsonbValue v;
  std::string key;
  for (;;) {
    JsonbIteratorToken token = pg::guard([&] { return JsonbIteratorNext(&it, &v, true); });
    if (token == WJB_DONE) break;
    if (token == WJB_KEY) {
      key.assign(v.val.string.val, v.val.string.len);
    } else if (token == WJB_VALUE) {
      cells.push_back(Cell{row, target.column_index(key), v});
    }
  }
}

// A JSON string, number or boolean as the text an input function takes; an
// integral number such as 1.0 as the integer it is, where one is wanted.
char* scalar_text(const JsonbValue& v, bool integer) {
  switch (v.type) {
    case jbvString:
      return pnstrdup(v.val.string.val, v.val.string.len);
    case jbvNumeric: {
      Datum n = NumericGetDatum(v.val.numeric);
      if (integer) {
        Datum whole = DirectFunctionCall2(numeric_trunc, n, Int32GetDatum(0));
        if (DatumGetBool(DirectFunctionCall2(numeric_eq, n, whole))) n = whole;
      }
      return DatumGetCString(DirectFunctionCall1(numeric_out, n));
    }
    case jbvBool:
      return pstrdup(v.val.boolean ? "true" : "false");
    default:
      return nullptr;
  }
}

// An element of an array literal: double-quoted, so that any text survives.
void append_quoted(StringInfo buf, const char* text) {
  appendStringInfoChar(buf, '"');
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == '"' || *p == '\\') appendStringInfoChar(buf, '\\');
    appendStringInfoChar(buf, *p);
  }
  appendStringInfoChar(buf, '"');
}

// A JSON array, nested arrays included, as an array literal: ["a", null]
// is {"a",NULL}. Elements of a json or jsonb array keep their JSON text.
void append_array_literal(StringInfo buf, JsonbContainer* array, const Column& column) {
  check_stack_depth();
  appendStringInfoChar(buf, '{');
  JsonbIterator* it = JsonbIteratorInit(array);
  JsonbValue v;
  bool first = true;
  JsonbIteratorToken token;
  while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE) {
    if (token != WJB_ELEM) continue;
    if (!first) appendStringInfoChar(buf, column.element_delimiter);
    first = false;
    if (v.type == jbvNull) {
      appendStringInfoString(buf, "NULL");
    } else if (v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data) &&
               !column.element_is_json) {
      append_array_literal(buf, v.val.binary.data, column);
    } else if (v.type == jbvBinary || column.element_is_json) {
      Jsonb* one = JsonbValueToJsonb(&v);
      append_quoted(buf, JsonbToCString(nullptr, &one->root, VARSIZE(one)));
    } else {
      append_quoted(buf, scalar_text(v, column.element_is_integer));
    }
  }
  appendStringInfoChar(buf, '}');
}

// The text a column's input function gets; nullptr for JSON null. json and
// jsonb columns take the value as JSON, so a string keeps its quotes; an
// array column takes a JSON array as its elements; an integer column takes
// an integral JSON number such as 1.0 as the integer it is.
char* text_of(const JsonbValue& v, const Column& column) {
  return pg::guard([&]() -> char* {
    if (v.type == jbvNull) return nullptr;
    if (column.is_json) {
      if (v.type == jbvBinary) return JsonbToCString(nullptr, v.val.binary.data, v.val.binary.len);
      Jsonb* one = JsonbValueToJsonb(const_cast<JsonbValue*>(&v));
      return JsonbToCString(nullptr, &one->root, VARSIZE(one));
    }
    if (v.type == jbvBinary) {
      if (column.element_type != InvalidOid && JsonContainerIsArray(v.val.binary.data)) {
        StringInfoData buf;
        initStringInfo(&buf);
        append_array_literal(&buf, v.val.binary.data, column);
        return buf.data;
      }
      return JsonbToCString(nullptr, v.val.binary.data, v.val.binary.len);
    }
    return scalar_text(v, column.is_integer);
  });
}

// Where in the rows a conversion failed, for the error's CONTEXT: in a
// batch of thousands, the row and the column.
struct Position {
  int row = 0;  // 0-based
  const char* column = nullptr;
};

void position_context(void* arg) {
  auto* at = static_cast<Position*>(arg);
  if (at->column != nullptr)
    errcontext("partheal_append row %d, column \"%s\"", at->row + 1, at->column);
}

// A NULL checked as the column's domain checks it: the domain's input
// function is called with no text, as a plain INSERT of NULL would coerce it.
void check_domain_null(const Column& column) {
  pg::guard([&] {
    (void)InputFunctionCall(const_cast<FmgrInfo*>(&column.input), nullptr, column.ioparam,
                            column.typmod);
  });
}

// The cells of every row, in the order rows gives them; returns the number
// of rows.
int read_cells(const Target& target, Jsonb* json, std::vector<Cell>& cells) {
  int count = 0;
  JsonbContainer* root = &json->root;
  if (JB_ROOT_IS_SCALAR(json)) {
    JsonbValue scalar;
    pg::guard([&] { (void)JsonbExtractScalar(root, &scalar); });
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
             fmt::format("rows must be a JSON object or array, not {}", with_article(scalar.type)),
             {}, kRowsHint);
  }
  if (JB_ROOT_IS_OBJECT(json)) {
    read_object(target, root, 0, cells);
    return 1;
  }
  JsonbIterator* it = pg::guard([&] { return JsonbIteratorInit(root); });
  JsonbValue v;
  for (;;) {
    JsonbIteratorToken token = pg::guard([&] { return JsonbIteratorNext(&it, &v, true); });
    if (token == WJB_DONE) break;
    if (token != WJB_ELEM) continue;
    bool is_object = v.type == jbvBinary && JsonContainerIsObject(v.val.binary.data);
    if (!is_object)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
               fmt::format("element {} of rows is {}, not an object", count + 1,
                           v.type == jbvBinary ? "an array" : with_article(v.type)),
               {}, kRowsHint);
    read_object(target, v.val.binary.data, count, cells);
    ++count;
  }
  if (count == 0)
    pg::fail(ERRCODE_INVALID_PARAMETER_VALUE, "rows is an empty array", {},
             "Pass at least one object; {} is a row that takes every default.");
  return count;
}

// The columns: every key any row names, plus the key column, in attnum order.
// Returns each target column's position in them (-1 for none).
std::vector<int> choose_columns(const Target& target, const std::vector<Cell>& cells, Rows& rows) {
  for (const Cell& c : cells) rows.columns.push_back(c.column);
  rows.columns.push_back(target.key_index());
  if (target.id_index() >= 0) rows.columns.push_back(target.id_index());
  std::sort(rows.columns.begin(), rows.columns.end());
  rows.columns.erase(std::unique(rows.columns.begin(), rows.columns.end()), rows.columns.end());
  std::vector<int> position_of(std::max(target.key_index(), target.id_index()) + 1, -1);
  for (size_t p = 0; p < rows.columns.size(); ++p) {
    if (rows.columns[p] >= static_cast<int>(position_of.size()))
      position_of.resize(rows.columns[p] + 1, -1);
    position_of[rows.columns[p]] = static_cast<int>(p);
  }
  rows.key_position = position_of[target.key_index()];
  rows.id_position = target.id_index() >= 0 ? position_of[target.id_index()] : -1;
  return position_of;
}

// A generated column takes no value, not even null, as INSERT refuses it:
// refused here, before any id is drawn.
void refuse_generated(const Target& target, const std::vector<Cell>& cells) {
  for (const Cell& cell : cells) {
    const Column& column = target.column(cell.column);
    if (!column.generated) continue;
    pg::fail(ERRCODE_GENERATED_ALWAYS,
             fmt::format("cannot insert a non-DEFAULT value into column \"{}\"", column.name),
             fmt::format("Column \"{}\" is a generated column. Row {} names it.", column.name,
                         cell.row + 1),
             "Leave the column out of the rows; PostgreSQL computes it.");
  }
}

// Every cell through its column's input function, `at` naming it for the
// error's CONTEXT.
void convert_cells(const Target& target, const std::vector<Cell>& cells,
                   const std::vector<int>& position_of, Rows& rows, Position& at) {
  for (const Cell& cell : cells) {
    const Column& column = target.column(cell.column);
    int position = position_of[cell.column];
    if (position == rows.id_position) rows.id_given[cell.row] = true;
    if (position == rows.key_position) rows.key_given[cell.row] = true;
    at = Position{cell.row, column.name.c_str()};
    char* text = text_of(cell.value, column);
    if (text == nullptr) continue;  // JSON null: SQL NULL
    Datum d = pg::guard([&] {
      return InputFunctionCall(const_cast<FmgrInfo*>(&column.input), text, column.ioparam,
                               column.typmod);
    });
    rows.value(position, cell.row) = d;
    rows.null(position, cell.row) = ' ';
  }
}

// A NULL that a NOT NULL column or a domain would refuse is refused now,
// before any id is drawn or partition made for a row that cannot land.
// A domain checks NULL as the value is coerced, before triggers run; NOT
// NULL is checked after BEFORE ROW triggers, which may fill the column, so
// with such triggers that verdict is left to the INSERT.
void check_named_nulls(const Target& target, Rows& rows, const std::string& table,
                       bool check_not_null, Position& at) {
  for (size_t p = 0; p < rows.columns.size(); ++p) {
    const Column& column = target.column(rows.columns[p]);
    if (static_cast<int>(p) == rows.key_position || static_cast<int>(p) == rows.id_position)
      continue;
    for (int r = 0; r < rows.count; ++r) {
      if (rows.null(static_cast<int>(p), r) != 'n') continue;
      if (column.not_null && check_not_null)
        pg::fail(ERRCODE_NOT_NULL_VIOLATION,
                 fmt::format("null value in column \"{}\" of relation \"{}\" violates not-null "
                             "constraint",
                             column.name, table),
                 fmt::format("Row {} gives no value for it, or null.", r + 1));
      if (!column.is_domain) break;
      at = Position{r, column.name.c_str()};
      check_domain_null(column);
      break;  // a domain's verdict on NULL is the same in every row
    }
  }
}

// So is a column that no row names and that has no default to take.
void check_unnamed_columns(const Target& target, const Rows& rows, const std::string& table,
                           bool check_not_null, Position& at) {
  std::vector<bool> named(target.column_count(), false);
  for (int c : rows.columns) named[c] = true;
  for (int c = 0; c < target.column_count(); ++c) {
    const Column& column = target.column(c);
    if (named[c] || column.has_default) continue;
    if (column.not_null && check_not_null)
      pg::fail(ERRCODE_NOT_NULL_VIOLATION,
               fmt::format("null value in column \"{}\" of relation \"{}\" violates not-null "
                           "constraint",
                           column.name, table),
               "No row gives a value for it, and it has no default.",
               "Give the column in every row.");
    if (column.is_domain && !column.domain_has_default) {
      at = Position{0, column.name.c_str()};
      check_domain_null(column);
    }
  }
}

}  // namespace

Rows read_rows(const Target& target, Jsonb* json, bool before_row_triggers) {
  std::vector<Cell> cells;
  Rows rows;
  rows.count = read_cells(target, json, cells);
  std::vector<int> position_of = choose_columns(target, cells, rows);
  refuse_generated(target, cells);
  rows.values.assign(rows.columns.size() * rows.count, Datum(0));
  rows.nulls.assign(rows.columns.size() * rows.count, 'n');
  rows.id_given.assign(rows.count, false);
  rows.key_given.assign(rows.count, false);

  Position at;
  pg::ErrorContext context(position_context, &at);
  convert_cells(target, cells, position_of, rows, at);
  const std::string& table = target.table().shape.name;
  const bool check_not_null = !before_row_triggers;
  check_named_nulls(target, rows, table, check_not_null, at);
  check_unnamed_columns(target, rows, table, check_not_null, at);
  return rows;
}

}  // namespace partheal::append
