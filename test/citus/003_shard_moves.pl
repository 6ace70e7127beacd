# Shard moves and a rebalance while partheal_append writers on the
# coordinator and a plain INSERT writer on a worker node cross partition
# boundaries, with the partheal worker creating partitions as they go: no
# row lost, none twice, no writer error, nothing hangs.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use PartHeal;
use Citus;

# Moves here take 10 to 15 s in all: the headroom is kept for 30 s of
# traffic, as docs/citus.md advises (above the longest move).
my ($c, $w1, $w2) = Citus::new_cluster(extra => "partheal.naptime = 200\npartheal.ahead_seconds = 30");
my $sql = sub { $c->safe_psql('postgres', shift) };

$sql->(q{
  CREATE EXTENSION partheal;
  CREATE TABLE ev (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('ev', 'tenant', shard_count => 4);
  SELECT partheal_manage('ev', 2000, premake => 1);
});
ok(PartHeal::within($c, q{SELECT EXISTS (SELECT FROM pg_class WHERE relname = 'ev_p281474976712000')}, 30),
  'the partitions of worker1\'s range are there before the writers start');

my $seconds = 20;
my %w = (
  single => PartHeal::start_writers($c, 1, $seconds,
    q{SELECT partheal_append('ev', jsonb_build_object('tenant', (random() * 1000)::int, 'body', 'single'));}),
  batch => PartHeal::start_writers($c, 1, $seconds,
    q{SELECT partheal_append('ev', (SELECT jsonb_agg(jsonb_build_object('tenant', g, 'body', 'batch')) FROM generate_series(1, 10) g));}),
  plain => PartHeal::start_writers($w1, 1, $seconds,
    q{INSERT INTO ev (tenant, body) VALUES ((random() * 1000)::int, 'plain');}),
);
my %per = (single => 1, batch => 10, plain => 1);

# Every shard of the table's colocation group on worker1 moves to worker2,
# then the rebalancer moves half of them back: both hold writes to a shard
# while it moves (block_writes) and take Citus's colocation locks, which the
# worker's creation of a partition needs too, so no partition is made while
# a shard moves. Plain INSERTs live on the headroom meanwhile: the moves
# start once the worker has had time to make it.
sleep 6;
my $parts = sub { $sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'ev'::regclass}) };
my $parts_before = $parts->();
my $t0 = time;
my $on_w1 = $sql->(q{SELECT string_agg(shardid::text, ' ') FROM pg_dist_shard JOIN pg_dist_placement USING (shardid)
                      JOIN pg_dist_node USING (groupid) WHERE logicalrelid = 'ev'::regclass AND nodeport = } . $w1->port);
# Citus takes the colocation lock of a move without waiting: one that
# starts while the worker creates a partition of the table (some 50 to
# 100 ms each) is refused at once, and is tried again here, as
# docs/citus.md tells a user to.
my (@moved, $refused);
for my $shard (split / /, $on_w1) {
  for my $try (1 .. 20) {
    my ($rc, $out, $err) = $c->psql('postgres', "SELECT citus_move_shard_placement($shard, 'localhost', " . $w1->port .
      ", 'localhost', " . $w2->port . ", shard_transfer_mode => 'block_writes')", timeout => 120);
    if ($rc == 0) { push @moved, $shard; last; }
    die "move of $shard: $err" unless $err =~ /could not acquire the lock required to move/;
    $refused++;
    select(undef, undef, undef, 0.2);
  }
}
is(scalar(@moved), scalar(split / /, $on_w1), 'every shard on worker1 moved to worker2 during the appends (' . scalar(@moved) . ')');
# The rebalance takes the same colocation lock without waiting, and is
# tried again the same way.
my ($rc, $out, $err);
for my $try (1 .. 20) {
  ($rc, $out, $err) = $c->psql('postgres', q{SELECT rebalance_table_shards('ev', shard_transfer_mode => 'block_writes')},
    timeout => 120);
  last if $rc == 0 || $err !~ /could not acquire the lock required to rebalance/;
  $refused++;
  select(undef, undef, undef, 0.2);
}
is($rc, 0, 'a rebalance during the appends completed') or diag $err;
is($sql->(q{SELECT count(DISTINCT groupid) FROM pg_dist_shard JOIN pg_dist_placement USING (shardid)
             WHERE logicalrelid = 'ev'::regclass}), '2', 'and put shards back on both workers');
