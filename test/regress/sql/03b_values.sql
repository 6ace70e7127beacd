-- partheal_append converts values as a plain INSERT would, for every column
-- type, and refuses what INSERT refuses before any id is drawn or any
-- partition created.
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN nn_text AS text NOT NULL;
CREATE DOMAIN positive AS int CHECK (VALUE > 0);
CREATE TABLE vals (
  id    bigserial,
  tags  text[],
  grid  int[],
  docs  jsonb[],
  p     pair,
  n     int,
  big   bigint,
  nn    nn_text DEFAULT 'dflt',
  pos   positive
) PARTITION BY RANGE (id);
SELECT partheal_manage('vals', 10, NULL);

-- Composite and array columns, one row and in a batch. A JSON array is an
-- array, nested arrays and nulls included; an array literal still works.
SELECT * FROM partheal_append('vals', '{"tags": ["a", "b c", "q\"uote", null], "p": "(1,x)"}');
SELECT * FROM partheal_append('vals', '[{"tags": ["d"], "grid": [[1, 2], [3, 4]], "p": "(2,y)"},
                                        {"tags": "{e,f}", "grid": [5], "docs": [{"k": 1}, "s", 2]},
                                        {"p": "(3,z)"}]');
SELECT id, tags, grid, docs, p FROM vals ORDER BY id;

-- An integral JSON number is the integer it is; a fraction is not.
SELECT * FROM partheal_append('vals', '[{"n": 1.0, "big": 2e3}, {"n": -4.00}]');
SELECT id, n, big FROM vals WHERE n IS NOT NULL ORDER BY id;
SELECT * FROM partheal_append('vals', '{"n": 1.5}');
\echo :LAST_ERROR_SQLSTATE

-- What INSERT refuses is refused before the sequence moves or a partition
-- is made: each error names the row and the column.
SELECT last_value AS seq_before FROM vals_id_seq \gset
SELECT count(*) AS parts_before FROM pg_inherits WHERE inhparent = 'vals'::regclass \gset
-- A NOT NULL domain refuses null, given or left out, as INSERT does.
SELECT * FROM partheal_append('vals', '[{"n": 1}, {"nn": null}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('vals', '[{"nn": "x"}, {"n": 1, "id": 95}]');
\echo :LAST_ERROR_SQLSTATE
-- A domain's CHECK.
SELECT * FROM partheal_append('vals', '[{"pos": 1}, {"pos": 0}]');
\echo :LAST_ERROR_SQLSTATE
-- A bad value deep in a batch names its row and column.
SELECT * FROM partheal_append('vals',
  (SELECT jsonb_agg(CASE WHEN g = 9999 THEN jsonb_build_object('n', 'x')
                         ELSE jsonb_build_object('n', g) END) FROM generate_series(1, 10000) g));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('vals', '[{"grid": [1]}, {"grid": ["one"]}]');
\echo :LAST_ERROR_SQLSTATE
SELECT last_value = :seq_before AS no_id_drawn FROM vals_id_seq;
SELECT count(*) = :parts_before AS no_partition_made FROM pg_inherits WHERE inhparent = 'vals'::regclass;

-- A NOT NULL column with no default that no row names is refused up front too.
CREATE TABLE strict_vals (id bigserial, must text NOT NULL, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('strict_vals', 10, NULL);
SELECT * FROM partheal_append('strict_vals', '{"v": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT last_value, is_called FROM strict_vals_id_seq;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'strict_vals'::regclass;
-- A NOT NULL domain column with no default of its own, left out.
CREATE TABLE strict_dom (id bigserial, d nn_text, v int) PARTITION BY RANGE (id);
SELECT partheal_manage('strict_dom', 10, NULL);
SELECT * FROM partheal_append('strict_dom', '{"v": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT last_value, is_called FROM strict_dom_id_seq;
SELECT count(*) AS partitions FROM pg_inherits WHERE inhparent = 'strict_dom'::regclass;

-- A generated column named in a row, even as null, is refused as INSERT
-- refuses it, before any id is drawn; left out, it is computed.
CREATE TABLE gen_vals (id bigserial, n int, twice int GENERATED ALWAYS AS (n * 2) STORED)
  PARTITION BY RANGE (id);
SELECT partheal_manage('gen_vals', 10, NULL);
SELECT * FROM partheal_append('gen_vals', '[{"n": 1}, {"n": 2, "twice": 4}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM partheal_append('gen_vals', '{"n": 1, "twice": null}');
\echo :LAST_ERROR_SQLSTATE
SELECT last_value, is_called FROM gen_vals_id_seq;
SELECT * FROM partheal_append('gen_vals', '{"n": 21}');
SELECT id, n, twice FROM gen_vals;

-- Element types keep their own rules: box[] separates elements with ';',
-- and an integral JSON number is an integer element too.
CREATE TABLE shapes (id bigserial, boxes box[], ints int[]) PARTITION BY RANGE (id);
SELECT partheal_manage('shapes', 10, NULL);
SELECT count(*) FROM partheal_append('shapes', '[{"boxes": ["(1,1),(0,0)", "(2,2),(1,1)"], "ints": [1.0, 2]}, {"ints": []}]');
SELECT boxes, ints FROM shapes ORDER BY id;

-- A NOT NULL column that a BEFORE trigger fills is left to the INSERT, as
-- INSERT checks NOT NULL after BEFORE triggers.
CREATE TABLE stamped (id bigserial, body text, made_by text NOT NULL) PARTITION BY RANGE (id);
SELECT partheal_manage('stamped', 10, NULL);
CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.made_by := coalesce(NEW.made_by, 'trigger'); RETURN NEW; END $$;
CREATE TRIGGER stamp BEFORE INSERT ON stamped FOR EACH ROW EXECUTE FUNCTION stamp();
SELECT count(*) FROM partheal_append('stamped', '[{"body": "a"}, {"body": "b", "made_by": null}]');
SELECT body, made_by FROM stamped ORDER BY id;

DROP TABLE vals, strict_vals, strict_dom, gen_vals, shapes, stamped;
DROP FUNCTION stamp();
DROP DOMAIN nn_text;
DROP DOMAIN positive;
DROP TYPE pair;
