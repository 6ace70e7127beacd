# partheal on Citus's worker nodes: registrations are refused there, an
# append there lands, and heals through the coordinator, under the
# coordinator's limits, a worker node's partheal worker never
# runs DDL on a Citus table, and plain INSERTs on every node, each drawing
# ids from its own range of the sequence, land at full speed across
# partition boundaries, because the coordinator keeps partitions ahead of
# every node's position.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use PartHeal;
use Citus;

my ($c, $w1, $w2) = Citus::new_cluster(extra => "partheal.naptime = 200");
my $sql = sub { $c->safe_psql('postgres', shift) };
my $cport = $c->port;

$sql->(q{
  CREATE EXTENSION partheal;
  CREATE TABLE ev (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('ev', 'tenant', shard_count => 4);
  SELECT partheal_manage('ev', 1000, premake => 2);
});

# --- refusals on a worker node ---------------------------------------------
for my $call ("partheal_manage('ev', 1000)", "partheal_unmanage('ev')") {
  my ($rc, $out, $err) = $w1->psql('postgres', "SELECT $call", extra_params => ['-v', 'VERBOSITY=verbose']);
  like($err, qr/ERROR:  PH006: "ev" is a Citus table: .* on the coordinator \(localhost:$cport\), not on a worker node/,
    "$call on a worker node: PH006, naming the coordinator");
  unlike($err, qr/not managed/, "$call: never \"not managed\"");
  like($err, qr/HINT:  .*coordinator/, "$call: a HINT");
}
is($w1->safe_psql('postgres', 'SELECT count(*) FROM partheal_config'), '0', 'no registration was written on the worker node');

# --- appends on a worker node -----------------------------------------------
# They use the coordinator's registration, draw from the node's own range,
# and a missing partition is asked of the coordinator.
my $w1sql = sub { $w1->safe_psql('postgres', shift) };
my $first = $w1sql->(q{SELECT partheal_append('ev', '{"tenant": 1, "body": "from worker1"}')});
cmp_ok($first, '>=', 281474976710657, "partheal_append on a worker node lands, with an id of its range ($first)");
is($sql->(qq{SELECT body FROM ev WHERE id = $first}), 'from worker1', 'and the coordinator reads the row');
is($w1sql->(q{SELECT count(*) FROM partheal_append('ev', '[{"tenant": 2}, {"tenant": 3}, {"tenant": 4}]')}), '3',
  'a batch lands too');
# A partition no node's create-ahead would make: the heal is the coordinator's.
my $far = 281474976710657 + 50 * 1000;
my $offset_w = -s $w1->logfile;
is($w1sql->(qq{SELECT partheal_append('ev', '{"tenant": 5, "id": $far}')}), $far,
  'an id past every partition heals from a worker node');
my $far_part = 'ev_p' . (int($far / 1000) * 1000);
is($sql->(qq{SELECT count(*) FROM pg_inherits WHERE inhparent = 'ev'::regclass AND inhrelid = '$far_part'::regclass}), '1',
  "the coordinator made $far_part and attached it");
is($sql->(qq{SELECT count(*) FROM citus_shards WHERE table_name = '$far_part'::regclass}), '4',
  'distributed, with its four shards');
ok($w1->wait_for_log(qr/PHL01 heal: no partition of "public.ev" for id $far .*created "$far_part" FROM \(\d+\) TO \(\d+\) on the coordinator/, $offset_w),
  'the worker node\'s log names the partition the coordinator made');
is($sql->(qq{SELECT tenant FROM ev WHERE id = $far}), '5', 'the row is in it');
# partheal_reserve on a worker node reserves that node's next ids.
my $w1_next = $w1sql->(q{SELECT last_value + 1 FROM ev_id_seq});
cmp_ok($w1sql->(q{SELECT partheal_reserve('ev', 5000)}), '>=', 1, 'partheal_reserve on a worker node makes partitions');
is($sql->(qq{SELECT count(*) FROM pg_inherits WHERE inhparent = 'ev'::regclass
  AND inhrelid::regclass::text = 'ev_p' || ((($w1_next + 4999) / 1000) * 1000)}), '1', 'up to the last id reserved');
# A rolled-back append: its row goes, the partition stays, as on one node.
my $far2 = $far + 10 * 1000;
$w1sql->(qq{BEGIN; SELECT partheal_append('ev', '{"tenant": 6, "id": $far2}'); ROLLBACK;});
is($sql->(qq{SELECT count(*) FROM ev WHERE id = $far2}), '0', 'a rolled-back append leaves no row');
is($sql->(qq{SELECT count(*) FROM pg_class WHERE relname = 'ev_p' || (($far2 / 1000) * 1000)}), '1',
  'and keeps the partition it healed');

# A role that does not own the table: the coordinator applies its limits.
# Ids near a node's position are healed; a given id far from every node's
# is refused there, and its SQLSTATE comes back.
$sql->(q{
  CREATE ROLE ev_writer LOGIN;
  GRANT INSERT ON ev TO ev_writer;
  GRANT USAGE ON SEQUENCE ev_id_seq TO ev_writer;
});
my $writer_w1 = sub {
  my ($rc, $out, $err) = $w1->psql('postgres', "SET ROLE ev_writer; SELECT " . shift,
    extra_params => ['-v', 'VERBOSITY=verbose']);
  return ($rc, $out, $err);
};
my $nonowner_far = 281474976710657 + 900 * 1000;
my ($rc_far, $out_far, $err_far) = $writer_w1->(qq{partheal_append('ev', '{"tenant": 7, "id": $nonowner_far}')});
like($err_far, qr/ERROR:  42501: id $nonowner_far of "ev" needs a partition that only the table's owner may have created/,
  'a non-owner\'s far id from a worker node: 42501, as on the coordinator');
is($sql->(qq{SELECT count(*) FROM pg_class WHERE relname = 'ev_p' || (($nonowner_far / 1000) * 1000)}), '0',
  'nothing was made');
my ($rc_near, $out_near, $err_near) = $writer_w1->(q{partheal_append('ev', '{"tenant": 8}')});
is($rc_near, 0, 'a non-owner\'s drawn id from a worker node lands') or diag($err_near);

# A non-owner's batch drawn on a worker node may span more partitions than
# the window of given ids (partheal.max_ahead_partitions, 16 here): with
# create-ahead off and partitions of 10 ids, 400 rows need 40 heals, the
# first ones far behind the node's position once the batch has drawn.
$sql->(q{
  CREATE TABLE nob (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('nob', 'tenant', shard_count => 4);
  SELECT partheal_manage('nob', 10, mark_percent => NULL, premake => 0);
  GRANT INSERT ON nob TO ev_writer;
  GRANT USAGE ON SEQUENCE nob_id_seq TO ev_writer;
});
$w1sql->(q{SELECT partheal_append('nob', '{"tenant": 1}')});
my ($rc_nob, $out_nob, $err_nob) = $writer_w1->(
  q{count(*) FROM partheal_append('nob', (SELECT jsonb_agg(jsonb_build_object('tenant', g)) FROM generate_series(1, 400) g))});
is($rc_nob, 0, 'a non-owner\'s batch of 400 ids drawn on a worker node heals 40 partitions') or diag($err_nob);
is($sql->(q{SELECT count(*), count(DISTINCT id) FROM nob}), '401|401', 'every row there once');
my ($rc_nog, $out_nog, $err_nog) = $writer_w1->(
  q{partheal_append('nob', '{"tenant": 2, "id": 281474976720657}')});
like($err_nog, qr/ERROR:  42501: id 281474976720657 of "nob" needs a partition/,
  'a given id of its range far past its position is still refused') or diag($err_nog);

# On the coordinator, a non-owner's given id is within the window when it
# is near any node's position, not only the coordinator's own.
my $w1pos = $w1sql->(q{SELECT last_value FROM ev_id_seq});
my $as_writer = sub { $c->psql('postgres', 'SET ROLE ev_writer; SELECT ' . shift) };
my ($rc_nw, $out_nw, $err_nw) = $as_writer->("partheal_cover('ev', ARRAY['" . ($w1pos + 10 * 1000) . "'])");
is($rc_nw, 0, 'a non-owner covers an id 10 partitions past worker1\'s position on the coordinator') or diag($err_nw);
my ($rc_ff, $out_ff, $err_ff) = $as_writer->("partheal_cover('ev', ARRAY['" . ($w1pos + 100 * 1000) . "'])");
like($err_ff, qr/needs a partition that only the table's owner may have created/,
  'but not one 100 partitions past every node\'s position');

# An error on the coordinator comes back with its SQLSTATE, message and
# HINT, which Citus alone would not relay: here the registration a worker
# node's session read is gone from the coordinator when it asks for a heal.
$sql->(q{
  CREATE TABLE gone (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('gone', 'tenant', shard_count => 4);
  SELECT partheal_manage('gone', 1000, premake => 1);
});
my ($rc_gone, $out_gone, $err_gone) = $w1->psql('postgres', q{
  SELECT partheal_append('gone', '{"tenant": 1}') > 0 AS landed;
  SELECT success FROM run_command_on_coordinator($$SELECT partheal_unmanage('gone')$$);
  SELECT partheal_append('gone', '{"tenant": 1, "id": 281474977710657}');
}, extra_params => ['-v', 'VERBOSITY=verbose']);
like($out_gone, qr/^t\nt$/, 'a worker node session appends, then the coordinator unregisters the table');
like($err_gone, qr/ERROR:  55000: "gone" is not managed by partheal\n.*HINT:  Register it first/s,
  'its next heal gets the coordinator\'s error, with its SQLSTATE and HINT') or diag($err_gone);
like($err_gone, qr/CONTEXT:  creating the partition on the coordinator \(localhost:$cport\)/,
  'and a CONTEXT line saying where');

# A Citus table the coordinator has not registered: "not managed", said of
# the coordinator.
$sql->(q{
  CREATE TABLE free (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('free', 'tenant', shard_count => 4);
});
my ($rc_free, $out_free, $err_free) = $w1->psql('postgres', q{SELECT partheal_append('free', '{"tenant": 1}')},
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($err_free, qr/ERROR:  55000: "free" is not managed by partheal on the coordinator \(localhost:$cport\)/,
  'an unregistered Citus table: not managed on the coordinator, 55000') or diag($err_free);
like($err_free, qr/HINT:  Register it on the coordinator/, 'with a HINT saying where to register it');

# The coordinator's side of a worker node's heal waits for its locks
# there within partheal.ddl_lock_timeout: a session on the coordinator
# holding the parent (its lock kept there, not passed on) makes the heal
# fail with 55P03, where the appender would otherwise wait in a network
# wait that no deadlock check sees.
$sql->(q{
  CREATE TABLE lkc (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('lkc', 'tenant', shard_count => 4);
  SELECT partheal_manage('lkc', 1000, mark_percent => NULL, premake => 0);
});
my $lkc_holder = $c->background_psql('postgres');
$lkc_holder->query_safe('SET citus.enable_ddl_propagation = off; BEGIN; LOCK TABLE lkc IN ACCESS EXCLUSIVE MODE');
my ($lkc_out, $lkc_err, $lkc_timed_out);
$w1->psql('postgres', q{SELECT partheal_append('lkc', '{"tenant": 1, "id": 5000}')},
  stdout => \$lkc_out, stderr => \$lkc_err, timeout => 30, timed_out => \$lkc_timed_out,
  extra_params => ['-v', 'VERBOSITY=verbose']);
ok(!$lkc_timed_out, 'a worker node\'s heal does not wait for a lock held on the coordinator');
like($lkc_err, qr/ERROR:  55P03: .*CONTEXT:  creating the partition on the coordinator/s,
  'it fails with the lock timeout, saying where') or diag($lkc_err);
$lkc_holder->query_safe('COMMIT');
$lkc_holder->quit;
is($w1->safe_psql('postgres', q{SELECT partheal_append('lkc', '{"tenant": 1, "id": 5000}')}), '5000',
  'once the lock is gone, the heal goes through');

# Heals from both worker nodes at once, at boundaries nobody makes ahead
# (create-ahead off, partitions of 50 ids): every append path, no failure,
# every committed row once.
$sql->(q{
  CREATE TABLE hv (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('hv', 'tenant', shard_count => 4);
  SELECT partheal_manage('hv', 50, mark_percent => NULL, premake => 0);
});
my $one = q{SELECT partheal_append('hv', '{"tenant": 1, "body": "one"}');};
my $batch = q{SELECT count(*) FROM partheal_append('hv', '[{"tenant": 2}, {"tenant": 3}, {"tenant": 4}]');};
my %hw;
for my $node ($w1, $w2) {
  $hw{$node->name . ' one'} = PartHeal::start_writers($node, 1, 6, $one);
  $hw{$node->name . ' batch'} = PartHeal::start_writers($node, 1, 6, $batch);
}
my $expected = 0;
for my $name (sort keys %hw) {
  my ($rounds, $failed, @lines) = PartHeal::finish_writers($hw{$name});
  is($failed, 0, "partheal_append ($name) on a worker node for 6 s, healing: $rounds calls, 0 failed")
    or diag join "\n", @lines;
  $expected += $name =~ /batch/ ? 3 * $rounds : $rounds;
}
my ($hrows, $hdistinct) = Citus::counts($c, 'hv');
is($hrows, $expected, "every row is there ($expected)");
is($hdistinct, $hrows, 'each once');
cmp_ok($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'hv'::regclass}), '>', 4,
  'in partitions the heals made');

# A local table of the worker node's own is no Citus table: partheal
# manages it there as on any server.
$w1->safe_psql('postgres', q{
  CREATE TABLE mine (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('mine', 100, mark_percent => NULL, premake => 0);
});
is($w1->safe_psql('postgres', q{SELECT partheal_append('mine', '{"id": 5000}')}), '5000',
  'a worker node\'s own table is managed and healed there');

# --- a worker node's partheal worker never runs DDL on a Citus table --------
# A registration of a distributed table put on the worker node by hand (as
# a dump of the coordinator's partheal_config could), of a table the
# coordinator does not manage: its partheal worker polls it, finds no
# partition for its sequence, and is refused before any DDL, with PH006 in
# PHL03.
$sql->(q{
  CREATE TABLE unmanaged (tenant int, id bigserial) PARTITION BY RANGE (id);
  SELECT create_distributed_table('unmanaged', 'tenant', shard_count => 4);
});
$w1->safe_psql('postgres', q{INSERT INTO partheal_config (parent, partition_size) VALUES ('unmanaged', 10)});
ok($w1->wait_for_log(qr/PH006: PHL03 .*"unmanaged" is a Citus table: its partitions are made on the coordinator/, 0),
  'the worker node\'s partheal worker is refused before any DDL, and says so');
$w1->safe_psql('postgres', q{DELETE FROM partheal_config WHERE parent = 'unmanaged'::regclass});
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'unmanaged'::regclass}), '0',
  'no partition was made');
is($w1->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'unmanaged_p%'}), '0',
  'nor a table on the worker node');
# Nor retention or the drain: a hand-copied registration of a time-keyed
# distributed table with a retention of 1 hour, a window 5 hours old and a
# DEFAULT holding a row of a window not made. Over 5 polls of the worker
# node's partheal worker, nothing is retired, drained or tried.
$sql->(q{
  CREATE TABLE oldt (tenant int, at timestamptz NOT NULL) PARTITION BY RANGE (at);
  CREATE TABLE oldt_old PARTITION OF oldt
    FOR VALUES FROM (date_trunc('hour', now()) - interval '5 hours') TO (date_trunc('hour', now()) - interval '4 hours');
  CREATE TABLE oldt_default PARTITION OF oldt DEFAULT;
  SELECT create_distributed_table('oldt', 'tenant', shard_count => 4);
  INSERT INTO oldt VALUES (1, date_trunc('hour', now()) - interval '270 minutes'), (2, now() + interval '3 hours');
});
my $w1_offset = -s $w1->logfile;
$w1->safe_psql('postgres', q{INSERT INTO partheal_config (parent, partition_interval, time_zone, premake, retention)
  VALUES ('oldt', '1 hour', 'UTC', 1, '1 hour')});
ok($w1->wait_for_log(qr/PHL08 .*oldt/, $w1_offset), 'the worker node\'s partheal worker polls the copied registration');
sleep 5;
unlike(slurp_file($w1->logfile, $w1_offset), qr/PHL(0[3-79]|10)\b[^\n]*oldt/,
  'and neither retires nor drains it, nor tries to');
$w1->safe_psql('postgres', q{DELETE FROM partheal_config WHERE parent = 'oldt'::regclass});
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'oldt'::regclass}) . ' ' . $sql->(q{SELECT count(*) FROM ONLY oldt_default}),
  '2 1', 'the old window is attached and the DEFAULT keeps its row');

