# partheal on the Citus coordinator: the heal, create-ahead, partheal_nextval,
# partheal_reserve + COPY, the self-deadlock check with Citus's locks, a miss
# relayed from a shard, and partheal_attach_window, partheal_partition_data
# and the drain on a distributed table with a distributed DEFAULT.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use PartHeal;
use Citus;

my ($c, $w1, $w2) = Citus::new_cluster(extra => "partheal.naptime = 200\npartheal.heal_wait_timeout = '10s'");
my $sql = sub { $c->safe_psql('postgres', shift) };
my $shards = sub {  # the shards of a table, from the coordinator's metadata
  $sql->("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = '$_[0]'::regclass");
};
my $children = sub {  # a parent's partitions, as a node's catalog has them
  my ($node, $parent) = @_;
  $node->safe_psql('postgres', "SELECT count(*) FROM pg_inherits WHERE inhparent = '$parent'::regclass");
};

$sql->('CREATE EXTENSION partheal');
is($w1->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'partheal'"), PartHeal::current_version(),
  'CREATE EXTENSION partheal on the coordinator is made on the worker nodes too');

# --- the heal --------------------------------------------------------------
$sql->(q{
  CREATE TABLE ev (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  CREATE TABLE ev_p0 PARTITION OF ev FOR VALUES FROM (0) TO (100);
  SELECT create_distributed_table('ev', 'tenant', shard_count => 4);
  SELECT partheal_manage('ev', 100, mark_percent => NULL, premake => 0);
  SELECT setval('ev_id_seq', 99);
});
is($sql->(q{SELECT partheal_append('ev', '{"tenant": 1, "body": "a"}')}), '100',
  'an append past the last partition of a distributed table lands');
is($sql->(q{SELECT count(*) FROM ev WHERE id = 100}), '1', 'and its row is there');
is($shards->('ev_p100'), '4', 'the partition the heal made is distributed, with the parent\'s 4 shards');
is($sql->(q{SELECT colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'ev'::regclass)
              FROM pg_dist_partition WHERE logicalrelid = 'ev_p100'::regclass}), 't',
  'colocated with the parent');
is($children->($w1, 'ev'), $children->($c, 'ev'), 'a worker node\'s metadata has the new partition too');
ok($c->wait_for_log(qr/PHL01 heal: no partition of "public.ev" for id 100/, 0), 'PHL01 says the heal');
# A plain INSERT into a distributed table is Citus's to plan: no insert gate
# under it (docs/citus.md).
unlike($sql->(q{EXPLAIN (COSTS OFF) INSERT INTO ev (tenant, body) VALUES (1, 'x')}), qr/PartHealGate/,
  'a plain INSERT into a distributed table has no insert gate: Citus plans it');

# A multi-shard UPDATE earlier in the caller's transaction holds Citus's
# shard locks: the worker's creation does not need them.
$sql->(q{
  BEGIN;
  UPDATE ev SET body = 'b' WHERE true;
  SELECT partheal_append('ev', '{"tenant": 2, "body": "c", "id": 250}');
  COMMIT;
});
is($sql->(q{SELECT count(*) FROM ev WHERE id = 250}), '1',
  'a heal after a multi-shard UPDATE in the same transaction commits with it');

# --- Citus's locks: PH004 at once, not a timeout ---------------------------
# create_distributed_table in the caller's transaction holds Citus's
# colocation locks in SHARE mode, as the worker's creation takes them: the
# heal goes through.
$sql->(q{
  BEGIN;
  CREATE TABLE other (tenant int, x int);
  SELECT create_distributed_table('other', 'tenant', colocate_with => 'ev');
  SELECT partheal_append('ev', '{"tenant": 3, "id": 950}');
  COMMIT;
});
is($sql->(q{SELECT count(*) FROM ev WHERE id = 950}), '1',
  'an append that heals after create_distributed_table in the same transaction commits with it');
# citus_add_node, citus_remove_node and citus_update_node hold pg_dist_node
# EXCLUSIVE to their commit, and the worker's creation of shards reads it
# under ROW SHARE: the append is refused at once, not after a timeout.
my ($rc, $out, $err) = $c->psql('postgres', q{
  BEGIN;
  LOCK pg_dist_node IN EXCLUSIVE MODE;
  SELECT partheal_append('ev', '{"tenant": 3, "id": 1950}');
  COMMIT;
}, on_error_stop => 1, extra_params => ['-v', 'VERBOSITY=verbose']);
like($err, qr/ERROR:  PH004: cannot create a partition of "public.ev" while this transaction holds a lock of Citus's/,
  'an append that needs a heal while the transaction holds pg_dist_node as citus_add_node does is refused with PH004');
