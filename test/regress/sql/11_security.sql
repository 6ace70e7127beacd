-- The security matrix (issue 9, section 4):
--   A. hostile identifiers round-trip in every name partheal builds;
--   B. privileges: INSERT-only appends and heals, no INSERT gets 42501 with
--      nothing created, only the owner manages, unmanages or attaches;
--   C. nothing on a caller's search_path, or on the worker's, changes what
--      partheal runs: at CREATE EXTENSION and at every call, in a database
--      of its own (regress_sec_db) whose default search_path is hostile.
-- Everything made here is dropped at the end.
\set VERBOSITY default
\set SHOW_CONTEXT never
CREATE ROLE regress_sec_owner;
CREATE ROLE regress_sec_writer;
CREATE ROLE regress_sec_reader;
CREATE ROLE regress_sec_allpriv;
CREATE ROLE regress_sec_attacker;

-- Helpers, with their own search_path. expected_child() is the README's
-- naming rule written again independently: <parent><suffix>, or, past 63
-- bytes, the parent cut at a character boundary, "_" and the 8 hex digits of
-- hash_bytes(parent) (which is what hashtext() computes), then the suffix.
CREATE SCHEMA regress_sec_util;
GRANT USAGE ON SCHEMA regress_sec_util TO PUBLIC;
CREATE FUNCTION regress_sec_util.expected_child(parent text, suffix text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $$
DECLARE
  keep text := '';
  ch text;
  room int := 63 - octet_length(suffix) - 9;
BEGIN
  IF octet_length(parent) + octet_length(suffix) <= 63 THEN RETURN parent || suffix; END IF;
  FOREACH ch IN ARRAY regexp_split_to_array(parent, '') LOOP
    EXIT WHEN octet_length(keep || ch) > room;
    keep := keep || ch;
  END LOOP;
  RETURN keep || '_' || lpad(to_hex(hashtext(parent)), 8, '0') || suffix;
END $$;
-- The suffix of a partition whose lower bound is `lo`: _p<n> with m for a
-- minus; _pYYYYMMDD[_HHMMSS] for a time; else each ASCII letter or digit
-- lowercased and every other byte "_".
CREATE FUNCTION regress_sec_util.suffix_of(typ regtype, lo text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $$
DECLARE
  out text := '_p';
  ch text;
BEGIN
  IF typ IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
    RETURN out || replace(lo, '-', 'm');
  END IF;
  IF typ IN ('date'::regtype, 'timestamp'::regtype) THEN
    out := out || to_char(lo::timestamp, 'YYYYMMDD');
    IF lo::timestamp::time <> '00:00'::time THEN
      out := out || '_' || to_char(lo::timestamp, 'HH24MISS');
    END IF;
    RETURN out;
  END IF;
  FOREACH ch IN ARRAY regexp_split_to_array(lo, '') LOOP
    out := out || CASE WHEN ch ~ '^[A-Za-z0-9]$' THEN lower(ch) ELSE repeat('_', octet_length(ch)) END;
  END LOOP;
  RETURN out;
END $$;
-- A parent's partitions from the catalog: schema, name, its length in bytes,
-- bound, owner; whether the name is the README's default name for its lower
-- bound, and whether the quoted schema.name reads back as the same table.
CREATE FUNCTION regress_sec_util.parts(parent regclass)
RETURNS TABLE (schema name, partition name, bytes int, bound text, owner name,
               default_name boolean, round_trip boolean)
LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
  SELECT n.nspname, c.relname, octet_length(c.relname::text), b.bound, c.relowner::regrole::name,
         c.relname::text = regress_sec_util.expected_child(
           p.relname::text, regress_sec_util.suffix_of(k.typ, substring(b.bound FROM 'FROM \(''(.*)''\) TO \('))),
         format('%I.%I', n.nspname, c.relname)::regclass = c.oid
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_class p ON p.oid = i.inhparent
    CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
    CROSS JOIN LATERAL (SELECT a.atttypid::regtype AS typ FROM pg_partitioned_table pt
                          JOIN pg_attribute a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
                         WHERE pt.partrelid = p.oid) k
   WHERE i.inhparent = parent
   ORDER BY CASE WHEN k.typ IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype)
                 THEN substring(b.bound FROM 'FROM \(''(.*)''\) TO \(')::numeric END,
            b.bound COLLATE "C"
$$;
CREATE FUNCTION regress_sec_util.nparts(parent regclass) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
  SELECT count(*) FROM pg_inherits WHERE inhparent = parent
$$;
-- Waits (at most 15 s) for the worker to make a parent's n-th partition.
CREATE FUNCTION regress_sec_util.wait_parts(parent regclass, n int) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN regress_sec_util.nparts(parent) >= n;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN regress_sec_util.nparts(parent);
END $$;
-- The rule itself, on a plain example: hashtext is hash_bytes.
SELECT regress_sec_util.expected_child('abc', '_p0') AS short,
       regress_sec_util.expected_child(repeat('a', 62), '_p0') AS cut;

-----------------------------------------------------------------------------
-- A. Hostile identifiers. Schemas and tables with double quotes, spaces,
-- capitals and non-ASCII letters, and names of exactly 63 bytes.
-----------------------------------------------------------------------------
\set s1 'regress_sec Sch "Q" Ünïcødé'
\set s63 'regress_sec 63 "Schéma" Ünïcødé xxxxxxxxxxxxxxxxxxxxxxxxxx'
-- Short: every derived name fits.
\set ta 'Msg "Log" Ünïcødé'
-- 63 bytes, its first 50 bytes then "Ü" across bytes 51-52, where the cut
-- for a 3-byte suffix falls (room 51): the cut must not split the letter.
\set tb 'Lög "Tåble" Ünïcødé CAPS yyyyyyyyyyyyyyyyyyyÜzzzzzzzzzzz'
-- The same but its last letter: the same cut prefix, another hash.
\set tb2 'Lög "Tåble" Ünïcødé CAPS yyyyyyyyyyyyyyyyyyyÜzzzzzzzzzzZ'
-- 60 bytes: + "_p0" is exactly 63 (no cut), + "_p10" is 64 (cut).
\set tc 'Sixty "Bytes" Ünï wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww'
-- 63 bytes, in the 63-byte schema, for the worker's create-ahead.
\set td 'Ahead "Of" Tïme vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'
-- Not managed; attach_window only: a text key and a timestamp key.
\set te 'Tëxt "Key"'
\set tf 'Stämp "Time" Key uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu'
\set pn63 'Named "Part" Ü ttttttttttttttttttttttttttttttttttttttttttttttt'
\set pn64 'Named "Part" Ü tttttttttttttttttttttttttttttttttttttttttttttttt'
SELECT format('%I.%I', :'s1', :'ta') AS "A", format('%I.%I', :'s1', :'tb') AS "B",
       format('%I.%I', :'s1', :'tb2') AS "B2", format('%I.%I', :'s1', :'tc') AS "C",
       format('%I.%I', :'s63', :'td') AS "D", format('%I.%I', :'s1', :'te') AS "E",
       format('%I.%I', :'s1', :'tf') AS "F" \gset
SELECT octet_length(:'s63') AS s63, octet_length(:'tb') AS tb, octet_length(:'tb2') AS tb2,
       octet_length(:'tc') AS tc, octet_length(:'td') AS td, octet_length(:'tf') AS tf,
       octet_length(:'pn63') AS pn63, octet_length(:'pn64') AS pn64;
CREATE SCHEMA :"s1" AUTHORIZATION regress_sec_owner;
CREATE SCHEMA :"s63" AUTHORIZATION regress_sec_owner;
SET ROLE regress_sec_owner;
CREATE TABLE :A (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :B (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :B2 (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :C (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :D (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :E (k text, v int) PARTITION BY RANGE (k);
CREATE TABLE :F (t timestamp, v int) PARTITION BY RANGE (t);
SELECT partheal_manage(:'A', 10, NULL);
SELECT partheal_manage(:'B', 10, NULL);
SELECT partheal_manage(:'B2', 10, NULL);
SELECT partheal_manage(:'C', 10, NULL);
RESET ROLE;
SELECT parent FROM partheal_config WHERE parent::oid IN (:'A'::regclass, :'B'::regclass, :'B2'::regclass, :'C'::regclass)
 ORDER BY parent::oid;

-- The heal, as a superuser: partitions belong to the table's owner.
SELECT * FROM partheal_append(:'A', '{"body": "one"}');
SELECT min(id), max(id), count(*)
  FROM partheal_append(:'A', (SELECT jsonb_agg(jsonb_build_object('body', 'b' || g)) FROM generate_series(1, 12) g)) AS a(id);
SELECT * FROM partheal_append(:'A', '{"id": -5, "body": "below zero"}');
-- partheal_reserve: the next 30 ids (14 to 43) need partitions 20, 30, 40.
SELECT partheal_reserve(:'A', 30) AS created;
-- partheal_attach_window: its default name, an already attached window, a
-- negative lower bound, a hostile partition_name of 63 bytes, one of 64.
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'A', '100', '110');
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'A', '100', '110');
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'A', '-20', '-10');
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'A', '200', '210', :'pn63');
SELECT regress_sec_util.nparts(:'A') AS before;
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'A', '300', '310', :'pn64');
\echo :SQLSTATE
SELECT regress_sec_util.nparts(:'A') AS after;
-- Every partition is in the parent's schema and reads back by its quoted
-- name; all but the one named by the caller have the README's name.
SELECT * FROM regress_sec_util.parts(:'A');
SELECT count(*) AS rows_in_a FROM :A;

-- 63-byte names: the cut keeps whole letters and adds the parent's hash.
SELECT * FROM partheal_append(:'B', '{"body": "one"}');
SELECT partheal_reserve(:'B', 15) AS created;
SELECT partition, outcome, rows_moved FROM partheal_attach_window(:'B', '-20', '-10');
SELECT * FROM regress_sec_util.parts(:'B');
SELECT * FROM partheal_append(:'B2', '{"body": "one"}');
SELECT * FROM regress_sec_util.parts(:'B2');
-- The two cut names differ only in the hash, so they stay unique.
SELECT b.partition AS b_p0, b2.partition AS b2_p0, b.partition <> b2.partition AS distinct_names,
       left(b.partition, -12) = left(b2.partition, -12) AS same_prefix
  FROM regress_sec_util.parts(:'B') b, regress_sec_util.parts(:'B2') b2
 WHERE b.bound = b2.bound;

-- 60 bytes: "_p0" fits exactly; "_p10" does not.
SELECT * FROM partheal_append(:'C', '{"body": "one"}');
SELECT * FROM partheal_append(:'C', '{"id": 15, "body": "next"}');
SELECT * FROM regress_sec_util.parts(:'C');

-- Create-ahead by the worker, in the 63-byte schema: ids 1 to 5 reach
-- partition 0's mark (50%), and the worker makes partition 10.
SET ROLE regress_sec_owner;
SELECT partheal_manage(:'D', 10, 50, premake => 0);
RESET ROLE;
SELECT count(*) FROM partheal_append(:'D', '[{"body": "a"}, {"body": "b"}, {"body": "c"}, {"body": "d"}, {"body": "e"}]') AS d(id);
SELECT regress_sec_util.wait_parts(:'D', 2) AS partitions;
SELECT * FROM regress_sec_util.parts(:'D');

-- attach_window on other key types: text (every byte not an ASCII letter or
-- digit becomes "_") and timestamp (cut, with the parent's hash).
SELECT partition, outcome FROM partheal_attach_window(:'E', 'Ab "c" Ü', 'Ab "d"');
SELECT * FROM regress_sec_util.parts(:'E');
SELECT partition, outcome FROM partheal_attach_window(:'F', '2026-03-01 06:00', '2026-03-02');
SELECT partition, outcome FROM partheal_attach_window(:'F', '2026-04-01', '2026-05-01');
SELECT * FROM regress_sec_util.parts(:'F');

-----------------------------------------------------------------------------
-- B. Privileges. The owner is an ordinary role; the writer has INSERT on the
-- table and nothing else (an identity key needs no sequence privilege); the
-- reader has SELECT only; allpriv has every privilege but ownership.
-----------------------------------------------------------------------------
CREATE SCHEMA regress_sec_priv AUTHORIZATION regress_sec_owner;
SET ROLE regress_sec_owner;
CREATE TABLE regress_sec_priv.events (id bigint GENERATED BY DEFAULT AS IDENTITY, body text)
  PARTITION BY RANGE (id);
-- A serial key: INSERT, but no USAGE on its sequence, is not enough.
CREATE TABLE regress_sec_priv.serials (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE regress_sec_priv.unmanaged (id bigserial, body text) PARTITION BY RANGE (id);
SELECT partheal_manage('regress_sec_priv.events', 10, NULL);
SELECT partheal_manage('regress_sec_priv.serials', 10, NULL);
GRANT USAGE ON SCHEMA regress_sec_priv
  TO regress_sec_writer, regress_sec_reader, regress_sec_allpriv;
GRANT INSERT ON regress_sec_priv.events, regress_sec_priv.serials TO regress_sec_writer;
GRANT SELECT ON regress_sec_priv.events TO regress_sec_reader;
GRANT ALL ON regress_sec_priv.events, regress_sec_priv.unmanaged TO regress_sec_allpriv;
GRANT ALL ON SEQUENCE regress_sec_priv.unmanaged_id_seq TO regress_sec_allpriv;
RESET ROLE;
SELECT grantee, table_name, string_agg(privilege_type, ', ' ORDER BY privilege_type) AS privileges
  FROM information_schema.role_table_grants
 WHERE table_schema = 'regress_sec_priv' AND grantee LIKE 'regress_sec_%' AND grantee <> 'regress_sec_owner'
 GROUP BY grantee, table_name ORDER BY grantee, table_name;

-- B1. INSERT only: a single row and a batch append, and each heal happens
-- for the writer; the partitions belong to the owner.
SET ROLE regress_sec_writer;
SELECT * FROM partheal_append('regress_sec_priv.events', '{"body": "w1"}');
SELECT min(id), max(id), count(*)
  FROM partheal_append('regress_sec_priv.events',
                       '[{"body": "w2"}, {"body": "w3"}, {"body": "w4"}, {"body": "w5"}, {"body": "w6"},
                         {"body": "w7"}, {"body": "w8"}, {"body": "w9"}, {"body": "w10"}, {"body": "w11"},
                         {"body": "w12"}]') AS w(id);
-- partheal_reserve reads the sequence's position, so it needs SELECT or
-- USAGE on the sequence as well (README): INSERT alone gets 42501.
SELECT partheal_reserve('regress_sec_priv.events', 7);
\echo :SQLSTATE
RESET ROLE;
GRANT SELECT ON SEQUENCE regress_sec_priv.events_id_seq TO regress_sec_writer;
SET ROLE regress_sec_writer;
-- Within the position's partition a non-owner may reserve (ids 13 to 19:
-- nothing to create) ...
SELECT partheal_reserve('regress_sec_priv.events', 7) AS created;
-- ... but not past partheal.max_ahead_partitions (1 in the tests).
SELECT partheal_reserve('regress_sec_priv.events', 1000);
\echo :SQLSTATE
RESET ROLE;
SELECT partition, bound, owner FROM regress_sec_util.parts('regress_sec_priv.events');
SELECT appends, rows_appended, heals, exhaustions FROM partheal_stats
 WHERE parent = 'regress_sec_priv.events'::regclass;
SELECT id, body FROM regress_sec_priv.events ORDER BY id LIMIT 3;

-- B2. No INSERT: 42501 for every append and reserve, before anything is
-- drawn or created. The next id (13) has a partition; 25 and 500 have none.
SELECT regress_sec_util.nparts('regress_sec_priv.events') AS partitions_before,
       pg_sequence_last_value(pg_get_serial_sequence('regress_sec_priv.events', 'id')) AS last_id_before;
SET ROLE regress_sec_reader;
SELECT * FROM partheal_append('regress_sec_priv.events', '{"body": "r1"}');
\echo :SQLSTATE
SELECT * FROM partheal_append('regress_sec_priv.events', '{"id": 25, "body": "r2"}');
\echo :SQLSTATE
SELECT * FROM partheal_append('regress_sec_priv.events', '[{"id": 500}, {"body": "r3"}]');
\echo :SQLSTATE
SELECT partheal_reserve('regress_sec_priv.events', 5);
\echo :SQLSTATE
SELECT partheal_reserve('regress_sec_priv.events', 100);
\echo :SQLSTATE
RESET ROLE;
SELECT regress_sec_util.nparts('regress_sec_priv.events') AS partitions_after,
       pg_sequence_last_value(pg_get_serial_sequence('regress_sec_priv.events', 'id')) AS last_id_after,
       (SELECT count(*) FROM regress_sec_priv.events) AS rows_after;
-- INSERT but no USAGE on a serial's sequence: 42501, as a plain INSERT, and
-- the heal the first id would need does not happen.
SET ROLE regress_sec_writer;
SELECT * FROM partheal_append('regress_sec_priv.serials', '{"body": "s1"}');
\echo :SQLSTATE
INSERT INTO regress_sec_priv.serials (body) VALUES ('plain');
\echo :SQLSTATE
SELECT partheal_reserve('regress_sec_priv.serials', 5);
\echo :SQLSTATE
RESET ROLE;
SELECT regress_sec_util.nparts('regress_sec_priv.serials') AS serials_partitions,
       pg_sequence_last_value('regress_sec_priv.serials_id_seq') AS serials_last_id;

-- B3. Only the owner registers, re-registers, unregisters or attaches:
-- 42501 for the writer, the reader and a role with every privilege.
SET ROLE regress_sec_writer;
SELECT partheal_manage('regress_sec_priv.events', 1000, premake => 0);
\echo :SQLSTATE
SELECT partheal_unmanage('regress_sec_priv.events');
\echo :SQLSTATE
SELECT * FROM partheal_attach_window('regress_sec_priv.events', '100', '110');
\echo :SQLSTATE
SET ROLE regress_sec_reader;
SELECT partheal_manage('regress_sec_priv.events', 1000, NULL);
\echo :SQLSTATE
SELECT partheal_unmanage('regress_sec_priv.events');
\echo :SQLSTATE
SET ROLE regress_sec_allpriv;
SELECT partheal_manage('regress_sec_priv.events', 1000, NULL, true);
\echo :SQLSTATE
SELECT partheal_unmanage('regress_sec_priv.events');
\echo :SQLSTATE
SELECT partheal_manage('regress_sec_priv.unmanaged', 10, NULL);
\echo :SQLSTATE
SELECT * FROM partheal_attach_window('regress_sec_priv.unmanaged', '0', '10');
\echo :SQLSTATE
SELECT * FROM partheal_attach_window('regress_sec_priv.events', '100', '110', 'allpriv_window');
\echo :SQLSTATE
RESET ROLE;
-- Nothing changed: the registrations, the id default, the partitions.
SELECT parent, partition_size, mark_percent FROM partheal_config
 WHERE parent::text LIKE 'regress_sec_priv.%' ORDER BY parent::text;
SELECT pg_get_expr(adbin, adrelid) AS serials_id_default
  FROM pg_attrdef WHERE adrelid = 'regress_sec_priv.serials'::regclass;
SELECT regress_sec_util.nparts('regress_sec_priv.events') AS events_partitions,
       regress_sec_util.nparts('regress_sec_priv.unmanaged') AS unmanaged_partitions,
       to_regclass('regress_sec_priv.allpriv_window') AS allpriv_window;
-- The owner can do all of it.
SET ROLE regress_sec_owner;
SELECT partheal_manage('regress_sec_priv.events', 20, NULL);
SELECT partheal_manage('regress_sec_priv.unmanaged', 10, NULL);
SELECT partheal_unmanage('regress_sec_priv.unmanaged');
SELECT partheal_unmanage('regress_sec_priv.serials');
SELECT partition, outcome FROM partheal_attach_window('regress_sec_priv.events', '100', '120');
RESET ROLE;
SELECT parent, partition_size, mark_percent FROM partheal_config
 WHERE parent::text LIKE 'regress_sec_priv.%' ORDER BY parent::text;

-----------------------------------------------------------------------------
-- C. search_path. A database of its own, whose default search_path puts an
-- attacker's schema before pg_catalog: every session in it starts with that
-- path, partheal's worker included (a background worker's connection takes
-- the database's settings as any session does).
-----------------------------------------------------------------------------
-- PostgreSQL refuses the characters "$'\ in the schema of an extension
-- that is not relocatable; the extension's schema has spaces, capitals and
-- non-ASCII letters.
\set ext 'Ext Sch Ünï'
\set app 'App "Sch" Ünï'
\set tm 'Msg "Q" Ü'
\set th 'Ahead "Q" Ü'
\set ty 'Days "Q" Ü'
CREATE DATABASE regress_sec_db;
ALTER DATABASE regress_sec_db SET search_path = regress_sec_evil, pg_catalog, "Ext Sch Ünï";
\c regress_sec_db
SHOW search_path;
SELECT setconfig FROM pg_catalog.pg_db_role_setting
 WHERE setdatabase OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) 'regress_sec_db');
