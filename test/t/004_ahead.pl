# Create-ahead under real concurrency and failure: one creation per mark
# however many appenders cross it, plain INSERT writers covered by the
# sequence poll, a failing creation warned about and dropped while the heal
# still lands the rows, and a worker that comes back by itself.
# Its assertions time the server: make test runs it with no other TAP file beside it.
# TAP lane: alone
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PartHeal::new_node('ahead', conf => "partheal.naptime = '100ms'\npartheal.max_tables = 4\n");
$node->safe_psql('postgres', 'CREATE EXTENSION partheal');
my $stat = sub {
  my ($table, $cols) = @_;
  $node->safe_psql('postgres', "SELECT $cols FROM partheal_stats WHERE parent = '$table'::regclass");
};
my $wait_for_partition = sub {
  my ($name) = @_;
  $node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_class WHERE relname = '$name'");
};

# Eight appenders at once through ten marks: one claim and one creation per
# partition, whoever drew the mark id.
$node->safe_psql('postgres', q{
  CREATE TABLE herd (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('herd', 1000);
  SELECT partheal_append('herd', '{}');
});
my $script = "${PostgreSQL::Test::Utils::tmp_check}/append.sql";
open(my $fh, '>', $script) or die;
print $fh q{SELECT partheal_append('herd', '{"body": "x"}');} . "\n";
close $fh;
my ($out, $err) = ('', '');
IPC::Run::run(['pgbench', '-n', '-c', '8', '-j', '2', '-t', '1250', '-f', $script,
    $node->connstr('postgres')], '>', \$out, '2>', \$err) or diag($err);
like($out, qr/actually processed: 10000\/10000/, 'eight appenders, no failed append');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM herd'), '10001|10001',
  'every row landed once');
# Ids 1..10001 hold the marks 800, 1800, ..., 9800: ten claims. Each asks
# for the far end of what the table keeps ahead, the next partition or,
# once the worker has seen the traffic, its headroom (at most its cap, 16):
# the watermark stands at partition 10, or past it by that headroom (25 in a
# run where the 2 cores were busy with something else too). A claim whose
# partition the worker's poll had made already queues no request, so at most
# ten were queued.
my $mark = $stat->('herd', 'watermark');
ok($mark >= 10 && $mark <= 10 + 16, "the watermark is the last mark's claim ($mark)");
cmp_ok($stat->('herd', 'ahead_requested'), '<=', 10, 'at most one request per mark');
$wait_for_partition->('herd_p10000');
my $log = slurp_file($node->logfile);
my %made;
$made{$1}++ while $log =~ /PHL02 created partition "public\.(herd_p\d+)"/g;
is(scalar(grep { $made{$_} > 1 } keys %made), 0, 'no partition was created twice');
# Ids up to 10001 need herd_p0 .. herd_p10000; the worker's headroom for the
# traffic it saw may add a few more ahead, never past its cap (16).
is(scalar(grep { $made{$_ ? "herd_p${_}000" : 'herd_p0'} } 0 .. 10), 11,
  'every partition for ids up to 10001, the last made ahead');
cmp_ok(scalar(keys %made), '<=', 11 + 16, 'and no more ahead than the cap allows');
# How many appends still met a missing partition depends on how fast the
# worker gets a core against eight clients; test/bench/ measures it.
diag('herd: ' . $stat->('herd', q{format('requested %s, created ahead %s, appends that healed %s', ahead_requested, ahead_created, heals)}));

# A writer that never calls partheal_append: the worker reads the sequence
# and creates the next partition once the position passes the mark.
$node->safe_psql('postgres', q{
  CREATE TABLE plain_w (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE plain_w_p0 PARTITION OF plain_w FOR VALUES FROM (0) TO (100);
  SELECT partheal_manage('plain_w', 100);
  INSERT INTO plain_w (v) SELECT g FROM generate_series(1, 85) g;
});
ok($wait_for_partition->('plain_w_p100'), 'the plain writer passed the mark: the next partition appears');
$node->safe_psql('postgres', 'INSERT INTO plain_w (v) SELECT g FROM generate_series(1, 30) g');
is($node->safe_psql('postgres', 'SELECT count(*) FROM plain_w'), '115',
  'plain INSERTs past the boundary land, with no partheal_append at all');

# A creation that keeps failing is retried, warned about with PHL04 and
# dropped; the heal still lands the rows when they reach the partition.
# premake 0: registration must not make more than shaky_p0 itself (the
# default, premake 4, makes p0 to p40 before the event trigger exists).
# Every partition after p0 is refused: the mark claims partition 1, or a
# later one when a poll saw the eight draws under way (as under valgrind)
# and raised the headroom, and the worker's catch-up, which may try first,
# must not make the claimed one either.
$node->safe_psql('postgres', q{
  CREATE TABLE shaky (id bigserial) PARTITION BY RANGE (id);
  SELECT partheal_manage('shaky', 10, premake => 0);
  CREATE FUNCTION refuse_shaky() RETURNS event_trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() WHERE object_identity ~ 'shaky_p[1-9]') THEN
      RAISE EXCEPTION 'shaky partitions refused';
    END IF;
  END $$;
  CREATE EVENT TRIGGER refuse_shaky ON ddl_command_end EXECUTE FUNCTION refuse_shaky();
  SELECT count(*) FROM partheal_append('shaky', '[{}, {}, {}, {}, {}, {}, {}, {}]');
});
$node->wait_for_log(qr/WARNING:  PHL04 create-ahead of partition \d+ of "public.shaky" dropped after 4 attempts: shaky partitions refused/);
ok($node->log_contains(qr/LOG:  PHL03 could not create the partition of "public.shaky" for id \d+: shaky partitions refused/),
  'PHL03 names the table as PHL01 and PHL02 do');