like($err, qr/This transaction holds ExclusiveLock on Citus's catalog pg_dist_node/, 'its DETAIL names the lock');
is($sql->(q{SELECT count(*) FROM ev WHERE id = 1950}), '0', 'nothing was inserted');
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname = 'ev_p1900'}), '0', 'nor created');
# A shard move or a rebalance in the caller's transaction holds Citus's
# colocation locks to its commit, in modes that a partition's creation
# (SHARE) waits for: the append that needs a heal after it is refused at
# once too, naming one of those locks (which one the move holds first
# depends on the lock table's order: its cleanup operation lock, its
# placement colocation lock).
$sql->(q{
  CREATE TABLE mvt (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('mvt', 'tenant', shard_count => 3);
  SELECT partheal_manage('mvt', 100, mark_percent => NULL, premake => 0);
});
my ($mvt_shard, $mvt_port) = split /\|/,
  $sql->(q{SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'mvt'::regclass ORDER BY shardid LIMIT 1});
my $mvt_to = $mvt_port == $w1->port ? $w2->port : $w1->port;
for my $op (["citus_move_shard_placement($mvt_shard, 'localhost', $mvt_port, 'localhost', $mvt_to, 'block_writes')",
             'a shard move', qr/This transaction holds \w+ on a Citus [a-z ]+ lock;/],
            ["rebalance_table_shards('mvt', shard_transfer_mode => 'block_writes')",
             'a rebalance', qr/This transaction holds \w+ on a Citus [a-z ]+ lock;/]) {
  my ($call, $what, $lock) = @$op;
  ($rc, $out, $err) = $c->psql('postgres', qq{
    BEGIN;
    SELECT $call;
    SELECT partheal_append('mvt', '{"tenant": 1, "id": 5000}');
    COMMIT;
  }, on_error_stop => 1, timeout => 60, extra_params => ['-v', 'VERBOSITY=verbose']);
  like($err, qr/ERROR:  PH004: cannot create a partition of "public.mvt"/,
    "an append that needs a heal after $what in the same transaction is refused with PH004") or diag($err);
  like($err, $lock, 'its DETAIL names the lock');
}
is($sql->(q{SELECT count(*) FROM mvt}) . ' ' . $sql->(q{SELECT count(*) FROM pg_class WHERE relname = 'mvt_p5000'}),
  '0 0', 'nothing was inserted, no partition created');

# --- a miss relayed from a shard -------------------------------------------
# The coordinator's catalog has ev_p100, but its shards on the worker nodes
# are detached by hand from their shard parents: an insert of id 150 fails
# there, relayed by Citus without a table name. In a batch whose other row
# needs a heal, the rerun after the heal meets it: the loop reads the
# catalog again, finds every partition there, and passes the shard's own
# error on (not PH001).
my @detached;
for my $node ($w1, $w2) {
  my $pairs = $node->safe_psql('postgres', q{
    SET citus.show_shards_for_app_name_prefixes = '*';
    SELECT p.relname || ' ' || c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      JOIN pg_class p ON p.oid = i.inhparent
     WHERE c.relname ~ '^ev_p100_[0-9]+$' AND p.relname ~ '^ev_[0-9]+$'});
  for (split /\n/, $pairs) {
    my ($parent, $child) = split / /;
    my $bound = $node->safe_psql('postgres', "SET citus.show_shards_for_app_name_prefixes = '*';
      SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = '$child'");
    $node->safe_psql('postgres', "SET citus.enable_manual_changes_to_shards = on;
      ALTER TABLE $parent DETACH PARTITION $child");
    push @detached, [$node, $parent, $child, $bound];
  }
}
is(scalar(@detached), 4, 'the 4 shards of ev_p100 are detached from their shard parents');
($rc, $out, $err) = $c->psql('postgres', q{
  SELECT partheal_append('ev', '[{"tenant": 1, "id": 1050}, {"tenant": 2, "id": 150}, {"tenant": 3, "id": 151},
                                 {"tenant": 4, "id": 152}, {"tenant": 5, "id": 153}]')
}, extra_params => ['-v', 'VERBOSITY=verbose']);
like($err, qr/ERROR:  (23514|XX000): no partition of relation "ev_\d+" found for row/,
  'the shard\'s routing error reaches the caller unchanged');
unlike($err, qr/PH001/, 'not as PH001: the catalog has every partition, so there is nothing to heal');
is($sql->(q{SELECT count(*) FROM ev WHERE id IN (1050, 150, 151, 152, 153)}), '0', 'no row of the batch is in');
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname = 'ev_p1000'}), '1',
  'the partition its heal made is kept (it was committed by the worker)');
