# The worker under failure: terminated, killed mid-request, crashed with the
# postmaster's reset, and too slow for partheal.heal_wait_timeout. No
# committed row is lost and the worker comes back on the next heal.
# What differs between majors: make test runs it on 17 too.
# TAP majors: every
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PartHeal::new_node('worker');
# The test framework turns crash restarts off; this test is about them.
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->reload;
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE q (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('q', 10, NULL);
  SELECT partheal_append('q', '{"body": "one"}');
});
my $worker_pid = sub {
  $node->safe_psql('postgres',
    q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal worker'});
};
my $first = $worker_pid->();
ok($first, 'a heal started the worker');

# Terminated: the launcher starts a new one at once, and it heals; the
# database's count of poll rounds (partheal_workers().rounds) goes on from
# where it was.
my $rounds = sub {
  $node->safe_psql('postgres', q{SELECT rounds FROM partheal_workers() WHERE datname = 'postgres'});
};
ok(PartHeal::rounds_pass($node, 5), 'the worker completes poll rounds');
my $rounds_before = $rounds->();
$node->safe_psql('postgres', "SELECT pg_terminate_backend($first)");
$node->poll_query_until('postgres', qq{
  SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND pid <> $first})
  or die;
$node->safe_psql('postgres', q{SELECT partheal_append('q', '{"id": 15}')});
my $second = $worker_pid->();
ok($second && $second ne $first, 'a terminated worker is replaced, and the new one heals');
cmp_ok($rounds->(), '>=', $rounds_before, 'the count goes on from its predecessor\'s, not from 0');
ok(PartHeal::rounds_pass($node, 1), 'and the new worker completes rounds of its own');

# Too slow: the worker waits on a lock longer than the append will wait.
$node->safe_psql('postgres', q{ALTER SYSTEM SET partheal.ddl_lock_timeout = '60s'; SELECT pg_reload_conf()});
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; LOCK TABLE q IN SHARE UPDATE EXCLUSIVE MODE");
my ($ret, $out, $err) = $node->psql('postgres', q{
  SET partheal.heal_wait_timeout = '300ms';
  SELECT partheal_append('q', '{"id": 35}');
});
isnt($ret, 0, 'an append that outwaits partheal.heal_wait_timeout fails');
like($err, qr/timed out waiting for the partition of "q" for id 35/, 'with a clear message');
my $state = $node->safe_psql('postgres', q{
  SELECT wait_event_type FROM pg_stat_activity WHERE backend_type = 'partheal worker'});
is($state, 'Lock', 'the worker is still waiting for the lock');

# Killed mid-request: the request goes back to the queue, a new worker takes
# it, and the append that was waiting lands once the lock is free.
my ($aout, $aerr) = ('', '');
my $append = IPC::Run::start(['psql', '-X', '-A', '-t', '-c',
    q{SELECT partheal_append('q', '{"id": 36}')}, '-d', $node->connstr('postgres')],
  '>', \$aout, '2>', \$aerr);
# The backend waits for the worker's answer: Extension/PartHealWorkerAnswer
# from PostgreSQL 17 on, Extension/Extension before.
my $answer_wait = $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000
  ? 'PartHealWorkerAnswer' : 'Extension';
ok($node->poll_query_until('postgres', qq{
  SELECT count(*) > 0 FROM pg_stat_activity
   WHERE query LIKE '%"id": 36%' AND wait_event_type = 'Extension' AND wait_event = '$answer_wait'}),
  "the waiting append shows as Extension/$answer_wait") or die;
my $busy = $worker_pid->();
$node->safe_psql('postgres', "SELECT pg_terminate_backend($busy)");
$node->poll_query_until('postgres', qq{
  SELECT count(*) = 1 FROM pg_stat_activity
   WHERE backend_type = 'partheal worker' AND pid <> $busy}) or die;
$holder->query_safe('COMMIT');
$holder->quit;
$append->finish;
is($aout, "36\n", 'the append outlived a killed worker and landed') or diag($aerr);
$node->safe_psql('postgres', q{ALTER SYSTEM RESET partheal.ddl_lock_timeout; SELECT pg_reload_conf()});

# partheal's lock has a class of its own: an application holding every
# advisory key partheal once used for (q, partition 4), in both forms, does
# not hold up the heal.
my $relid = $node->safe_psql('postgres', q{SELECT 'q'::regclass::oid::int});
my $app = $node->background_psql('postgres');
$app->query_safe("BEGIN; SELECT pg_advisory_xact_lock($relid, 4);"
  . " SELECT pg_advisory_xact_lock((${relid}::bigint << 32) | 4)");
is($node->safe_psql('postgres', q{
  SET partheal.heal_wait_timeout = '5s';
  SELECT partheal_append('q', '{"id": 45}')}), '45',
  "an application's advisory locks never block partheal's");
$app->query_safe('COMMIT');
$app->quit;

# A true deadlock through the worker: s1 has appended (ROW EXCLUSIVE on dl);
# s2 holds SHARE UPDATE EXCLUSIVE and waits for SHARE behind s1; s1's next
# append needs a heal, whose worker waits for s2's lock. All three waits are
# lock waits, so PostgreSQL's deadlock detector finds the cycle; s1 checks
# first (its deadlock_timeout is the shortest) and is the one that fails,
# with 40P01 and a CONTEXT line naming the wait for the partheal worker.
$node->safe_psql('postgres', q{
  CREATE TABLE dl (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE dl_p0 PARTITION OF dl FOR VALUES FROM (0) TO (10);
  SELECT partheal_manage('dl', 10, NULL);
});
my $s1 = $node->background_psql('postgres', on_error_stop => 0);
my $s2 = $node->background_psql('postgres');
$s1->query_safe(q{BEGIN; SET LOCAL deadlock_timeout = '100ms'; SELECT partheal_append('dl', '{"v": 1}')});
$s2->query_safe(q{BEGIN; SET LOCAL deadlock_timeout = '10s'; LOCK dl IN SHARE UPDATE EXCLUSIVE MODE});
$s2->query_until(qr/waiting/, "\\echo waiting\nLOCK dl IN SHARE MODE;\n");
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_locks WHERE relation = 'dl'::regclass AND NOT granted}),
  's2 waits for s1');
$s1->query(q{SELECT partheal_append('dl', '{"id": 15, "v": 2}')});
like($s1->{stderr}, qr/ERROR:  deadlock detected/, 'the append fails with PostgreSQL\'s deadlock error');
like($s1->{stderr}, qr/CONTEXT:  waiting for the partheal worker to create the partition of "dl" for id 15/,
  'naming the wait for the partheal worker');
$s1->{stderr} = '';
$s1->query_safe('ROLLBACK');
$s2->query_safe('COMMIT');
$s1->quit;
$s2->quit;
ok($node->poll_query_until('postgres', q{SELECT to_regclass('dl_p10') IS NOT NULL}),
  'the worker, no longer blocked, creates the partition after all');

# Crashed: SIGKILL makes the postmaster reset shared memory. Committed rows
# survive, and heals work once the server is back.
my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM q');
my $victim = $worker_pid->();
my $offset = -s $node->logfile;
kill 'KILL', $victim;
PartHeal::back_after_crash($node, $offset) or die 'the server did not come back';
is($node->safe_psql('postgres', 'SELECT count(*) FROM q'), $before, 'no committed row was lost');
$node->safe_psql('postgres', q{SELECT partheal_append('q', '{"id": 77}')});
is($node->safe_psql('postgres', 'SELECT count(*) FROM q WHERE id = 77'), '1',
  'heals work after the crash restart');

$node->stop;
done_testing();