# --- plain INSERTs on every node -------------------------------------------
# Citus gives each node's copy of ev_id_seq its own range, from group id
# << 48: worker1 draws from 281474976710657, worker2 from 562949953421313.
# The coordinator's poll reads both positions and makes their partitions.
for my $lower ('281474976710000', '562949953421000') {
  ok(PartHeal::within($c, "SELECT EXISTS (SELECT FROM pg_class WHERE relname = 'ev_p$lower')", 30),
    "the coordinator made the partition of a worker node's first ids, ev_p$lower");
}
my $insert = q{INSERT INTO ev (tenant, body) VALUES ((random() * 1000)::int, 'plain');};
my ($before) = Citus::counts($c, 'ev');
my %w = map { $_->name => PartHeal::start_writers($_, 1, 8, $insert) } ($c, $w1, $w2);
my $total = 0;
for my $name (sort keys %w) {
  my ($rounds, $failed, @lines) = PartHeal::finish_writers($w{$name});
  is($failed, 0, "plain INSERTs on the $name for 8 s: $rounds rows, 0 failed") or diag join "\n", @lines;
  $total += $rounds;
}
my ($rows, $distinct) = Citus::counts($c, 'ev');
is($rows - $before, $total, "every row is there ($total)");
is($distinct, $rows, 'each once');
my $ranges = $sql->(q{SELECT string_agg(n || ':' || parts, ' ' ORDER BY n) FROM (
  SELECT (id >> 48) AS n, count(DISTINCT id / 1000) AS parts FROM ev GROUP BY 1) x});