SELECT format('%I.%I', :'app', :'tm') AS "M", format('%I.%I', :'app', :'th') AS "H",
       format('%I.%I', :'app', :'ty') AS "Y" \gset
CREATE SCHEMA regress_sec_evil AUTHORIZATION regress_sec_attacker;
CREATE SCHEMA :"ext";
GRANT USAGE ON SCHEMA :"ext" TO PUBLIC;
-- A careless grant: the attacker may create objects in the schema the
-- extension goes into.
GRANT CREATE ON SCHEMA :"ext" TO regress_sec_attacker;

-- The attacker's traps. Each records its call in hijack_log (as the
-- attacker, SECURITY DEFINER) and warns, then does what the real object does.
SET ROLE regress_sec_attacker;
SET search_path = pg_catalog;
CREATE TABLE regress_sec_evil.hijack_log (what text, ran_as name);
GRANT USAGE ON SCHEMA regress_sec_evil TO PUBLIC;
CREATE FUNCTION regress_sec_evil.note(what text, ran_as name) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO regress_sec_evil.hijack_log VALUES (what, ran_as);
  RAISE WARNING 'hijacked: %', what;
  RETURN true;
END $$;
-- CREATE EXTENSION time: operators with no exact match in pg_catalog (it has
-- no regclass = regclass), and a pg_extension_config_dump(text, text) that
-- unknown literals would prefer to pg_catalog's (regclass, text), in the
-- schema the extension script runs in.
DO $$
DECLARE
  o record;
