# The worker's lifecycle: a launcher that owns the workers, so
# that no role, lock, bad table or database DDL switches the heal off.
# Its assertions time the server: make test runs it with no other TAP file beside it.
# TAP lane: alone
# What differs between majors: make test runs it on 17 too.
# TAP majors: every
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use PostgreSQL::Test::Utils;
use File::Spec;
use Test::More;
use Time::HiRes qw(time);

plan skip_all => 'under valgrind: its timings need native speed' if $ENV{PARTHEAL_VALGRIND};

my $node = PartHeal::new_node('lifecycle');
$node->append_conf('postgresql.conf', "restart_after_crash = on\npartheal.naptime = '200ms'\n");
$node->reload;

my $worker_of = sub {
  my ($db) = @_;
  return $node->safe_psql('postgres', qq{
    SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = '$db'});
};
my $worker_back = sub {
  my ($db, $not) = @_;
  $not //= 0;
  return $node->poll_query_until('postgres', qq{
    SELECT count(*) = 1 FROM pg_stat_activity
     WHERE backend_type = 'partheal worker' AND datname = '$db' AND pid <> $not});
};
# A heal in $db: an id in a partition that does not exist yet.
my $next_id = 100;
my $t0;
my $heals = sub {
  my ($db) = @_;
  $next_id += 100;
  my ($ret, $out, $err) = $node->psql($db, qq{
    SET partheal.heal_wait_timeout = '10s';
    SELECT partheal_append('t', '{"id": $next_id}')});
  diag($err) if $ret;
  return $ret == 0 && $out eq $next_id;
};
my $setup_db = sub {
  my ($db) = @_;
  $node->safe_psql('postgres', "CREATE DATABASE $db");
  $node->safe_psql($db, q{
    CREATE EXTENSION partheal;
    CREATE TABLE t (id bigserial, v int) PARTITION BY RANGE (id);
    SELECT partheal_manage('t', 10, NULL);
  });
};

$setup_db->('appdb');
ok($heals->('appdb'), 'a heal works in appdb');
ok($worker_back->('appdb'), 'appdb has its worker');
my $pid = $worker_of->('appdb');

# An unprivileged role cannot stop the heals: its DROP DATABASE is refused
# before the worker is touched, with or without a statement_timeout.
$node->safe_psql('postgres', 'CREATE ROLE mallory LOGIN');
for my $sql ('DROP DATABASE appdb', "SET statement_timeout = '5ms'; DROP DATABASE appdb") {
  my ($ret, $out, $err) = $node->psql('postgres', $sql, extra_params => ['-U', 'mallory']);
  isnt($ret, 0, "mallory's $sql fails");
}
is($worker_of->('appdb'), $pid, 'the worker was never stopped');
ok($heals->('appdb'), 'heals still work');