like($ranges, qr/^0:\d+ 1:\d+ 2:\d+$/, "rows of each node's range, in that many partitions: $ranges");
my ($p1) = $ranges =~ / 1:(\d+)/;
cmp_ok($p1, '>', 1, 'a worker node\'s writer crossed partition boundaries');

# A time-keyed distributed table goes by the clock, whatever node writes:
# windows of 2 s, premake 3 and no DEFAULT, so a window the coordinator's
# worker had not made before its time would fail an INSERT. Plain INSERTs
# of now() on all three nodes for 8 s.
$sql->(q{
  CREATE TABLE tick (tenant int, at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  SELECT create_distributed_table('tick', 'tenant', shard_count => 4);
  SELECT count(*) FROM partheal_manage('tick', interval '2 seconds', premake => 3);
});
my $tick = q{INSERT INTO tick (tenant, body) VALUES ((random() * 1000)::int, 'tick');};
%w = map { $_->name => PartHeal::start_writers($_, 1, 8, $tick) } ($c, $w1, $w2);
$total = 0;
for my $name (sort keys %w) {
  my ($rounds, $failed, @lines) = PartHeal::finish_writers($w{$name});
  is($failed, 0, "time-keyed: plain INSERTs of now() on the $name for 8 s: $rounds rows, 0 failed")
    or diag join "\n", @lines;
  $total += $rounds;
}
is($sql->(q{SELECT count(*) FROM tick}), $total, "time-keyed: every row is there ($total)");
# (Windows are cut from midnight UTC, so a 2-second window's rows share an
# even second.)
my $tick_used = $sql->(q{SELECT count(DISTINCT floor(extract(epoch FROM at) / 2)) FROM tick});
cmp_ok($tick_used, '>=', 4, "time-keyed: the rows are in $tick_used windows the worker made as the clock went");
$sql->(q{SELECT partheal_unmanage('tick')});

# No partition goes from under a writer, on either kind of node, so a
# routing miss relayed from a shard cannot come from a partition dropped
# between partheal's look at the catalog and its insert: Citus refuses
# DETACH PARTITION ... CONCURRENTLY, and a DETACH or DROP waits for the
# writer's transaction (here until its statement_timeout).
my ($dc_rc, $dc_out, $dc_err) = $c->psql('postgres', "ALTER TABLE ev DETACH PARTITION $far_part CONCURRENTLY");
like($dc_err, qr/DETACH PARTITION \.\. CONCURRENTLY commands are currently unsupported/,
  'Citus refuses DETACH PARTITION ... CONCURRENTLY');
my $in_far = $far;
for my $writer_node ([$c, 'coordinator'], [$w1, 'worker node']) {
  my ($node, $name) = @$writer_node;
  ++$in_far;
  my $writer = $node->background_psql('postgres');
  $writer->query_safe(qq{BEGIN; SELECT partheal_append('ev', '{"tenant": 6, "id": $in_far}')});
  for my $ddl ("ALTER TABLE ev DETACH PARTITION $far_part", "DROP TABLE $far_part") {
    my ($rc, $out, $err) = $c->psql('postgres', "SET statement_timeout = '2s'; $ddl");
    like($err, qr/canceling statement due to statement timeout/,
      "$ddl waits for a writer's open transaction on the $name");
  }
  $writer->query_safe('COMMIT');
  $writer->quit;
}
is($sql->(qq{SELECT count(*) FROM ev WHERE id IN ($far + 1, $far + 2)}), '2', 'both writers\' rows are in');
is($sql->(qq{SELECT count(*) FROM pg_inherits WHERE inhrelid = '$far_part'::regclass}), '1', 'and the partition is still attached');

# A worker node whose sequence is locked there: its read waits for the lock
# 1 s at most, the node is left out of that poll and said in PHL03, and the
# lock the coordinator's worker holds on the parent during the poll does
# not stay: an ACCESS EXCLUSIVE on the parent waits for it 5 s at most.
my $offset = -s $c->logfile;
my $w1port = $w1->port;
my $seq_holder = $w1->background_psql('postgres');
# (LOCK takes no sequence; an ALTER SEQUENCE ... OWNER TO holds it ACCESS
# EXCLUSIVE, kept on this node only.)
$seq_holder->query_safe('SET citus.enable_ddl_propagation = off; BEGIN; ALTER SEQUENCE ev_id_seq OWNER TO CURRENT_USER');
ok($c->wait_for_log(qr/PHL03 sequence poll of "public.ev": Citus nodes that did not answer: localhost:$w1port: .*lock timeout/, $offset),
  'a node whose sequence is locked is left out of the poll after its lock timeout, and said');
my ($ael_rc, $ael_out, $ael_err) = $c->psql('postgres',
  q{SET lock_timeout = '5s'; BEGIN; LOCK TABLE ev IN ACCESS EXCLUSIVE MODE; COMMIT;});
is($ael_rc, 0, 'meanwhile the poll does not keep the parent locked') or diag($ael_err);
$seq_holder->query_safe('COMMIT');
$seq_holder->quit;
# The node's position jumps 20 partitions ahead: only a poll that reads it
# again makes the partition there.
my $w1_jump = $w1->safe_psql('postgres', q{SELECT setval('ev_id_seq', nextval('ev_id_seq') + 20000)}) + 0;
my $w1_part = 'ev_p' . (int($w1_jump / 1000) * 1000);
ok(PartHeal::within($c, "SELECT EXISTS (SELECT FROM pg_class WHERE relname = '$w1_part')", 30),
  "once the lock is gone, the node is polled again: its new position's partition is made, $w1_part");

# A worker node that does not answer: left out of the poll, said once.
$offset = -s $c->logfile;
my $w2port = $w2->port;
$w2->stop('immediate');
ok($c->wait_for_log(qr/PHL03 sequence poll of "public.ev": Citus nodes that did not answer: localhost:$w2port/, $offset),
  'the coordinator says which node did not answer its poll');
sleep 2;
my @said = (slurp_file($c->logfile, $offset) =~ /Citus nodes that did not answer/g);
is(scalar(@said), 1, 'once, not at every poll');

done_testing();