BEGIN
  FOR o IN SELECT * FROM (VALUES
      ('=', 'regclass', 'regclass'), ('=', 'regclass', 'oid'), ('=', 'oid', 'regclass'),
      ('>', 'bigint', 'integer'), ('>=', 'integer', 'integer'), ('<=', 'integer', 'integer')) v(op, l, r)
  LOOP
    EXECUTE format('CREATE FUNCTION %I.%I(%s, %s) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog '
                   'AS %L', 'Ext Sch Ünï', 'ext_' || md5(o.op || o.l || o.r), o.l, o.r,
                   format('SELECT regress_sec_evil.note(%L, current_user) AND $1 OPERATOR(pg_catalog.%s) $2',
                          'ext schema operator ' || o.op || '(' || o.l || ', ' || o.r || ')', o.op));
    EXECUTE format('CREATE OPERATOR %I.%s (FUNCTION = %I.%I, LEFTARG = %s, RIGHTARG = %s)',
                   'Ext Sch Ünï', o.op, 'Ext Sch Ünï', 'ext_' || md5(o.op || o.l || o.r), o.l, o.r);
  END LOOP;
END $$;
CREATE FUNCTION :"ext".pg_extension_config_dump(text, text) RETURNS void
LANGUAGE sql SET search_path = pg_catalog AS $$ SELECT regress_sec_evil.note('pg_extension_config_dump(text, text)', current_user) $$;
-- Call time: operators, functions and catalog-named views in the schema
-- searched before pg_catalog.
DO $$
DECLARE
  o record;
