#include <fmt/format.h>

#include <cstring>

#include "partitions/key_default.hpp"
#include "pg/boundary.hpp"
#include "pg/spi.hpp"

extern "C" {
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

namespace partheal::partitions {

// The expression under the implicit casts PostgreSQL adds (serial's
// nextval() is bigint, cast to integer for an integer column).
Node* without_implicit_casts(Node* node) {
  for (;;) {
    if (node != nullptr && IsA(node, FuncExpr) &&
        castNode(FuncExpr, node)->funcformat == COERCE_IMPLICIT_CAST &&
        list_length(castNode(FuncExpr, node)->args) == 1) {
      node = static_cast<Node*>(linitial(castNode(FuncExpr, node)->args));
      continue;
    }
    if (node != nullptr && IsA(node, RelabelType)) {
      node = reinterpret_cast<Node*>(castNode(RelabelType, node)->arg);
      continue;
    }
    return node;
  }
}

namespace {

bool regclass_args(FuncExpr* call, Oid* first, Oid* second) {
  if (list_length(call->args) != 2) return false;
  auto* a = static_cast<Node*>(linitial(call->args));
  auto* b = static_cast<Node*>(lsecond(call->args));
  if (!IsA(a, Const) || !IsA(b, Const)) return false;
  auto* ca = castNode(Const, a);
  auto* cb = castNode(Const, b);
  if (ca->constisnull || cb->constisnull || ca->consttype != REGCLASSOID ||
      cb->consttype != REGCLASSOID)
    return false;
  *first = DatumGetObjectId(ca->constvalue);
  *second = DatumGetObjectId(cb->constvalue);
  return true;
}

}  // namespace

bool is_partheal_nextval_call(Node* expr, Oid* parent, Oid* sequence) {
  Node* top = without_implicit_casts(expr);
  if (top == nullptr || !IsA(top, FuncExpr)) return false;
  auto* call = castNode(FuncExpr, top);
  if (!regclass_args(call, parent, sequence)) return false;
  Oid funcid = call->funcid;
  return pg::guard([&] {
    const char* name = get_func_name(funcid);
    if (name == nullptr || strcmp(name, "partheal_nextval") != 0) return false;
    Oid extension = get_extension_oid("partheal", true);
    return OidIsValid(extension) && getExtensionOfObject(ProcedureRelationId, funcid) == extension;
  });
}

std::vector<PartHealDefault> partheal_nextval_defaults(Relation rel) {
  std::vector<PartHealDefault> out;
  TupleDesc desc = RelationGetDescr(rel);
  for (int i = 0; i < desc->natts; ++i) {
    Form_pg_attribute att = TupleDescAttr(desc, i);
    if (att->attisdropped || !att->atthasdef) continue;
    AttrNumber attnum = att->attnum;
    Node* def = pg::guard([&] { return build_column_default(rel, attnum); });
    Oid parent = InvalidOid;
    Oid sequence = InvalidOid;
    if (is_partheal_nextval_call(def, &parent, &sequence))
      out.push_back(PartHealDefault{NameStr(att->attname), sequence});
  }
  return out;
}

std::vector<std::string> restore_nextval_sql(Oid relid) {
  Relation rel = pg::guard([&] { return relation_open(relid, AccessShareLock); });
  std::vector<PartHealDefault> found = partheal_nextval_defaults(rel);
  std::string table = pg::guarded_text([&] {
    return psprintf("%s.%s", quote_identifier(get_namespace_name(RelationGetNamespace(rel))),
                    quote_identifier(RelationGetRelationName(rel)));
  });
  pg::guard([&] { relation_close(rel, NoLock); });
  std::vector<std::string> out;
  for (const PartHealDefault& d : found)
    out.push_back(fmt::format("ALTER TABLE ONLY {} ALTER COLUMN {} SET DEFAULT {}", table,
                              pg::quoted(d.column), plain_nextval_sql(d.sequence)));
  return out;
}

std::string regclass_literal(Oid relid) {
  std::string qualified = pg::guarded_text([&] {
    return psprintf("%s.%s", quote_identifier(get_namespace_name(get_rel_namespace(relid))),
                    quote_identifier(get_rel_name(relid)));
  });
  const char* text = qualified.c_str();
  return pg::guarded_text([&] { return quote_literal_cstr(text); }) + "::pg_catalog.regclass";
}

std::string plain_nextval_sql(Oid sequence) {
  return fmt::format("pg_catalog.nextval({})", regclass_literal(sequence));
}

}  // namespace partheal::partitions