diag 'moves and rebalances refused while a partition was being created, then tried again: ' . ($refused // 0);
# No partition can be made while a shard of the group moves: the worker's
# creations give way (partheal.ddl_lock_timeout at a time) and are made
# once the moves are over.
diag "partitions: $parts_before before the moves, " . $parts->() . ' after them, ' . (time - $t0) . ' s later';

my %rows;
for my $name (sort keys %w) {
  my ($rounds, $failed, @lines) = PartHeal::finish_writers($w{$name});
  is($failed, 0, "the $name writer: $rounds statements, 0 failed") or diag join "\n", @lines;
  $rows{$name} = ($rounds - $failed) * $per{$name};
}
my $counts = $sql->(q{SELECT string_agg(body || ' ' || n || ' ' || d, ', ' ORDER BY body) FROM (
  SELECT body, count(*) n, count(DISTINCT id) d FROM ev GROUP BY body) x});
is($counts, join(', ', map { "$_ $rows{$_} $rows{$_}" } sort keys %rows),
  "every committed row is there, once: $counts");
is($sql->(q{SELECT count(*) FROM pg_inherits i WHERE inhparent = 'ev'::regclass
             AND (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = i.inhrelid) <> 4}), '0',
  'each with its 4 shards');

# --- a heal during a shard move ---------------------------------------------
# While a shard of the table's colocation group moves, Citus refuses the
# partition's creation at once. An append that needs a heal then waits
# for the move, within partheal.heal_wait_timeout, if its transaction holds
# nothing the move waits for; one that wrote to the table earlier in its
# transaction fails at once. A session with a write of its own to the
# moving shard, left open, holds the move (block_writes waits for it)
# while both are tried.
$sql->(q{
  CREATE TABLE mv (tenant int, id bigserial, body text) PARTITION BY RANGE (id);
  SELECT create_distributed_table('mv', 'tenant', shard_count => 2, colocate_with => 'none');
  CREATE TABLE mv_p0 PARTITION OF mv FOR VALUES FROM (0) TO (1000000);
  SELECT partheal_manage('mv', 1000000, mark_percent => NULL, premake => 0);
});
my ($mv_shard, $mv_port) = split /\|/, $sql->(q{SELECT shardid, nodeport FROM pg_dist_shard
  JOIN pg_dist_placement USING (shardid) JOIN pg_dist_node USING (groupid)
  WHERE logicalrelid = 'mv'::regclass ORDER BY shardid LIMIT 1});
my $mv_to = $mv_port == $w1->port ? $w2->port : $w1->port;
my $tenant_of = sub {  # a tenant whose rows go to the moving shard, or not
  my $op = shift;
  $sql->("SELECT min(g) FROM generate_series(1, 1000) g WHERE get_shard_id_for_distribution_column('mv', g) $op $mv_shard");
};
my ($moving, $staying) = ($tenant_of->('='), $tenant_of->('<>'));
my $log_at = -s $c->logfile;
my $holder = $c->background_psql('postgres');
$holder->query_safe("BEGIN; INSERT INTO mv (tenant, body) VALUES ($moving, 'holder')");
my $mover = $c->background_psql('postgres');
$mover->query_until(qr/moving/, "\\echo moving\nSELECT citus_move_shard_placement($mv_shard, 'localhost', $mv_port, 'localhost', $mv_to, shard_transfer_mode => 'block_writes');\n");
ok(PartHeal::within($c, q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'SELECT citus_move_shard_placement%' AND wait_event_type = 'Lock')}, 30),
  'a shard move of mv runs, held by an open write to the moving shard');
my ($gate_out, $gate_err, $gate_timed_out);
$c->psql('postgres', qq{SET partheal.heal_wait_timeout = '120s';
  BEGIN; INSERT INTO mv (tenant, body) VALUES ($staying, 'first');
  SELECT partheal_append('mv', '{"tenant": $staying, "id": 7000000}'); COMMIT;},
  stdout => \$gate_out, stderr => \$gate_err, timeout => 60, timed_out => \$gate_timed_out);
ok(!$gate_timed_out, 'an append that wrote earlier in its transaction does not wait for the move');
like($gate_err, qr/could not acquire the lock required to colocate/, 'its heal fails with Citus\'s error')
  or diag($gate_err);
my $appender = $c->background_psql('postgres');
$appender->query_until(qr/appending/, "\\echo appending\nSET partheal.heal_wait_timeout = '120s';\nSELECT partheal_append('mv', '{\"tenant\": $staying, \"id\": 5000000}');\n");
my $waits = 0;
for (1 .. 300) {
  if (slurp_file($c->logfile, $log_at) =~ /PHL01 heal of "mv" for id 5000000 waits for a shard move/) { $waits = 1; last; }
  select(undef, undef, undef, 0.1);
}
ok($waits, 'an append in a transaction of its own waits for the move, as the log says');
is($sql->(q{SELECT count(*) FROM mv WHERE id = 5000000}), '0', 'while the move is held, its row is not in');
$holder->query_safe('COMMIT');
$holder->quit;
ok(PartHeal::within($c, q{SELECT count(*) = 1 FROM mv WHERE id = 5000000}, 60),
  'once the move is over, the append that waited lands');
$mover->quit;
$appender->quit;
is($sql->(q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'mv_p5000000'::regclass}), '2',
  'in a distributed partition');
is($sql->(q{SELECT count(*) FROM mv WHERE id = 7000000 OR body = 'first'}), '0',
  'and nothing of the append that failed');

done_testing();