BEGIN
  FOR o IN SELECT * FROM (VALUES
      ('=', 'regclass', 'regclass'), ('=', 'regclass', 'oid'), ('=', 'oid', 'regclass'), ('=', 'oid', 'oid'),
      ('=', 'bigint', 'bigint'), ('=', 'integer', 'integer'), ('=', 'bigint', 'integer'), ('=', 'tid', 'tid'),
      ('=', 'text', 'text'), ('=', 'name', 'name'), ('=', '"char"', '"char"'), ('=', 'date', 'date'),
      ('>=', 'bigint', 'bigint'), ('<', 'bigint', 'bigint'), ('>=', 'integer', 'integer'), ('<', 'integer', 'integer'),
      ('>=', 'date', 'date'), ('<', 'date', 'date'), ('>=', 'text', 'text'), ('<', 'text', 'text'),
      ('>=', 'timestamp', 'timestamp'), ('<', 'timestamp', 'timestamp'), ('>', 'bigint', 'integer')) v(op, l, r)
  LOOP
    EXECUTE format('CREATE FUNCTION regress_sec_evil.%I(%s, %s) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog '
                   'AS %L', 'op_' || md5(o.op || o.l || o.r), o.l, o.r,
                   format('SELECT regress_sec_evil.note(%L, current_user) AND $1 OPERATOR(pg_catalog.%s) $2',
                          'operator ' || o.op || '(' || o.l || ', ' || o.r || ')', o.op));
    EXECUTE format('CREATE OPERATOR regress_sec_evil.%s (FUNCTION = regress_sec_evil.%I, LEFTARG = %s, RIGHTARG = %s)',
                   o.op, 'op_' || md5(o.op || o.l || o.r), o.l, o.r);
  END LOOP;
  FOR o IN SELECT * FROM (VALUES
      ('unnest(anyarray)', 'SETOF anyelement', 'RETURN QUERY SELECT pg_catalog.unnest($1)'),
      ('unnest(bigint[])', 'SETOF bigint', 'RETURN QUERY SELECT pg_catalog.unnest($1)'),
      ('unnest(text[])', 'SETOF text', 'RETURN QUERY SELECT pg_catalog.unnest($1)'),
      ('unnest(jsonb[])', 'SETOF jsonb', 'RETURN QUERY SELECT pg_catalog.unnest($1)'),
      ('nextval(regclass)', 'bigint', 'RETURN pg_catalog.nextval($1)'),
      ('pg_sequence_last_value(regclass)', 'bigint', 'RETURN pg_catalog.pg_sequence_last_value($1)'),
      ('pg_advisory_xact_lock(integer, integer)', 'void', 'PERFORM pg_catalog.pg_advisory_xact_lock($1, $2)'),
      ('pg_advisory_xact_lock(bigint)', 'void', 'PERFORM pg_catalog.pg_advisory_xact_lock($1)'),
      ('partheal_nextval(regclass, regclass)', 'bigint', 'RETURN pg_catalog.nextval($2)'),
      ('pg_partition_ancestors(regclass)', 'SETOF regclass', 'RETURN QUERY SELECT relid FROM pg_catalog.pg_partition_ancestors($1)'),
      ('pg_backend_pid()', 'integer', 'RETURN pg_catalog.pg_backend_pid()'),
      ('pg_blocking_pids(integer)', 'integer[]', 'RETURN pg_catalog.pg_blocking_pids($1)'),
      ('format_type(oid, integer)', 'text', 'RETURN pg_catalog.format_type($1, $2)'),
      ('quote_ident(text)', 'text', 'RETURN pg_catalog.quote_ident($1)'),
      ('now()', 'timestamptz', 'RETURN pg_catalog.now()'),
      ('floor(numeric)', 'numeric', 'RETURN pg_catalog.floor($1)'),
      ('date_bin(interval, timestamp, timestamp)', 'timestamp', 'RETURN pg_catalog.date_bin($1, $2, $3)'),
      ('date_part(text, date)', 'double precision', 'RETURN pg_catalog.date_part($1, $2)'),
      ('make_interval(months integer)', 'interval', 'RETURN pg_catalog.make_interval(months => $1)'),
      ('isfinite(date)', 'boolean', 'RETURN pg_catalog.isfinite($1)')) v(sig, ret, body)
  LOOP
    EXECUTE format('CREATE FUNCTION regress_sec_evil.%s RETURNS %s LANGUAGE plpgsql SET search_path = pg_catalog AS %L',
                   o.sig, o.ret,
                   format('BEGIN PERFORM regress_sec_evil.note(%L, current_user); %s; END', o.sig, o.body));
  END LOOP;
  FOR o IN SELECT unnest(ARRAY['pg_class', 'pg_namespace', 'pg_inherits', 'pg_type', 'pg_attrdef',
                               'pg_constraint', 'pg_depend', 'pg_extension', 'pg_sequence', 'pg_locks',
                               'pg_publication', 'pg_publication_rel', 'pg_publication_namespace',
                               'pg_partitioned_table', 'pg_stat_activity']) AS name
  LOOP
    EXECUTE format('CREATE VIEW regress_sec_evil.%I AS SELECT * FROM pg_catalog.%I WHERE regress_sec_evil.note(%L, current_user)',
                   o.name, o.name, 'view ' || o.name);
    EXECUTE format('GRANT SELECT ON regress_sec_evil.%I TO PUBLIC', o.name);
  END LOOP;