# The owner's DROP DATABASE while another session is connected: cancelled by
# statement_timeout while PostgreSQL waits for the session, or failed after
# its wait. The worker comes back, and heals and create-ahead work.
my $holder = $node->background_psql('appdb');
my ($ret, $out, $err) = $node->psql('postgres', "SET statement_timeout = '300ms'; DROP DATABASE appdb");
like($err, qr/canceling statement due to statement timeout/, 'a DROP DATABASE cancelled by statement_timeout');
ok($worker_back->('appdb'), 'the worker runs again after the cancelled DROP');
ok($heals->('appdb'), 'heals work after the cancelled DROP');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE appdb');
like($err, qr/is being accessed by other users/, 'a DROP DATABASE that fails after its wait');
ok($worker_back->('appdb'), 'the worker runs again after the failed DROP');
ok($heals->('appdb'), 'heals work after the failed DROP');
# premake 0: the partition ahead must be the worker's, and ahead_p0 is made
# by hand (the default premake would have made ahead_p0 to ahead_p40).
$node->safe_psql('appdb', q{
  CREATE TABLE ahead (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('ahead', 10, premake => 0);
  CREATE TABLE ahead_p0 PARTITION OF ahead FOR VALUES FROM (0) TO (10);
  INSERT INTO ahead (v) SELECT g FROM generate_series(1, 8) g;
});
ok($node->poll_query_until('appdb', q{SELECT count(*) = 1 FROM pg_class WHERE relname = 'ahead_p10'}),
  'create-ahead works after the failed DROP');
$holder->quit;

# Database DDL that needs the database to itself succeeds, and the worker
# comes back under the new name, in the new tablespace, and in the copy.
$pid = $worker_of->('appdb');
$node->safe_psql('postgres', 'ALTER DATABASE appdb RENAME TO renamed');
ok($worker_back->('renamed', $pid), 'RENAME succeeded and the worker is back');
ok($heals->('renamed'), 'heals work under the new name');
# (An absolute path: PostgreSQL 18's test modules give a relative basedir.)
my $space = File::Spec->rel2abs($node->basedir) . '/space';
mkdir $space or die;
$node->safe_psql('postgres', "CREATE TABLESPACE space LOCATION '$space'");
$pid = $worker_of->('renamed');
$node->safe_psql('postgres', 'ALTER DATABASE renamed SET TABLESPACE space');
ok($worker_back->('renamed', $pid), 'SET TABLESPACE succeeded and the worker is back');
ok($heals->('renamed'), 'heals work in the moved database');
$node->safe_psql('postgres', 'CREATE DATABASE copy TEMPLATE renamed');
ok($worker_back->('copy'), 'CREATE DATABASE ... TEMPLATE succeeded and the copy has a worker');
ok($worker_back->('renamed'), 'and the template has its worker back');
ok($heals->('copy'), 'heals work in the copy');
# From inside the template itself, as PostgreSQL allows.
($ret, $out, $err) = $node->psql('renamed', 'CREATE DATABASE copy2 TEMPLATE renamed');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of the current database succeeds') or diag($err);
ok($worker_back->('renamed'), 'and its worker is back');
$node->safe_psql('postgres', 'DROP DATABASE copy2');

# A restored database: the dump creates the extension and fills
# partheal_config without calling partheal_manage. It gets its worker,
# which keeps partitions ahead for plain INSERT writers: premake of them (the
# column's default, 4, as the row gives none), and one past the mark.
$node->safe_psql('postgres', 'CREATE DATABASE restored');
ok($node->poll_query_until('renamed', q{
  SELECT count(*) = 1 FROM partheal_workers() WHERE datname = 'restored' AND state = 'no extension'}),
  'the launcher has looked in a new database and found no partheal');
$node->safe_psql('restored', q{
  CREATE EXTENSION partheal;
  CREATE TABLE r (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE r_p0 PARTITION OF r FOR VALUES FROM (0) TO (10);
  INSERT INTO partheal_config VALUES ('r', 10, 80);
});
ok($worker_back->('restored'), 'a restored database gets its worker without partheal_manage');
$node->safe_psql('restored', 'INSERT INTO r (v) SELECT g FROM generate_series(1, 8) g');
ok($node->poll_query_until('restored', q{SELECT count(*) = 1 FROM pg_class WHERE relname = 'r_p10'}),
  'and its plain INSERT writers get a partition ahead');
ok($node->poll_query_until('restored',
    q{SELECT count(*) = 4 FROM pg_class WHERE relname IN ('r_p10', 'r_p20', 'r_p30', 'r_p40')}),
  'premake (4) of them');
$node->safe_psql('postgres', 'DROP DATABASE restored');

# A database made a template keeps its state, and a heal there fails at
# once with PH003 rather than waiting.
$node->safe_psql('postgres', 'ALTER DATABASE copy IS_TEMPLATE true');
ok($node->poll_query_until('postgres', q{
  SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'copy'}),
  'IS_TEMPLATE true stops the worker');
$t0 = time;
($ret, $out, $err) = $node->psql('copy', q{SELECT partheal_append('t', '{"id": 99999}')});
like($err, qr/could not start a partheal worker/, 'a heal in a template fails with PH003');
cmp_ok(time - $t0, '<', 3, 'at once');
$node->safe_psql('postgres', 'ALTER DATABASE copy IS_TEMPLATE false');
ok($worker_back->('copy'), 'IS_TEMPLATE false brings it back');

# A statement that fails after the pause (a name already taken) leaves the
# worker running again at once; a backend killed in the middle of its DDL
# hands the database back to the launcher.
$pid = $worker_of->('renamed');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE renamed RENAME TO copy');
like($err, qr/already exists/, 'a RENAME that fails after the pause');
ok($worker_back->('renamed', $pid), 'the worker runs again after it');
my $stay = $node->background_psql('renamed');
my ($dout, $derr) = ('', '');
my $dropper = IPC::Run::start(['psql', '-X', '-c', 'DROP DATABASE renamed', '-d', $node->connstr('postgres')],
  '>', \$dout, '2>', \$derr);
$node->poll_query_until('postgres', q{
  SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'DROP DATABASE renamed'}) or die;
$node->poll_query_until('postgres', q{
  SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'renamed'})
  or die;
$node->safe_psql('postgres', q{
  SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'DROP DATABASE renamed'});
$dropper->finish;
ok($worker_back->('renamed'), 'a DROP whose backend was killed while paused leaves the worker running again');
$stay->quit;
ok($heals->('renamed'), 'and heals work');

# The launcher itself, terminated, is back within seconds, and still owns
# the workers.
my $launcher = $node->safe_psql('postgres', q{
  SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal launcher'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($launcher)");
ok($node->poll_query_until('postgres', qq{
  SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal launcher' AND pid <> $launcher}),
  'a terminated launcher is started again');
$pid = $worker_of->('renamed');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($worker_back->('renamed', $pid), 'and restarts workers as before');

# A cancel ends the launcher's round, not the launcher.
$launcher = $node->safe_psql('postgres', q{
  SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal launcher'});
$node->safe_psql('postgres', "SELECT pg_cancel_backend($launcher)");
sleep 1;
is($node->safe_psql('postgres', q{
  SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal launcher'}), $launcher,
  'a cancelled launcher goes on');

# CREATE EXTENSION in a transaction that outlasts the worker's 10 s look:
# the commit asks for the worker again.
$node->safe_psql('postgres', 'CREATE DATABASE slow');
ok($node->poll_query_until('renamed', q{
  SELECT count(*) = 1 FROM partheal_workers() WHERE datname = 'slow' AND state = 'no extension'}),
  'the launcher has looked in the new database and found no partheal');
$node->safe_psql('slow', q{
  BEGIN;
  CREATE EXTENSION partheal;
  CREATE TABLE r (id bigserial, v int) PARTITION BY RANGE (id);
  INSERT INTO partheal_config VALUES ('r', 10, 80);
  SELECT pg_sleep(12);
  COMMIT;
});
ok($worker_back->('slow'), 'a long CREATE EXTENSION transaction gets its worker at commit');
$node->safe_psql('postgres', 'DROP DATABASE slow');

# ALLOW_CONNECTIONS false stops the worker, with no restart loop into FATAL;
# true brings it back.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER DATABASE copy ALLOW_CONNECTIONS false');
ok($node->poll_query_until('postgres', q{
  SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'copy'}),
  'ALLOW_CONNECTIONS false stops the worker');
sleep 3;
unlike(substr(slurp_file($node->logfile), $offset), qr/FATAL:.*"copy" is not currently accepting connections/,
  'and no worker restarts into FATAL');
$node->safe_psql('postgres', 'ALTER DATABASE copy ALLOW_CONNECTIONS true');
ok($worker_back->('copy'), 'ALLOW_CONNECTIONS true brings it back');

# A worker that exits is running again within a bounded time: terminated
# (FATAL), cancelled (it goes on), after DROP EXTENSION (exit code 0) once
# the extension is back, and after a crash.
for my $kind ('terminate', 'cancel', 'extension', 'crash') {
  my $before = $worker_of->('renamed');
  my $t0 = time;
  if ($kind eq 'terminate') {
    $node->safe_psql('postgres', "SELECT pg_terminate_backend($before)");
  } elsif ($kind eq 'cancel') {
    $node->safe_psql('postgres', "SELECT pg_cancel_backend($before)");
  } elsif ($kind eq 'extension') {
    $node->safe_psql('renamed', 'DROP TABLE t; DROP EXTENSION partheal');
    $node->poll_query_until('postgres', qq{
      SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $before}) or die;
    $node->safe_psql('renamed', q{
      CREATE EXTENSION partheal;
      CREATE TABLE t (id bigserial, v int) PARTITION BY RANGE (id);
      SELECT partheal_manage('t', 10, NULL);
    });
  } else {
    my $crash_offset = -s $node->logfile;
    kill 'KILL', $before;
    PartHeal::back_after_crash($node, $crash_offset) or die 'the server did not come back';
  }
  if ($kind eq 'cancel') {
    is($worker_of->('renamed'), $before, 'a cancelled worker goes on');
  } else {
    ok($worker_back->('renamed', $before), "after $kind, a new worker runs");
    cmp_ok(time - $t0, '<', 10, "within 10 s of the $kind");
  }
  ok($heals->('renamed'), "heals work after the $kind");
}
like(slurp_file($node->logfile), qr/CONTEXT:  partheal worker for database "renamed"/,
  'the worker names itself in error context');
# Statistics: in a database no backend is connected to, the transactions
# counted can only be the worker's.
$setup_db->('quiet');
sleep 1;
my $commits = sub {
  $node->safe_psql('postgres', q{SELECT xact_commit FROM pg_stat_database WHERE datname = 'quiet'});
};
my $first_count = $commits->();
ok($node->poll_query_until('postgres', qq{
  SELECT xact_commit > $first_count FROM pg_stat_database WHERE datname = 'quiet'}),
  'the worker reports its statistics');

# A lock held on one table's sequence does not hold up the heals of another
# by more than partheal.ddl_lock_timeout; one table that no longer fits does
# not stop create-ahead for the others.
$node->safe_psql('renamed', q{
  CREATE TABLE other (id bigserial, v int) PARTITION BY RANGE (id);
  -- premake 0: id 45 and other_p10 must be the heal's and the worker's
  -- (the default premake makes other_p0 to other_p40 at registration).
  SELECT partheal_manage('other', 10, premake => 0);
  CREATE TABLE broken (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('broken', 10);
  ALTER TABLE broken ALTER id DROP DEFAULT;
});
my $seq_holder = $node->background_psql('renamed');
$seq_holder->query_safe('BEGIN; ALTER SEQUENCE t_id_seq RESTART WITH 5000');
$t0 = time;
ok($heals->('renamed'), 'a heal of t while its sequence is locked');
$t0 = time;
($ret, $out, $err) = $node->psql('renamed', q{SELECT partheal_append('other', '{"id": 45}')});
is($out, '45', 'a heal of another table');
cmp_ok(time - $t0, '<', 2 + 1, 'within partheal.ddl_lock_timeout (2 s) of waiting');
$node->safe_psql('renamed', q{SELECT count(*) FROM partheal_append('other', '[{}, {}, {}, {}, {}, {}, {}, {}]')});
ok($node->poll_query_until('renamed', q{SELECT count(*) = 1 FROM pg_class WHERE relname = 'other_p10'}),
  'create-ahead goes on for the others despite a broken table and a locked sequence');
$seq_holder->query_safe('ROLLBACK');
$seq_holder->quit;
$node->wait_for_log(qr/PHL03 sequence poll of "public\.broken" failed/);
ok(PartHeal::rounds_pass($node, 5, 'renamed'), 'five more polls');
my $broken_lines = () = slurp_file($node->logfile) =~ /PHL03 sequence poll of "public\.broken" failed/g;
is($broken_lines, 1, 'the broken table is logged once');

# LOCK partheal_config (as ALTER EXTENSION UPDATE would hold it) does not
# stop the worker: its poll skips the round, and it serves a heal for a
# session that has the registration already.
my $warm = $node->background_psql('renamed');
$warm->query_safe(q{SELECT partheal_append('t', '{"id": 9001}')});
my $config_locker = $node->background_psql('renamed');
$config_locker->query_safe('BEGIN; LOCK partheal_config IN ACCESS EXCLUSIVE MODE');
# A second of polls (every 200 ms) meets the lock; they skip their round,
# so rounds (which counts the rounds that looked) cannot tell when.
sleep 1;
$t0 = time;
my $landed = $warm->query_safe(q{SELECT partheal_append('t', '{"id": 9105}')});
like($landed, qr/9105/, 'a heal while partheal_config is locked');
cmp_ok(time - $t0, '<', 2, 'served at once');
$config_locker->query_safe('ROLLBACK');
$config_locker->quit;
$warm->quit;

# Twenty databases created and dropped: no worker is left restarting for a
# database that is gone, and no shared state stays behind.
my @oids;
for my $i (1 .. 20) {
  $setup_db->("churn$i");
  ok($heals->("churn$i"), "heal in churn$i") if $i == 1 || $i == 20;
  push @oids, $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'churn$i'");
  $node->safe_psql('postgres', "DROP DATABASE churn$i");
}
$offset = -s $node->logfile;
my $list = join(',', @oids);
ok($node->poll_query_until('renamed', "SELECT count(*) = 0 FROM partheal_workers() WHERE datid IN ($list)"),
  'no database entry, state or queued attempt is left for the dropped databases');
# Some seconds for a restart into a dropped database to show in the log: 15
# of renamed's polls (200 ms each) while the launcher goes on.
ok(PartHeal::rounds_pass($node, 15, 'renamed'), 'fifteen polls later');
is($node->safe_psql('renamed', "SELECT count(*) FROM partheal_workers() WHERE state = 'forgotten'"), '0',
  'and no shared state of any database the launcher does not follow');
is($node->safe_psql('postgres', q{
  SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname LIKE 'churn%'}),
  '0', 'no worker of theirs runs');
unlike(substr(slurp_file($node->logfile), $offset), qr/does not exist/,
  'and none restarts into a database that does not exist');
is($node->safe_psql('renamed', q{SELECT state FROM partheal_workers() w JOIN pg_database d ON d.oid = w.datid
  WHERE d.datname = 'renamed'}), 'running', 'partheal_workers shows the running worker');
$node->stop;

# More databases than worker slots: every append heals or fails fast with
# PH003, and none hangs.
my $small = PartHeal::new_node('slots', conf => "max_worker_processes = 8\n");
$node = $small;
my ($healed, $refused, $slow) = (0, 0, 0);
my ($r, $o, $e);
for my $i (1 .. 20) {
  $setup_db->("many$i");
}
for my $i (1 .. 20) {
  my $t = time;
  ($r, $o, $e) = $node->psql("many$i", q{
    SET partheal.heal_wait_timeout = '20s';
    SELECT partheal_append('t', '{"id": 55}')});
  my $took = time - $t;
  $slow++ if $took > 5;
  if ($r == 0 && $o eq '55') { $healed++ }
  elsif ($e =~ /PH003|could not start a partheal worker/) { $refused++ }
  else { diag("many$i: $e") }
}
is($healed + $refused, 20, "every append healed ($healed) or failed with PH003 ($refused)");
# Eight slots: the logical replication launcher, partheal's launcher, and six
# workers.
is($healed, 6, 'six databases have a worker and heal');
is($slow, 0, 'none took more than 5 s');
# With every slot taken, a failed DROP DATABASE still gives its database
# the worker back: a paused database keeps its slot.
my ($kept) = grep {
  $node->safe_psql('postgres', qq{
    SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = '$_'}) eq '1'
} map { "many$_" } 1 .. 20;
my $connected = $node->background_psql($kept);
($r, $o, $e) = $node->psql('postgres', "DROP DATABASE $kept");
like($e, qr/is being accessed by other users/, "a failed DROP of $kept with every slot taken");
ok($worker_back->($kept), 'its worker is back, not given to another database');
$connected->quit;
$next_id = 1000;
ok($heals->($kept), 'and heals work there');
$node->stop;
done_testing();
