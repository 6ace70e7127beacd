-- partheal 0.6 -> 0.7: partheal_cover, which makes the partitions that rows
-- with the keys it is given need, under the limits partheal_append puts on
-- such rows; and partheal_cover_for_node, through which a Citus worker
-- node's append asks the coordinator for a partition.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.7'" to load this file. \quit

CREATE FUNCTION @extschema@.partheal_cover(parent regclass, keys text[])
  RETURNS integer LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_cover';
COMMENT ON FUNCTION @extschema@.partheal_cover(regclass, text[]) IS
  'create the partitions that rows with these key values (ids or times, as text) need, before '
  'a COPY or INSERT ... SELECT that gives its own keys; returns the partitions created';

-- Called over Citus's connection from a worker node: the outcome comes back
-- as JSON text, since Citus relays only an error's first line.
CREATE FUNCTION @extschema@.partheal_cover_for_node(parent text, keys text[])
  RETURNS text LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_cover_for_node';
COMMENT ON FUNCTION @extschema@.partheal_cover_for_node(text, text[]) IS
  'partheal_cover for a Citus worker node''s heal, answering in JSON; not for direct use';