END $$;
CREATE FUNCTION regress_sec_evil.min_date(date, date) RETURNS date
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN PERFORM regress_sec_evil.note('min(date)', current_user); RETURN pg_catalog.least($1, $2); END $$;
CREATE AGGREGATE regress_sec_evil.min(date) (SFUNC = regress_sec_evil.min_date, STYPE = date);
-- A table named like the application's, where an unqualified INSERT would land.
CREATE TABLE regress_sec_evil.:"tm" (id bigint, body text, doc jsonb);
GRANT INSERT, SELECT ON regress_sec_evil.:"tm" TO PUBLIC;
RESET search_path;
RESET ROLE;

-- CREATE EXTENSION, by a superuser, with the hostile path.
CREATE EXTENSION partheal SCHEMA :"ext";
SET search_path = pg_catalog, pg_temp;
SELECT count(*) AS traps_called FROM regress_sec_evil.hijack_log;
-- No object of the extension depends on anything the attacker made.
SELECT count(*) AS bound_to_attacker_objects
  FROM pg_depend d
  JOIN pg_depend m ON m.classid = d.classid AND m.objid = d.objid AND m.deptype = 'e'
   AND m.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'partheal')
 WHERE (d.refclassid = 'pg_operator'::regclass AND d.refobjid IN (SELECT oid FROM pg_operator WHERE oprowner = 'regress_sec_attacker'::regrole))
    OR (d.refclassid = 'pg_proc'::regclass AND d.refobjid IN (SELECT oid FROM pg_proc WHERE proowner = 'regress_sec_attacker'::regrole))
    OR (d.refclassid = 'pg_class'::regclass AND d.refobjid IN (SELECT oid FROM pg_class WHERE relowner = 'regress_sec_attacker'::regrole));
