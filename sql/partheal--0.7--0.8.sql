-- partheal 0.8: a Citus worker node's heal says whether the key was drawn
-- there or given by the caller, so that the coordinator judges the given
-- ids of every node's range against the retention, and does not hold ids
-- drawn in a big batch to the window of given ones.
\echo Use "ALTER EXTENSION partheal UPDATE TO '0.8'" to load this file. \quit

-- Called over Citus's connection from a worker node: the outcome comes back
-- as JSON text, since Citus relays only an error's first line.
DROP FUNCTION @extschema@.partheal_cover_for_node(text, text[]);
CREATE FUNCTION @extschema@.partheal_cover_for_node(parent text, keys text[], drawn boolean)
  RETURNS text LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'partheal_cover_for_node';
COMMENT ON FUNCTION @extschema@.partheal_cover_for_node(text, text[], boolean) IS
  'partheal_cover for a Citus worker node''s heal, answering in JSON; not for direct use';
