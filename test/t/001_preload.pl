# partheal must be preloaded; with it, registrations and heals survive a
# restart and pg_dump carries the registrations.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use PostgreSQL::Test::Utils;
use Test::More;

# Without shared_preload_libraries: a clear error naming the setting.
my $bare = PartHeal::new_node('bare', no_preload => 1);
my ($ret, $out, $err) = $bare->psql('postgres', 'CREATE EXTENSION partheal');
isnt($ret, 0, 'CREATE EXTENSION fails without preload');
like($err, qr/partheal must be loaded via shared_preload_libraries/, 'the error says why');
like($err, qr/HINT:  Add partheal to shared_preload_libraries/, 'the hint names the setting');
is($bare->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'partheal'"),
  '0', 'nothing was installed');
$bare->stop;

my $node = PartHeal::new_node('main');
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE log (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('log', 100, NULL);
  SELECT partheal_append('log', '{"body": "before restart"}');
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_inherits'), '1', 'a partition was healed');

$node->restart;
# A stop ends the launcher and the worker as it ends PostgreSQL's own
# workers: no FATAL line in the log.
my $stop_log = slurp_file($node->logfile);
like($stop_log, qr/background worker "partheal worker" \(PID \d+\) exited/, 'the stop ended the worker');
unlike($stop_log, qr/FATAL:  terminating background worker "partheal/, 'and neither it nor the launcher logged a FATAL');
is($node->safe_psql('postgres', 'SELECT parent::text, partition_size FROM partheal_config'),
  'log|100', 'the registration survives a restart');
# The worker is started on demand after the restart.
$node->safe_psql('postgres', q{SELECT partheal_append('log', '{"id": 250, "body": "after"}')});
is($node->safe_psql('postgres', 'SELECT count(*) FROM log'), '2', 'the heal works after a restart');
is($node->safe_psql('postgres',
    "SELECT string_agg(backend_type, ',' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type LIKE 'partheal%'"),
  'partheal launcher,partheal worker', 'the launcher and the worker show in pg_stat_activity');
# Their idle waits are named from PostgreSQL 17 on, plain "Extension" before.
my $idle = $node->safe_psql('postgres', 'SHOW server_version_num') >= 170000 ? 'PartHealIdle' : 'Extension';
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 2 FROM pg_stat_activity
    WHERE backend_type IN ('partheal launcher', 'partheal worker')
      AND wait_event_type = 'Extension' AND wait_event = '$idle'}),
  "the launcher and the worker wait as Extension/$idle between polls");

# pg_dump keeps the registration with the data.
my $file = "${PostgreSQL::Test::Utils::tmp_check}/dump.sql";
$node->command_ok(['pg_dump', '-f', $file, '-d', $node->connstr('postgres')], 'pg_dump runs');
my $dump = slurp_file($file);
# 0.5's and 0.6's columns too: premake is stored (4, the default) although
# create-ahead is off (mark_percent NULL) and so nothing was made ahead.
like($dump, qr/COPY public\.partheal_config \(parent, partition_size, mark_percent, premake, partition_interval, time_zone, retention, retention_keep_table, drain_default, retention_ids, drain_reach\) FROM stdin;\npublic\.log\t100\t\\N\t4\t\\N\t\\N\t\\N\tf\tt\t\\N\t\\N\n/,
  'pg_dump dumps the registration');

# ... and a restore into a fresh database heals again.
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f',
    $file, '-d', $node->connstr('restored')],
  'the dump restores');
$node->safe_psql('restored', q{SELECT partheal_append('log', '{"id": 999}')});
is($node->safe_psql('restored', 'SELECT count(*) FROM log'), '3', 'the restored table heals');

$node->stop;
done_testing();
