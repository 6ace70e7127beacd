#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "append/rows.hpp"
#include "pg/boundary.hpp"

extern "C" {
#include "lib/stringinfo.h"
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

// The text a column's input function gets. json and jsonb columns take the
// value as JSON, so a string keeps its quotes.
char* text_of(const JsonbValue& v, bool as_json) {
  return pg::guard([&]() -> char* {
    switch (v.type) {
      case jbvString: {
        char* s = pnstrdup(v.val.string.val, v.val.string.len);
        if (!as_json) return s;
        StringInfoData buf;
        initStringInfo(&buf);
        escape_json(&buf, s);
        return buf.data;
      }
      case jbvNumeric:
        return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
      case jbvBool:
        return pstrdup(v.val.boolean ? "true" : "false");
      case jbvBinary:
        return JsonbToCString(nullptr, v.val.binary.data, v.val.binary.len);
      default:
        return nullptr;
    }
  });
}

}  // namespace

Rows read_rows(const Target& target, Jsonb* json) {
  std::vector<Cell> cells;
  Rows rows;
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
    rows.count = 1;
  } else {
    JsonbIterator* it = pg::guard([&] { return JsonbIteratorInit(root); });
    JsonbValue v;
    for (;;) {
      JsonbIteratorToken token = pg::guard([&] { return JsonbIteratorNext(&it, &v, true); });
      if (token == WJB_DONE) break;
      if (token != WJB_ELEM) continue;
      bool is_object = v.type == jbvBinary && JsonContainerIsObject(v.val.binary.data);
      if (!is_object)
        pg::fail(ERRCODE_INVALID_PARAMETER_VALUE,
                 fmt::format("element {} of rows is {}, not an object", rows.count + 1,
                             v.type == jbvBinary ? "an array" : with_article(v.type)),
                 {}, kRowsHint);
      read_object(target, v.val.binary.data, rows.count, cells);
      ++rows.count;
    }
    if (rows.count == 0)
      pg::fail(ERRCODE_INVALID_PARAMETER_VALUE, "rows is an empty array", {},
               "Pass at least one object; {} is a row that takes every default.");
  }

  // The columns: every key any row names, plus the key column, in attnum order.
  for (const Cell& c : cells) rows.columns.push_back(c.column);
  rows.columns.push_back(target.key_index());
  std::sort(rows.columns.begin(), rows.columns.end());
  rows.columns.erase(std::unique(rows.columns.begin(), rows.columns.end()), rows.columns.end());
  std::vector<int> position_of(target.key_index() + 1, -1);
  for (size_t p = 0; p < rows.columns.size(); ++p) {
    if (rows.columns[p] >= static_cast<int>(position_of.size()))
      position_of.resize(rows.columns[p] + 1, -1);
    position_of[rows.columns[p]] = static_cast<int>(p);
  }
  rows.key_position = position_of[target.key_index()];
  rows.values.assign(rows.columns.size() * rows.count, Datum(0));
  rows.nulls.assign(rows.columns.size() * rows.count, 'n');
  rows.id_given.assign(rows.count, false);

  for (const Cell& cell : cells) {
    const Column& column = target.column(cell.column);
    int position = position_of[cell.column];
    if (position == rows.key_position) rows.id_given[cell.row] = true;
    char* text = text_of(cell.value, column.is_json);
    if (text == nullptr) continue;  // JSON null: SQL NULL
    Datum d = pg::guard([&] {
      return InputFunctionCall(const_cast<FmgrInfo*>(&column.input), text, column.ioparam,
                               column.typmod);
    });
    rows.value(position, cell.row) = d;
    rows.null(position, cell.row) = ' ';
  }

  // A NULL that a NOT NULL column would refuse is refused now, before any id
  // is drawn or partition made for a row that cannot land.
  for (size_t p = 0; p < rows.columns.size(); ++p) {
    const Column& column = target.column(rows.columns[p]);
    if (!column.not_null || static_cast<int>(p) == rows.key_position) continue;
    for (int r = 0; r < rows.count; ++r)
      if (rows.null(static_cast<int>(p), r) == 'n')
        pg::fail(ERRCODE_NOT_NULL_VIOLATION,
                 fmt::format("null value in column \"{}\" of relation \"{}\" violates not-null "
                             "constraint",
                             column.name, target.table().shape.name),
                 fmt::format("Row {} gives no value for it, or null.", r + 1));
  }
  return rows;
}

}  // namespace partheal::append