-- The trap views over partheal's own objects, made once they exist.
SET ROLE regress_sec_attacker;
CREATE VIEW regress_sec_evil.partheal_config AS SELECT * FROM :"ext".partheal_config
 WHERE regress_sec_evil.note('view partheal_config', current_user);
CREATE VIEW regress_sec_evil.partheal_stats AS SELECT * FROM :"ext".partheal_stats
 WHERE regress_sec_evil.note('view partheal_stats', current_user);
GRANT SELECT ON regress_sec_evil.partheal_config, regress_sec_evil.partheal_stats TO PUBLIC;
RESET ROLE;

-- The application: tables of an ordinary owner, with hostile names.
CREATE SCHEMA :"app" AUTHORIZATION regress_sec_owner;
SET ROLE regress_sec_owner;
CREATE TABLE :M (id bigserial, body text, doc jsonb) PARTITION BY RANGE (id);
CREATE TABLE :H (id bigserial, body text) PARTITION BY RANGE (id);
CREATE TABLE :Y (d date, v int) PARTITION BY RANGE (d);
CREATE TABLE :"app"."Days default" PARTITION OF :Y DEFAULT;
INSERT INTO :Y SELECT date '2026-01-01' + g, g FROM generate_series(0, 80, 4) g;
RESET ROLE;
-- Temporary objects of the calling session, which come before everything
-- in its path when looking up tables.
CREATE TEMP TABLE partheal_config (parent regclass, partition_size bigint, mark_percent integer);
CREATE TEMP TABLE :"tm" (id bigint, body text, doc jsonb);
CREATE TEMP VIEW pg_class AS SELECT * FROM pg_catalog.pg_class WHERE regress_sec_evil.note('temp view pg_class', current_user);
CREATE TEMP VIEW pg_inherits AS SELECT * FROM pg_catalog.pg_inherits WHERE regress_sec_evil.note('temp view pg_inherits', current_user);
-- Every DDL statement partheal runs is recorded with the search_path and
-- the role it ran under, and the kind of backend that ran it.
CREATE SCHEMA regress_sec_audit;
GRANT USAGE ON SCHEMA regress_sec_audit TO PUBLIC;
CREATE TABLE regress_sec_audit.ddl (n bigint GENERATED ALWAYS AS IDENTITY, tag text, object text,
                                    path text, ran_as name, pid integer);
