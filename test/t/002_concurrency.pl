# Appends from many sessions at once, really concurrent: every row lands,
# each partition is created once, and a creation racing another session's
# waits for it instead of failing.
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

my $node = PartHeal::new_node('concurrent');
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE lab (id bigserial, body text) PARTITION BY RANGE (id);
  CREATE TABLE lab_p0 PARTITION OF lab FOR VALUES FROM (0) TO (20);
  SELECT setval('lab_id_seq', 19);
  SELECT partheal_manage('lab', 10, NULL);
});

# The heal's first concurrency lab, at full speed: eight clients, batches of five rows, each
# batch in a transaction of its own, through 40 missing partitions.
my $script = "${PostgreSQL::Test::Utils::tmp_check}/batch.sql";
open(my $fh, '>', $script) or die;
print $fh q{SELECT count(*) FROM partheal_append('lab', '[{"body": "b"}, {}, {}, {}, {}]');} . "\n";
close $fh;
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(['pgbench', '-n', '-c', '8', '-j', '2', '-t', '10', '-f', $script,
    $node->connstr('postgres')], '>', \$out, '2>', \$err);
ok($ok, 'eight concurrent appenders finish') or diag($err);
like($out, qr/number of transactions actually processed: 80\/80/, 'no append failed');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id), min(id), max(id) FROM lab'),
  '400|400|20|419', 'every row landed, once, with the ids it was given');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_inherits WHERE inhparent = 'lab'::regclass}),
  '41', 'one partition per ten ids, none twice');
my $log = slurp_file($node->logfile);
my $created = () = $log =~ /PHL02 created partition "public\.lab_p/g;
is($created, 40, 'the worker created each partition exactly once');

# A session that makes the partition itself, in an open transaction: its
# ATTACH holds SHARE UPDATE EXCLUSIVE on the parent, which the worker takes
# before it decides. The worker waits for it, finds the partition, does
# nothing, and the append that was waiting lands.
# (The worker must wait for the holder however slowly the checks below run,
# under valgrind too: ddl_lock_timeout is raised for the while.)
$node->safe_psql('postgres', q{ALTER SYSTEM SET partheal.ddl_lock_timeout = '60s'; SELECT pg_reload_conf()});
my $holder = $node->background_psql('postgres');
$holder->query_safe(qq{
  BEGIN;
  CREATE TABLE lab_hand (LIKE lab INCLUDING ALL);
  ALTER TABLE lab ATTACH PARTITION lab_hand FOR VALUES FROM (500) TO (510);
});
my ($aout, $aerr) = ('', '');
my $append = IPC::Run::start(['psql', '-X', '-A', '-t', '-c',
    q{SELECT partheal_append('lab', '{"id": 505}')}, '-d', $node->connstr('postgres')],
  '>', \$aout, '2>', \$aerr);
# The worker is now waiting on the parent's lock, holding partheal's own
# advisory lock for (lab, partition 50): class 20552, as the README says.
$node->poll_query_until('postgres', q{
  SELECT count(*) > 0 FROM pg_stat_activity
   WHERE backend_type = 'partheal worker' AND wait_event_type = 'Lock'}) or die;
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE a.backend_type = 'partheal worker' AND l.locktype = 'advisory' AND l.granted
       AND l.objsubid = 20552 AND l.classid = 'lab'::regclass::oid AND l.objid = 50}),
  '1', "the worker holds partheal's advisory lock of its own class");
$holder->query_safe('COMMIT');
$holder->quit;
$append->finish;
$node->safe_psql('postgres', q{ALTER SYSTEM RESET partheal.ddl_lock_timeout; SELECT pg_reload_conf()});
is($aout, "505\n", 'the waiting append landed') or diag($aerr);
is($node->safe_psql('postgres', q{SELECT tableoid::regclass FROM lab WHERE id = 505}),
  'lab_hand', 'in the partition the other session made');
like(slurp_file($node->logfile), qr/PHL01 heal: no partition of "public\.lab" for id 505 .*another session had created it/,
  'the heal line says another session had created it');

# Unsorted ids: one request to the worker per missing partition, not per id.
my $offset = -s $node->logfile;
$node->safe_psql('postgres',
  q{SELECT partheal_append('lab', '[{"id": 1208}, {"id": 3005}, {"id": 1201}, {"id": 3001}]')});
my $tail = substr(slurp_file($node->logfile), $offset);
my $heals = () = $tail =~ /PHL01 heal: no partition of "public\.lab"/g;
is($heals, 2, 'four unsorted ids in two missing partitions make two heals');

$node->stop;
done_testing();