for (@detached) {
  my ($node, $parent, $child, $bound) = @$_;
  $node->safe_psql('postgres', "SET citus.enable_manual_changes_to_shards = on;
    ALTER TABLE $parent ATTACH PARTITION $child $bound");
}
is($sql->(q{SELECT partheal_append('ev', '{"tenant": 2, "id": 150}')}), '150', 'with the shards put back, the row lands');

# A table registered before it is distributed: its single-row appends go
# through the executor from then on (the direct path would write into the
# coordinator's empty shell partitions, where no query of Citus's looks).
$sql->(q{
  CREATE TABLE late (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('late', 100);
  SELECT partheal_append('late', '{"tenant": 1, "body": "local"}');
  SELECT create_distributed_table('late', 'tenant', shard_count => 4);
  SELECT truncate_local_data_after_distributing_table('late_p0');
  SELECT partheal_append('late', '{"tenant": 1, "body": "distributed"}');
  SELECT partheal_append('late', '{"tenant": 2, "body": "distributed"}');
});
is($sql->(q{SELECT string_agg(id || ' ' || body, ', ' ORDER BY id) FROM late}), '1 local, 2 distributed, 3 distributed',
  'a table distributed after its registration gets its single-row appends through Citus, in the same session');

# A REPEATABLE READ transaction whose snapshot was taken before another
# session distributed the table: partheal reads Citus's metadata under the
# catalog snapshot, so its single-row append still goes through Citus (the
# transaction's own snapshot would not see the table as distributed).
$sql->(q{
  CREATE TABLE rr (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('rr', 100);
});
my $rr = $c->background_psql('postgres');
$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class');
$sql->(q{SELECT create_distributed_table('rr', 'tenant', shard_count => 4)});
$rr->query_safe(q{SELECT partheal_append('rr', '{"tenant": 1, "body": "repeatable read"}')});
$rr->query_safe('COMMIT');
$rr->quit;
is($sql->(q{SELECT count(*) FROM rr WHERE body = 'repeatable read'}), '1',
  'an append in a transaction whose snapshot predates the distribution lands where Citus reads');

# --- lock waits on the worker nodes are bounded as on the coordinator -----
# The ATTACH of a distributed partition runs on the worker nodes too, one
# shard at a time. A session there holding a shard of the parent ACCESS
# EXCLUSIVE makes it wait: partheal's lock_timeout goes with it, so the
# heal fails with the lock timeout (55P03) instead of the worker waiting
# on that node until the appender's partheal.heal_wait_timeout (PH002),
# and the worker is free for the next request.
$sql->(q{
  CREATE TABLE lk (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('lk', 'tenant', shard_count => 4);
  SELECT partheal_manage('lk', 100, mark_percent => NULL, premake => 0);
});
my ($lk_shard, $lk_port) = split /\|/,
  $sql->(q{SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'lk'::regclass ORDER BY shardid LIMIT 1});
my $holder = ($lk_port == $w1->port ? $w1 : $w2)->background_psql('postgres');
$holder->query_safe("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $lk_shard IN ACCESS EXCLUSIVE MODE");
my ($lk_rc, $lk_out, $lk_err) = $c->psql('postgres', q{SELECT partheal_append('lk', '{"tenant": 1, "id": 5000}')},
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($lk_err, qr/ERROR:  55P03: could not create the partition of "lk" for id 5000: .*lock timeout/,
  'a heal whose shard DDL waits for a lock on a worker node fails with the lock timeout, not PH002')
  or diag($lk_err);
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'lk_p%'}), '0', 'and leaves no table behind');
$holder->query_safe('COMMIT');
$holder->quit;
is($sql->(q{SELECT partheal_append('lk', '{"tenant": 1, "id": 5000}')}), '5000',
  'once the lock is gone, the next append heals');

# What runs in the caller's transaction gets the same bound on the worker
# nodes, and the rest of that transaction has the caller's settings back:
# partheal_manage's premake, with a shard of the new table's parent held
# ACCESS EXCLUSIVE on a worker node, fails with the lock timeout after
# partheal.ddl_lock_timeout instead of waiting for the holder.
$sql->(q{
  CREATE TABLE lkm (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('lkm', 'tenant', shard_count => 4);
});
my ($lkm_shard, $lkm_port) = split /\|/,
  $sql->(q{SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'lkm'::regclass ORDER BY shardid LIMIT 1});
$holder = ($lkm_port == $w1->port ? $w1 : $w2)->background_psql('postgres');
$holder->query_safe("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $lkm_shard IN ACCESS EXCLUSIVE MODE");
my ($lkm_rc, $lkm_out, $lkm_err, $lkm_timed_out);
$c->psql('postgres', q{SELECT partheal_manage('lkm', 100, premake => 1)},
  stdout => \$lkm_out, stderr => \$lkm_err, timeout => 30, timed_out => \$lkm_timed_out,
  extra_params => ['-v', 'VERBOSITY=verbose']);
ok(!$lkm_timed_out, 'partheal_manage\'s premake does not wait on a worker node for the holder');
like($lkm_err, qr/ERROR:  55P03: .*lock timeout/, 'it fails with the lock timeout') or diag($lkm_err);
is($sql->(q{SELECT count(*) FROM partheal_config WHERE parent = 'lkm'::regclass}), '0', 'and registers nothing');
$holder->query_safe('COMMIT');
$holder->quit;
# The worker nodes' lock_timeout in the rest of the transaction: their own
# default when the caller does not pass its SET LOCALs on, the caller's when
# it does. Read on the node of tenant 1's shard, in the transaction.
for my $case (['none', '0'], ['local', '7s']) {
  my ($propagate, $remote) = @$case;
  # The premake's partitions made again, so that it runs DDL again.
  $sql->(q{SELECT partheal_unmanage('lkm'); DROP TABLE lkm_p0, lkm_p100}) if $propagate eq 'local';
  my $after = $sql->(qq{
    BEGIN;
    SET LOCAL citus.propagate_set_commands = '$propagate';
    SET LOCAL lock_timeout = '7s';
    SELECT partheal_manage('lkm', 100, premake => 1) IS NOT NULL;
    INSERT INTO lkm (tenant) VALUES (1);
    SELECT current_setting('lock_timeout') || ' ' || current_setting('citus.propagate_set_commands');
    SELECT lt FROM (SELECT current_setting('lock_timeout') AS lt, tenant FROM lkm) x WHERE tenant = 1 LIMIT 1;
    COMMIT;
  });
  is($after, "t\n7s $propagate\n$remote",
    "after the premake, the caller's transaction has its own settings back, and the worker nodes lock_timeout $remote");
}

# --- retention ---------------------------------------------------------------
# An id-keyed distributed table with a retention of 300 ids: at position
# 1000, the partitions of the coordinator's range ending at or below id 700
# are detached and dropped, their shards with them.
$sql->(q{
  CREATE TABLE msg (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('msg', 'tenant', shard_count => 4);
  SELECT partheal_manage('msg', 100, premake => 1, retention => 300);
  SELECT count(*) FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('tenant', g, 'body', 'm')) FROM generate_series(1, 1000) g));
});
ok(PartHeal::within($c, q{SELECT count(*) = 0 FROM pg_class WHERE relname IN ('msg_p0', 'msg_p100', 'msg_p200', 'msg_p300', 'msg_p400', 'msg_p500', 'msg_p600')}, 30),
  'retention drops the partitions of a distributed table ending at or below the position minus 300 ids');
is($sql->(q{SELECT min(id), max(id), count(*) FROM msg}), '700|1000|301', 'the rows above stay');
is($sql->(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text ~ '^msg_p[0-6]00?$'}), '0',
  'and Citus\'s metadata has none of the dropped partitions');