# The worker's catch-up also tries the partition each poll round, with a
# backoff; each failure is counted.
# (Partition 0 may come from the heal or from the catch-up, whichever is
# first: ahead_created is not asserted.)
is($stat->('shaky', 'ahead_requested, ahead_failed > 0'), '1|t',
  'the failed attempt is counted and dropped');
$node->safe_psql('postgres', 'DROP EVENT TRIGGER refuse_shaky');
$node->safe_psql('postgres', q{SELECT count(*) FROM partheal_append('shaky', '[{}, {}, {}, {}]')});
is($node->safe_psql('postgres', 'SELECT count(*) FROM shaky'), '12', 'the heal landed the rows');
# By a heal, as the warning said, unless the worker's catch-up (retrying
# with a backoff) made the partition between the DROP and the append.
like($stat->('shaky', 'heals'), qr/^[12]$/, 'by a heal, or by the catch-up');

# A DEFAULT partition attached after registration is said once in the log
# by the worker's poll, which leaves the table out of the catch-up.
# Registered and given its DEFAULT in one transaction: a table registered
# with no partition gets its first one from the worker's next poll, which
# could otherwise come between the two (it did, 3 ms after the registration).
# premake 0: with the default (4) the registration itself makes late_p0 to
# late_p40 before the DEFAULT exists, and the scenario is a table with none.
$node->safe_psql('postgres', q{
  CREATE TABLE late (id bigserial) PARTITION BY RANGE (id);
  BEGIN;
  SELECT partheal_manage('late', 10, premake => 0);
  CREATE TABLE late_d PARTITION OF late DEFAULT;
  COMMIT;
  INSERT INTO late SELECT FROM generate_series(1, 25);
});
$node->wait_for_log(qr/WARNING:  PHL08 "public\.late" has a DEFAULT partition "public\.late_d", attached after it was registered/);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'late'::regclass}),
  '1', 'the catch-up creates nothing in front of a DEFAULT partition');
is($node->safe_psql('postgres', q{SELECT default_partition FROM partheal_stats WHERE parent = 'late'::regclass}),
  'late_d', 'partheal_stats names it');
$node->safe_psql('postgres', 'DROP TABLE late');

# The worker comes back by itself after it is terminated: the postmaster
# restarts it, and its poll goes on.
my $worker = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'postgres'};
my $pid = $node->safe_psql('postgres', $worker);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
    "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND pid <> $pid"),
  'a terminated worker is restarted without any append');
$node->safe_psql('postgres', 'INSERT INTO plain_w (v) SELECT g FROM generate_series(1, 70) g');
ok($wait_for_partition->('plain_w_p200'), 'and its sequence poll goes on');

# After a clean restart no one has called partheal yet: the launcher starts
# the worker, and plain INSERT writers get their partitions ahead again.
$node->restart;
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'postgres'}),
  'after a restart the launcher starts the worker');
$node->safe_psql('postgres', 'INSERT INTO plain_w (v) SELECT g FROM generate_series(1, 100) g');
ok($wait_for_partition->('plain_w_p300'), 'and plain INSERT writers get partitions ahead again');

# partheal.max_tables (4 here) bounds the tables, checked at registration.
$node->safe_psql('postgres', q{
  CREATE TABLE fourth (id bigserial) PARTITION BY RANGE (id);
  CREATE TABLE fifth (id bigserial) PARTITION BY RANGE (id);
  SELECT partheal_manage('fourth', 10);
});
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{SELECT partheal_manage('fifth', 10)});
like($stderr, qr/partheal\.max_tables \(4\) tables are managed already/,
  'a fifth table is refused at registration');
like($stderr, qr/HINT:  Raise partheal\.max_tables/, 'with a hint');
is($node->safe_psql('postgres', q{SELECT count(*) FROM partheal_config WHERE parent = 'fifth'::regclass}),
  '0', 'and is not registered');
$node->safe_psql('postgres', q{SELECT partheal_unmanage('shaky'); SELECT partheal_manage('fifth', 10)});
pass('after unmanaging one, it fits');

# DROP DATABASE goes through although a worker is connected to the database,
# and the worker is not restarted into a database that is gone.
# The limit is cluster-wide: make room for the next database's table. The
# worker's poll drops states of tables no longer registered, including one
# it re-created itself while an unmanage was in flight.
$node->safe_psql('postgres', q{SELECT partheal_unmanage('fourth')});
ok($node->poll_query_until('postgres', q{
    SELECT count(*) = (SELECT count(*) FROM partheal_config) FROM partheal_table_state()}),
  'only registered tables keep a state in shared memory');
$node->safe_psql('postgres', 'CREATE DATABASE doomed');
$node->safe_psql('doomed', q{
  CREATE EXTENSION partheal;
  CREATE TABLE t (id bigserial) PARTITION BY RANGE (id);
  SELECT partheal_manage('t', 10, NULL);
});
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'doomed'}),
  'registration started a worker in the database');
$node->safe_psql('postgres', 'DROP DATABASE doomed');
pass('DROP DATABASE went through');
my $offset = -s $node->logfile;
sleep 7;    # longer than the postmaster's restart interval for the worker
unlike(substr(slurp_file($node->logfile), $offset), qr/database \d+ does not exist/,
  'no worker was restarted into the dropped database');

# DROP EXTENSION: the worker has nothing left to do and exits for good.
$node->safe_psql('postgres', 'DROP EXTENSION partheal');
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker'}),
  'the worker exits after DROP EXTENSION');
$node->wait_for_log(qr/partheal worker exits: extension "partheal" is not installed/);
pass('and says why');

$node->stop;
done_testing();
