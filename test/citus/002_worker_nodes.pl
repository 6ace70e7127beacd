# partheal on Citus's worker nodes: registrations are refused there, an
# append there names the coordinator, a worker node's partheal worker never
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
for my $call ("partheal_manage('ev', 1000)", "partheal_unmanage('ev')",
              q{partheal_append('ev', '{"tenant": 1}')}, "partheal_reserve('ev', 10)") {
  my ($rc, $out, $err) = $w1->psql('postgres', "SELECT $call", extra_params => ['-v', 'VERBOSITY=verbose']);
  like($err, qr/ERROR:  PH006: "ev" is a Citus table: .* on the coordinator \(localhost:$cport\), not on a worker node/,
    "$call on a worker node: PH006, naming the coordinator");
  unlike($err, qr/not managed/, "$call: never \"not managed\"");
  like($err, qr/HINT:  .*coordinator/, "$call: a HINT");
}
is($w1->safe_psql('postgres', 'SELECT count(*) FROM partheal_config'), '0', 'no registration was written on the worker node');

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
ok($w1->wait_for_log(qr/PHL03 .*"unmanaged" is a Citus table: its partitions are made on the coordinator/, 0),
  'the worker node\'s partheal worker is refused before any DDL, and says so');
$w1->safe_psql('postgres', q{DELETE FROM partheal_config WHERE parent = 'unmanaged'::regclass});
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'unmanaged'::regclass}), '0',
  'no partition was made');
is($w1->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname LIKE 'unmanaged_p%'}), '0',
  'nor a table on the worker node');

# --- plain INSERTs on every node -------------------------------------------
# Citus gives each node's copy of ev_id_seq its own range, from group id
# << 48: worker1 draws from 281474976710657, worker2 from 562949953421313.
# The coordinator's poll reads both positions and makes their partitions.
for my $lower ('281474976710000', '562949953421000') {
  ok(PartHeal::within($c, "SELECT EXISTS (SELECT FROM pg_class WHERE relname = 'ev_p$lower')", 30),
    "the coordinator made the partition of a worker node's first ids, ev_p$lower");
}
my $insert = q{INSERT INTO ev (tenant, body) VALUES ((random() * 1000)::int, 'plain');};
my %w = map { $_->name => PartHeal::start_writers($_, 1, 8, $insert) } ($c, $w1, $w2);
my $total = 0;
for my $name (sort keys %w) {
  my ($rounds, $failed, @lines) = PartHeal::finish_writers($w{$name});
  is($failed, 0, "plain INSERTs on the $name for 8 s: $rounds rows, 0 failed") or diag join "\n", @lines;
  $total += $rounds;
}
my ($rows, $distinct) = Citus::counts($c, 'ev');
is($rows, $total, "every row is there ($total)");
is($distinct, $rows, 'each once');
my $ranges = $sql->(q{SELECT string_agg(n || ':' || parts, ' ' ORDER BY n) FROM (
  SELECT (id >> 48) AS n, count(DISTINCT id / 1000) AS parts FROM ev GROUP BY 1) x});
like($ranges, qr/^0:\d+ 1:\d+ 2:\d+$/, "rows of each node's range, in that many partitions: $ranges");
my ($p1) = $ranges =~ / 1:(\d+)/;
cmp_ok($p1, '>', 1, 'a worker node\'s writer crossed partition boundaries');

# A worker node that does not answer: left out of the poll, said once.
my $offset = -s $c->logfile;
my $w2port = $w2->port;
$w2->stop('immediate');
ok($c->wait_for_log(qr/PHL03 sequence poll of "public.ev": Citus nodes that did not answer: localhost:$w2port/, $offset),
  'the coordinator says which node did not answer its poll');
sleep 2;
my @said = (slurp_file($c->logfile, $offset) =~ /Citus nodes that did not answer/g);
is(scalar(@said), 1, 'once, not at every poll');

done_testing();