# (Citus hides shards from pg_class unless told to show them; the kept
# partitions' shards are counted too, so that a hidden shard cannot pass.)
like($w1->safe_psql('postgres', q{SET citus.show_shards_for_app_name_prefixes = '*';
    SELECT count(*) FILTER (WHERE relname ~ '^msg_p[0-6]00?_[0-9]+$') || '|' ||
           count(*) FILTER (WHERE relname ~ '^msg_p[7-9]00_[0-9]+$') FROM pg_class}), qr/^0\|[1-9]/,
  'nor has a worker node their shards (while it has those of the partitions kept)');
# A worker node's range goes by that node's position: 1,000 rows appended
# on worker1 draw from 281474976710657 on, and the partitions of that range
# ending at or below its position minus 300 go too.
$w1->safe_psql('postgres', q{SELECT count(*) FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('tenant', g, 'body', 'w')) FROM generate_series(1, 1000) g))});
my $w1_last = $w1->safe_psql('postgres', 'SELECT last_value FROM msg_id_seq');
my $w1_keep = int(($w1_last - 300) / 100) * 100;  # the first partition that ends past the horizon
ok(PartHeal::within($c, qq{SELECT min(id) = $w1_keep FROM msg WHERE id >= 281474976710656}, 30),
  "retention drops the partitions of worker1's range ending at or below its position minus 300 ids (rows from $w1_keep on stay)");
is($sql->(qq{SELECT count(*) FROM msg WHERE id >= 281474976710656}), $w1_last - $w1_keep + 1, 'with every row above');
is($sql->(q{SELECT min(id), max(id), count(*) FROM msg WHERE id < 281474976710656}), '700|1000|301',
  'and the coordinator\'s range as it was');
# A partition retention would drop at once is not made (PH005), by the
# horizon of the range the id is in: on the coordinator, an id of a
# dropped partition of worker1's range; on worker1, which judges the ids
# given in its own range by its own position, the same id; an id of the
# coordinator's range above the coordinator's horizon is made (worker1's
# horizon, far above, is not that range's).
my $w1_old = $w1_keep - 150;
my ($ph_rc, $ph_out, $ph_err) = $c->psql('postgres', "SELECT partheal_cover('msg', ARRAY['$w1_old'])",
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($ph_err, qr/ERROR:  PH005: "id" $w1_old of "msg" is older than the table's retention/,
  'the coordinator refuses a partition of worker1\'s range below that node\'s horizon') or diag($ph_err);
($ph_rc, $ph_out, $ph_err) = $w1->psql('postgres', qq{SELECT partheal_append('msg', '{"tenant": 1, "id": $w1_old}')},
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($ph_err, qr/ERROR:  PH005: "id" $w1_old of "msg" is older than the table's retention/,
  'and so does worker1\'s append of it') or diag($ph_err);
is($w1->safe_psql('postgres', q{SELECT partheal_append('msg', '{"tenant": 1, "id": 2050}')}), '2050',
  'worker1 appends an id of the coordinator\'s range above its horizon, healing it there');
is($sql->(q{SELECT count(*) FROM msg WHERE id IN (2050, } . $w1_old . q{)}), '1', 'that row only');
# An id of the coordinator's range given on worker1, in a partition the
# retention dropped: worker1 says the id was given, and the coordinator
# judges it by its own range's horizon.
($ph_rc, $ph_out, $ph_err) = $w1->psql('postgres', q{SELECT partheal_append('msg', '{"tenant": 1, "id": 650}')},
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($ph_err, qr/ERROR:  PH005: "id" 650 of "msg" is older than the table's retention/,
  'worker1\'s append of a given id of the coordinator\'s range below its horizon: PH005 from the coordinator') or diag($ph_err);
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname = 'msg_p600'}), '0', 'and its partition is not made again');