GRANT INSERT ON regress_sec_audit.ddl TO PUBLIC;
CREATE FUNCTION regress_sec_audit.record() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO regress_sec_audit.ddl (tag, object, path, ran_as, pid)
  SELECT c.command_tag, c.object_identity, pg_catalog.current_setting('search_path'), current_user,
         pg_catalog.pg_backend_pid()
    FROM pg_catalog.pg_event_trigger_ddl_commands() c;
END $$;
CREATE EVENT TRIGGER regress_sec_audit ON ddl_command_end EXECUTE FUNCTION regress_sec_audit.record();

-- The traps work: an unqualified call or comparison in the session's own
-- statements reaches them (the log is emptied again afterwards).
RESET search_path;
SHOW search_path;
SELECT count(*) AS n FROM unnest(ARRAY[1, 2]::bigint[]);
SELECT 'pg_class'::regclass = 'pg_class'::regclass AS same;
SET search_path = pg_catalog, pg_temp;
SELECT what FROM regress_sec_evil.hijack_log ORDER BY what;
TRUNCATE regress_sec_evil.hijack_log;

-- Every function of partheal, called by a superuser with the hostile path.
-- The calls name partheal's objects with their schema, as a caller on such
-- a path must (unqualified, partheal_nextval or partheal_stats would be the
-- attacker's): what is tested is what partheal runs inside.
RESET search_path;
SELECT :"ext".partheal_manage(:'M', 10, NULL, nextval_default => true);
SELECT * FROM :"ext".partheal_append(:'M', '{"body": "one", "doc": {"k": 1}}');
SELECT min(id), max(id), count(*)
  FROM :"ext".partheal_append(:'M', '[{"body": "b2"}, {"body": "b3", "doc": [1]}, {"body": "b4"}, {"body": "b5"},
                                      {"body": "b6"}, {"body": "b7"}, {"body": "b8"}, {"body": "b9"},
                                      {"body": "b10"}, {"body": "b11"}, {"body": "b12"}, {"body": "b13"}]') AS m(id);
-- A plain INSERT draws its id through the default partheal_manage set.
INSERT INTO :M (body) VALUES ('plain') RETURNING id;
SELECT :"ext".partheal_nextval(:'M', pg_catalog.pg_get_serial_sequence(:'M', 'id')::pg_catalog.regclass) AS nextval;
SELECT :"ext".partheal_reserve(:'M', 25) AS created;
-- Create-ahead: ids 1 to 5 reach the mark; the worker makes partition 10.
SELECT :"ext".partheal_manage(:'H', 10, 50, premake => 0);
SELECT count(*) FROM :"ext".partheal_append(:'H', '[{"body": "a"}, {"body": "b"}, {"body": "c"}, {"body": "d"}, {"body": "e"}]') AS h(id);
SET search_path = pg_catalog, pg_temp;
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT count(*) FROM pg_catalog.pg_inherits
                WHERE inhparent OPERATOR(pg_catalog.=) '"App ""Sch"" Ünï"."Ahead ""Q"" Ü"'::pg_catalog.regclass)
              OPERATOR(pg_catalog.>=) 2;
    PERFORM pg_catalog.pg_sleep(0.05);
  END LOOP;