# A time-keyed distributed table with a retention of 2 hours: a window
# that ended 4 hours ago goes, with its shards and rows; now's stays.
$sql->(q{
  CREATE TABLE tret (tenant int, at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  SELECT create_distributed_table('tret', 'tenant', shard_count => 4);
  CREATE TABLE tret_old PARTITION OF tret
    FOR VALUES FROM (date_trunc('hour', now()) - interval '5 hours') TO (date_trunc('hour', now()) - interval '4 hours');
  INSERT INTO tret SELECT g, date_trunc('hour', now()) - interval '270 minutes', 'old' FROM generate_series(1, 10) g;
  SELECT partheal_manage('tret', interval '1 hour', premake => 1, retention => interval '2 hours');
  SELECT count(*) FROM partheal_append('tret', (SELECT jsonb_agg(jsonb_build_object('tenant', g, 'at', now(), 'body', 'new')) FROM generate_series(1, 10) g));
});
is($sql->(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'tret_old'::regclass}), '1',
  'a distributed time window made by hand, 4 hours old');
ok(PartHeal::within($c, q{SELECT NOT EXISTS (SELECT FROM pg_class WHERE relname = 'tret_old')}, 30),
  'retention drops a time window of a distributed table past its horizon');
is($sql->(q{SELECT string_agg(DISTINCT body, ',') || ' ' || count(*) FROM tret}), 'new 10', 'its rows with it, now\'s kept');
like($w1->safe_psql('postgres', q{SET citus.show_shards_for_app_name_prefixes = '*';
    SELECT count(*) FILTER (WHERE relname ~ '^tret_old_[0-9]+$') || '|' ||
           count(*) FILTER (WHERE relname ~ '^tret_p[0-9]+_[0-9]+_[0-9]+$') FROM pg_class}), qr/^0\|[1-9]/,
  'and its shards on the worker node, not the kept windows\' shards');
# Its heals, on the coordinator and from worker1: rows for windows 3 and 5
# hours ahead, which nothing made, land in distributed windows.
$sql->(q{SELECT count(*) FROM partheal_append('tret', jsonb_build_object('tenant', 1, 'at', now() + interval '3 hours', 'body', 'healed'))});
$w1->safe_psql('postgres', q{SELECT count(*) FROM partheal_append('tret', jsonb_build_object('tenant', 2, 'at', now() + interval '5 hours', 'body', 'healed'))});
is($sql->(q{SELECT count(*) FROM tret WHERE body = 'healed'}), '2', 'a time-keyed distributed table heals, on the coordinator and from a worker node');
like($sql->(q{SELECT count(*) || ' ' || bool_and(EXISTS (SELECT FROM pg_dist_partition d WHERE d.logicalrelid = i.inhrelid))
              FROM pg_inherits i WHERE inhparent = 'tret'::regclass AND inhrelid::regclass::text LIKE 'tret_p%'}),
  qr/^([4-9]|\d\d+) true$/, 'into windows of their own (now\'s, the next, and the two made), each distributed');

# --- create-ahead ----------------------------------------------------------
$sql->(q{
  CREATE TABLE ahead (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('ahead', 'tenant', shard_count => 4);
  SELECT partheal_manage('ahead', 100, premake => 1);
});
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'ahead'::regclass
             AND inhrelid::regclass::text ~ '^ahead_p[0-9]{1,4}$'}), '2',
  'partheal_manage made the first partition and premake 1 after it');
$sql->(q{SELECT partheal_append('ahead', (SELECT jsonb_agg(jsonb_build_object('tenant', g)) FROM generate_series(1, 185) g))});
# (Counted in the coordinator's own range: the worker nodes' ranges get
# their premake partitions too.)
ok(PartHeal::within($c, q{SELECT count(*) = 4 FROM pg_inherits WHERE inhparent = 'ahead'::regclass
                            AND inhrelid::regclass::text ~ '^ahead_p[0-9]{1,4}$'}, 30),
  'the worker made the partitions ahead of the 80% mark');
is($sql->(q{SELECT string_agg(DISTINCT n::text, ',') FROM (SELECT count(*) n FROM pg_dist_shard s JOIN pg_inherits i ON s.logicalrelid = i.inhrelid WHERE i.inhparent = 'ahead'::regclass GROUP BY i.inhrelid) x}), '4', 'each distributed, with 4 shards');

# --- partheal_nextval, plain INSERTs on the coordinator --------------------
$sql->(q{
  CREATE TABLE nv (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('nv', 'tenant', shard_count => 4);
  SELECT partheal_manage('nv', 1000, nextval_default => true);
});
is($sql->(q{SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a
             ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = 'nv'::regclass AND a.attname = 'id'}),
  q{partheal_nextval('nv'::regclass, 'nv_id_seq'::regclass)}, 'the id column\'s DEFAULT is partheal_nextval');
my $w = PartHeal::start_writers($c, 2, 6,
  q{INSERT INTO nv (tenant, body) VALUES ((random() * 100)::int, 'n');});
my ($rounds, $failed, @lines) = PartHeal::finish_writers($w);
is($failed, 0, "plain INSERTs through partheal_nextval on the coordinator: $rounds rows, 0 failed") or diag join "\n", @lines;
my ($rows, $distinct) = Citus::counts($c, 'nv');
is($rows, $rounds, 'every row is there');
is($distinct, $rows, 'once');
cmp_ok($children->($c, 'nv'), '>', 3, 'across partition boundaries');

# --- partheal_reserve + COPY -----------------------------------------------
$sql->(q{
  CREATE TABLE cp (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('cp', 'tenant', shard_count => 4);
  SELECT partheal_manage('cp', 100, mark_percent => NULL, premake => 0);
});
cmp_ok($sql->(q{SELECT partheal_reserve('cp', 1000)}), '>=', 9, 'partheal_reserve made the partitions for 1000 ids');
$sql->(q{COPY cp (tenant, body) FROM PROGRAM 'seq 1 1000 | sed "s/$/\tcopied/"'});
($rows, $distinct) = Citus::counts($c, 'cp');
is("$rows $distinct", '1000 1000', 'a COPY of 1000 rows lands, each once');

# --- attach and the drain, with a distributed DEFAULT ----------------------
$sql->(q{
  CREATE TABLE tl (tenant int, at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE tl_default PARTITION OF tl DEFAULT;
  SELECT create_distributed_table('tl', 'tenant', shard_count => 4);
  INSERT INTO tl SELECT g % 10, '2026-01-01'::timestamptz + g * interval '1 minute', 'old'
    FROM generate_series(0, 2 * 1440 - 1) g;
});
# A writer into the window being attached, on the coordinator.
$w = PartHeal::start_writers($c, 1, 4,
  q{INSERT INTO tl VALUES ((random() * 100)::int, '2026-01-01 12:00', 'live');});
sleep 1;
is($sql->(q{SELECT outcome || ' ' || rows_moved FROM partheal_attach_window('tl', '2026-01-01', '2026-01-02')}) =~ /^attached (\d+)$/ && $1 >= 1440 ? 1 : 0,
  1, 'partheal_attach_window attached a window of a distributed table under a live writer, moving its rows out of DEFAULT');
($rounds, $failed, @lines) = PartHeal::finish_writers($w);
is($failed, 0, "the writer into that window: $rounds rows, 0 failed") or diag join "\n", @lines;
is($sql->(q{SELECT count(*) FROM tl WHERE at < '2026-01-02'}), 1440 + $rounds, 'every row of the window is there, once');
is($sql->(q{SELECT count(*) FROM ONLY tl_default WHERE at < '2026-01-02'}), '0', 'none left in DEFAULT');
is($shards->('tl_p20260101'), '4', 'the window is distributed');
is($sql->(q{SELECT pg_relation_size('tl_p20260101')}), '0', 'and the coordinator keeps no local copy of its rows');
$c->safe_psql('postgres', q{CALL partheal_partition_data('tl', '1 day')});
is($sql->(q{SELECT count(*) FROM ONLY tl_default}), '0', 'partheal_partition_data emptied the distributed DEFAULT');
is($sql->(q{SELECT count(*) FROM tl}), 2 * 1440 + $rounds, 'with every row kept');

# partheal_attach_window's waits on the worker nodes are bounded as its own:
# with a shard of the parent held ACCESS EXCLUSIVE on a worker node, the
# attach gives up within its budget, rows back in DEFAULT, instead of
# waiting for the holder.
$sql->(q{INSERT INTO tl SELECT g, '2026-01-05'::timestamptz + g * interval '1 minute', 'late' FROM generate_series(0, 99) g});
my ($tl_shard, $tl_port) = split /\|/,
  $sql->(q{SELECT shard_name, nodeport FROM citus_shards WHERE table_name = 'tl'::regclass ORDER BY shardid LIMIT 1});
$holder = ($tl_port == $w1->port ? $w1 : $w2)->background_psql('postgres');
$holder->query_safe("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE $tl_shard IN ACCESS EXCLUSIVE MODE");
my ($tl_out, $tl_err, $tl_timed_out);
$c->psql('postgres', q{SELECT outcome FROM partheal_attach_window('tl', '2026-01-05', '2026-01-06')},
  stdout => \$tl_out, stderr => \$tl_err, timeout => 60, timed_out => \$tl_timed_out);
ok(!$tl_timed_out, 'partheal_attach_window does not wait on a worker node for the holder');
is($tl_out, 'default_holds_rows', 'it gives up, and says so') or diag($tl_err);
like($tl_err, qr/lock timeout|could not be had/, 'the NOTICE says a lock could not be had') or diag($tl_err);
$holder->query_safe('COMMIT');
$holder->quit;
# (Read once the holder is gone: a query of a partition's shard reads its
# partition bound, which locks the shard's parent.)
is($sql->(q{SELECT count(*) FROM ONLY tl_default WHERE at >= '2026-01-05'}), '100', 'the rows are back in DEFAULT');
is($sql->(q{SELECT outcome || ' ' || rows_moved FROM partheal_attach_window('tl', '2026-01-05', '2026-01-06')}),
  'attached 100', 'once the lock is gone, the window is attached');

# The drain: rows for the next windows reach DEFAULT before the windows
# exist; the worker makes them and moves the rows.
$sql->(q{
  CREATE TABLE dr (tenant int, at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE dr_default PARTITION OF dr DEFAULT;
  SELECT create_distributed_table('dr', 'tenant', shard_count => 4);
  INSERT INTO dr SELECT g, now() + interval '1 minute' * g, 'soon' FROM generate_series(1, 100) g;
  SELECT partheal_manage('dr', interval '1 hour', premake => 2);
});
ok(PartHeal::within($c, q{SELECT count(*) = 0 FROM ONLY dr_default}, 60),
  'the drain moved the rows out of the distributed DEFAULT');
is($sql->(q{SELECT count(*) FROM dr}), '100', 'every row kept');
is($sql->(q{SELECT bool_and(EXISTS (SELECT FROM pg_dist_partition d WHERE d.logicalrelid = i.inhrelid))
              FROM pg_inherits i WHERE inhparent = 'dr'::regclass}), 't', 'into distributed windows');

# --- attach with foreign keys that reference the parent ---------------------
# A window's table is distributed, and the coordinator's local copy of its
# rows dropped, before the ATTACH: Citus's truncate of that copy cascades,
# and once attached the table has a clone of every foreign key that
# references the parent. The parent's owner, who may not truncate the
# referencing table, attaches a new window and a table of its own with rows,
# and the referencing table is not held ACCESS EXCLUSIVE (PostgreSQL's
# ATTACH itself holds it SHARE ROW EXCLUSIVE, as on one node).
$sql->(q{
  CREATE ROLE fk_parent_owner LOGIN;
  CREATE ROLE fk_child_owner LOGIN;
  GRANT CREATE ON SCHEMA public TO fk_parent_owner, fk_child_owner;
  CREATE TABLE fkp (tenant int, at timestamptz NOT NULL, body text, PRIMARY KEY (tenant, at)) PARTITION BY RANGE (at);
  CREATE TABLE fkp_jan PARTITION OF fkp FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
  CREATE TABLE fkp_default PARTITION OF fkp DEFAULT;
  SELECT create_distributed_table('fkp', 'tenant', shard_count => 4);
  CREATE TABLE fkr (tenant int, at timestamptz, FOREIGN KEY (tenant, at) REFERENCES fkp);
  SELECT create_distributed_table('fkr', 'tenant', colocate_with => 'fkp');
  INSERT INTO fkp SELECT g, '2026-01-15', 'jan' FROM generate_series(1, 20) g;
  INSERT INTO fkr SELECT g, '2026-01-15' FROM generate_series(1, 20) g;
  ALTER TABLE fkp OWNER TO fk_parent_owner;
  ALTER TABLE fkp_jan OWNER TO fk_parent_owner;
  ALTER TABLE fkp_default OWNER TO fk_parent_owner;
  ALTER TABLE fkr OWNER TO fk_child_owner;
  CREATE TABLE fkp_mar (LIKE fkp INCLUDING ALL);
  INSERT INTO fkp_mar SELECT g, '2026-03-10', 'mar' FROM generate_series(1, 30) g;
  ALTER TABLE fkp_mar OWNER TO fk_parent_owner;
});
is($sql->(q{
  BEGIN;
  SELECT outcome FROM partheal_attach_window('fkp', '2026-02-01', '2026-03-01');
  SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'fkr'::regclass AND mode = 'AccessExclusiveLock';
  COMMIT;
}), "attached\n0", 'a new window of a table that a foreign key references is attached by its owner, who may not truncate the referencing table, and that table is not held ACCESS EXCLUSIVE');
is($sql->(q{SELECT outcome FROM partheal_attach_window('fkp', '2026-03-01', '2026-04-01', 'fkp_mar')}),
  'attached', 'so is a table of the owner\'s with rows');
is($sql->(q{SELECT count(*) FROM fkp WHERE body = 'mar'}), '30', 'its rows are in the shards');
is($sql->(q{SELECT pg_relation_size('fkp_mar')}), '0', 'and not on the coordinator');
is($sql->(q{SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE logicalrelid IN ('fkp'::regclass, 'fkp_p20260201'::regclass, 'fkp_mar'::regclass)}),
  '1', 'both tables colocated with the parent');
is($shards->('fkp_mar'), '4', 'with its shard count');
is($sql->(q{SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid = 'fkr'::regclass
             AND confrelid IN ('fkp_p20260201'::regclass, 'fkp_mar'::regclass)}), '2',
  'the foreign key reaches both attached tables');
$sql->(q{INSERT INTO fkr VALUES (7, '2026-03-10')});
my ($fk_rc, $fk_out, $fk_err) = $c->psql('postgres', q{DELETE FROM fkp WHERE tenant = 7 AND at = '2026-03-10'});
like($fk_err, qr/violates foreign key constraint/, 'and holds there: a referenced row of the attached table cannot go');

# Long names: Citus cuts a shard's name at 63 bytes, and its ATTACH of a
# plain table then works in sequential mode, which partheal's attach sets
# too, for the look, the move, the distribution and the ATTACH. Windows
# named with 56 and 63 bytes, one with rows to move, with Citus told to
# open as many connections as it can; the mode is the caller's again after.
$sql->(q{
  CREATE TABLE ln (tenant int, at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE ln_default PARTITION OF ln DEFAULT;
  SELECT create_distributed_table('ln', 'tenant', shard_count => 32);
  INSERT INTO ln SELECT g, '2026-01-01'::timestamptz + g * interval '1 minute', 'x' FROM generate_series(0, 1439) g;
});
# (The empty window first: once rows moved out of DEFAULT, an autoanalyze
# of its shards on a worker node can hold the next ATTACH past its budget.)
for my $case ([63, '2026-02-01', '2026-02-02', 0], [56, '2026-01-01', '2026-01-02', 1440]) {
  my ($len, $lower, $upper, $moved) = @$case;
  my $name = 'ln_' . ('l' x ($len - 3));
  is($sql->(qq{
    BEGIN;
    SET LOCAL citus.force_max_query_parallelization = on;
    SELECT outcome || ' ' || rows_moved FROM partheal_attach_window('ln', '$lower', '$upper', '$name');
    SHOW citus.multi_shard_modify_mode;
    COMMIT;
  }), "attached $moved\nparallel", "a window named with $len bytes is attached, $moved rows moved, and the caller's mode is back");
  is($shards->($name), '32', "the $len-byte window is distributed");
  is($sql->(qq{SELECT pg_relation_size('$name')}), '0', 'with no local copy');
}
is($sql->(q{SELECT count(*) FROM ln}) . ' ' . $sql->(q{SELECT count(*) FROM ONLY ln_default}), '1440 0',
  'every row kept, none left in DEFAULT');

# A single-shard parent (distributed with no column): the window's table is
# distributed as one shard, colocated with it, as Citus's ATTACH would.
$sql->(q{
  CREATE TABLE one (tenant int, at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE one_default PARTITION OF one DEFAULT;
  SELECT create_distributed_table('one', NULL);
  INSERT INTO one SELECT g, '2026-01-01'::timestamptz + g * interval '1 minute', 'x' FROM generate_series(0, 99) g;
});
is($sql->(q{SELECT outcome || ' ' || rows_moved FROM partheal_attach_window('one', '2026-01-01', '2026-01-02')}),
  'attached 100', 'a window of a single-shard table is attached, its rows moved');
is($sql->(q{SELECT string_agg(DISTINCT partmethod::text || ' ' || colocationid, ',') || ' ' || count(*) FROM pg_dist_partition
             WHERE logicalrelid IN ('one'::regclass, 'one_p20260101'::regclass)}) =~ /^n \d+ 2$/ ? 1 : 0, 1,
  'as a single shard in the parent\'s colocation group');
is($sql->(q{SELECT pg_relation_size('one_p20260101')}), '0', 'with no local copy');

# --- the DDL of one round is bounded, all tables together ------------------
# A distributed table of 64 shards whose position jumps needs 31 partitions
# at once (premake 30), some 3 s of DDL. Its creations in one round stop
# after 1 s, so a table that falls behind once that round has begun is
# polled and served before the first table is caught up, not after.
$sql->(q{
  CREATE TABLE wide (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('wide', 'tenant', shard_count => 64);
  SELECT partheal_manage('wide', 100, premake => 30);
  CREATE TABLE quick (id bigserial) PARTITION BY RANGE (id);
  SELECT partheal_manage('quick', 100, premake => 0);
});
my $offset = -s $c->logfile;
$sql->(q{SELECT setval('wide_id_seq', 1000000)});
ok($c->wait_for_log(qr/PHL02 created partition "public.wide_p1000000"/, $offset), 'the wide table is being caught up');
$sql->(q{SELECT setval('quick_id_seq', 1000000)});
ok(PartHeal::within($c, q{SELECT count(*) >= 31 FROM pg_inherits WHERE inhparent = 'wide'::regclass
                            AND inhrelid::regclass::text ~ '^wide_p100[0-9]{4}$'}, 60), 'and caught up');
my $log = slurp_file($c->logfile, $offset);
my @wide = ($log =~ /PHL02 created partition "public.wide_p(100\d{4})"/g);
my ($quick_at) = ($log =~ /^(.*)PHL02 created partition "public.quick_p1000000"/ms) ? length($1) : undef;
my ($last_wide_at) = ($log =~ /^(.*)PHL02 created partition "public.wide_p$wide[-1]"/ms) ? length($1) : undef;
ok(defined $quick_at && $quick_at < $last_wide_at,
  'the table that fell behind during that round got its partition before the wide table was caught up (' . scalar(@wide) . ' partitions)');

done_testing();