END $$;
RESET search_path;
-- (Only the table without create-ahead: the other's first partition may be
-- the worker's catch-up rather than a heal.)
SELECT parent, appends, rows_appended, heals, exhaustions FROM :"ext".partheal_stats
 WHERE parent OPERATOR(pg_catalog.=) :'M'::pg_catalog.regclass;
SELECT parent, partition_size, mark_percent FROM :"ext".partheal_config ORDER BY parent;
SELECT partition, outcome, rows_moved FROM :"ext".partheal_attach_window(:'Y', '2026-01-01', '2026-02-01');
SET client_min_messages = warning;
CALL :"ext".partheal_partition_data(:'Y', '1 month');
RESET client_min_messages;
SET search_path = pg_catalog, pg_temp;
-- While registered with nextval_default, the id default calls the
-- extension's partheal_nextval, not the attacker's.
SELECT p.pronamespace::regnamespace AS schema, p.proname
  FROM pg_attrdef ad
  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_proc'::regclass
  JOIN pg_proc p ON p.oid = d.refobjid
 WHERE ad.adrelid = :'M'::regclass;
RESET search_path;
SELECT :"ext".partheal_unmanage(:'M');
SELECT parent FROM :"ext".partheal_config;
-- DROP TABLE runs partheal's sql_drop event trigger, which forgets the table.
DROP TABLE :H;
SELECT count(*) AS registrations FROM :"ext".partheal_config;
SET search_path = pg_catalog, pg_temp;
DROP EVENT TRIGGER regress_sec_audit;

-- None of the traps ran, in the session or in the worker, and nothing was
-- written to the attacker's or the temporary tables.
SELECT what, count(*) FROM regress_sec_evil.hijack_log GROUP BY what ORDER BY what;
SELECT (SELECT count(*) FROM regress_sec_evil.:"tm") AS attacker_table_rows,
       (SELECT count(*) FROM pg_temp.partheal_config) AS temp_config_rows,
       (SELECT count(*) FROM pg_temp.:"tm") AS temp_table_rows;
-- partheal's DDL: in the worker (heal and create-ahead) and in the caller's
-- backend (the id default, the attach and the drain), always with
-- partheal's own search_path; partitions are made as the table's owner.
SELECT tag, object, path, CASE WHEN ran_as = session_user THEN '(the caller)' ELSE ran_as END AS ran_as,
       CASE WHEN pid = pg_backend_pid() THEN 'this session'
            ELSE (SELECT backend_type FROM pg_stat_activity a WHERE a.pid = d.pid) END AS backend
  FROM regress_sec_audit.ddl d ORDER BY n;
-- What partheal made; and unmanage put pg_catalog.nextval back.
SELECT c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound, c.relowner::regrole AS owner
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent IN (:'M'::regclass, :'Y'::regclass)
 ORDER BY i.inhparent, c.relname COLLATE "C";
SELECT (SELECT count(*) FROM :M) AS msg_rows, (SELECT count(*) FROM :Y) AS days_rows,
       (SELECT count(*) FROM :"app"."Days default") AS days_default_rows;
SELECT pg_get_expr(adbin, adrelid) AS msg_id_default FROM pg_attrdef WHERE adrelid = :'M'::regclass;
-- Nothing depends on the operators and the function planted before CREATE
-- EXTENSION: they drop without CASCADE.
SET ROLE regress_sec_attacker;
DO $$
DECLARE
  o record;
BEGIN
  FOR o IN SELECT oid::regoperator AS op FROM pg_catalog.pg_operator
            WHERE oprnamespace OPERATOR(pg_catalog.=) '"Ext Sch Ünï"'::pg_catalog.regnamespace
  LOOP
    EXECUTE format('DROP OPERATOR %s', o.op);
  END LOOP;
END $$;
DROP FUNCTION :"ext".pg_extension_config_dump(text, text);
RESET ROLE;
SELECT count(*) AS attacker_objects_left_in_ext_schema
  FROM pg_operator WHERE oprnamespace = (SELECT oid FROM pg_namespace WHERE nspname = :'ext');
\c partheal_regress
DROP DATABASE regress_sec_db;

-----------------------------------------------------------------------------
-- Clean up: the tables (their registrations go with them) and the roles.
-----------------------------------------------------------------------------
SET client_min_messages = warning;
DROP SCHEMA :"s1", :"s63", regress_sec_priv, regress_sec_util CASCADE;
RESET client_min_messages;
SELECT count(*) AS registrations_of_dropped_tables
  FROM partheal_config c WHERE NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = c.parent);
DROP ROLE regress_sec_owner, regress_sec_writer, regress_sec_reader, regress_sec_allpriv,
  regress_sec_attacker;
