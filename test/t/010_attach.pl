# partheal_attach_window and partheal_partition_data where sessions, time and
# versions matter: a lock held past every attempt, the drain's commit after
# each window, a 0.1 database updated to 0.2, and pg_dump and restore.
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

plan skip_all => 'lock waits and a blocked drain need native speed'
  if $ENV{PARTHEAL_VALGRIND};

my $node = PartHeal::new_node('attach');
$node->safe_psql('postgres', 'CREATE EXTENSION partheal');
my $sql = sub { $node->safe_psql('postgres', shift) };

$sql->(q{
  CREATE TABLE ev (id int, at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
  CREATE TABLE ev_default PARTITION OF ev DEFAULT;
  INSERT INTO ev SELECT g, '2026-01-01'::timestamptz + g * interval '1 hour', 'old'
    FROM generate_series(1, 100) g;
});

# An application holds DEFAULT past every attempt: partheal gives up with
# default_holds_rows and a NOTICE, and leaves nothing behind: no table, no
# moved row. The application's transaction is unharmed.
my $app = $node->background_psql('postgres');
$app->query_safe('BEGIN');
$app->query_safe('LOCK TABLE ev_default IN ACCESS SHARE MODE');
my ($ret, $out, $err) = $node->psql('postgres',
  q{SET partheal.attach_lock_timeout = 100;
    SET partheal.attach_lock_attempts = 3;
    SELECT outcome, partition IS NULL, rows_moved, attempts
      FROM partheal_attach_window('ev', '2026-01-01', '2026-02-01')});
is($out, 'default_holds_rows|t|0|3', 'a lock held past three attempts: default_holds_rows')
  or diag($err);
like($err, qr/NOTICE:  partheal: the window FROM \('2026-01-01 [^)]*'\) TO \('2026-02-01 [^)]*'\) of "ev" was not attached: its locks could not be had in 3 attempts of 100 ms \(canceling statement due to lock timeout\)/,
  'the NOTICE says why');
like($err, qr/HINT:  Its rows are still in the DEFAULT partition/, 'and where the rows are');
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'ev_p%'}), '0',
  'the table it created is gone');
is($sql->(q{SELECT count(*) FROM ONLY ev_default}), '100', 'every row is still in DEFAULT');
$app->query_safe(q{INSERT INTO ev VALUES (101, '2026-01-20', 'app')});
$app->query_safe('COMMIT');
$app->quit;
like(slurp_file($node->logfile), qr/PHL07 partheal: the window FROM .* of "ev" was not attached/,
  'the server log has the PHL07 line');

# Once the lock is gone the same call attaches, and says so in the log.
is($sql->(q{SELECT outcome, rows_moved FROM partheal_attach_window('ev', '2026-01-01', '2026-02-01')}),
  'attached|101', 'released, the window attaches with all its rows');
like(slurp_file($node->logfile),
  qr/PHL06 attached public\.ev_p20260101 to public\.ev FOR VALUES FROM .*: 101 rows moved out of DEFAULT, 1 attempts; the parent was locked for \d+ ms in all, \d+ ms at the longest/,
  'the server log has the PHL06 line');

# partheal does not queue for its locks, except in its last attempt: while an
# open transaction holds the parent, a writer with a short lock_timeout
# inserts unharmed, instead of waiting behind partheal's queued request.
$sql->(q{
  CREATE TABLE pq (id int, at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
  CREATE TABLE pq_default PARTITION OF pq DEFAULT;
  INSERT INTO pq SELECT g, '2026-03-01'::timestamptz + g * interval '1 hour', 'old'
    FROM generate_series(1, 100) g;
});
my $open = $node->background_psql('postgres');
$open->query_safe(q{BEGIN; INSERT INTO pq VALUES (0, '2025-01-01', 'open')});
my $attacher = $node->background_psql('postgres', on_error_stop => 0);
$attacher->query_until(qr/started/, q{\echo started
SELECT 'outcome=' || outcome FROM partheal_attach_window('pq', '2026-03-01', '2026-04-01');
\echo finished
});
# Inside partheal's first attempts (4 of 200 ms, with backoff: over a second).
select(undef, undef, undef, 0.3);
($ret, $out, $err) = $node->psql('postgres',
  q{SET lock_timeout = '100ms'; INSERT INTO pq VALUES (101, '2026-03-20', 'quick')});
is($ret, 0, 'a writer with lock_timeout 100ms inserts while partheal polls for its locks')
  or diag($err);
$open->query_safe('COMMIT');
$open->quit;
my $attached = $attacher->query_until(qr/finished/, '');
$attacher->quit;
like($attached, qr/outcome=attached/, 'and partheal attaches once the open transaction ends');
is($sql->(q{SELECT count(*) FROM ONLY pq_p20260301}), '101',
  'with the writer\'s row among the window\'s');

# Writers at full speed into the window while it is attached: every insert
# that routed to DEFAULT during ATTACH's scan would be rejected by the
# narrowed constraint (23514) if partheal did not hold the parent first.
$sql->(q{
  CREATE TABLE hot (id bigserial, at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
  CREATE TABLE hot_default PARTITION OF hot DEFAULT;
  INSERT INTO hot (at, v) SELECT '2025-01-01'::timestamptz + g * interval '1 minute', 'old'
    FROM generate_series(1, 300000) g;
});
my $bench = "${PostgreSQL::Test::Utils::tmp_check}/hot.sql";
open(my $fh, '>', $bench) or die;
print $fh "INSERT INTO hot (at, v) VALUES ('2026-06-01'::timestamptz + random() * interval '20 days', 'live');\n";
close $fh;
# To files, not pipes: a pipe nobody pumps while this script waits stalls
# pgbench.
my ($bout_file, $berr_file) = ("$bench.out", "$bench.err");
my $writers = IPC::Run::start(
  ['pgbench', '-n', '-c', '4', '-j', '2', '-T', '6', '-f', $bench, '-d', $node->connstr('postgres')],
  '>', $bout_file, '2>', $berr_file);
ok($node->poll_query_until('postgres', q{SELECT count(*) > 2000 FROM hot WHERE v = 'live'}),
  'the writers are writing');
my @outcomes;
for my $month (6 .. 7) {
  my $lower = sprintf('2026-%02d-01', $month);
  my $upper = sprintf('2026-%02d-01', $month + 1);
  push @outcomes, $sql->("SELECT outcome FROM partheal_attach_window('hot', '$lower', '$upper')");
  select(undef, undef, undef, 0.5);
}
$writers->finish;
my ($bout, $berr) = (slurp_file($bout_file), slurp_file($berr_file));
is(join(',', @outcomes), 'attached,attached', 'two windows attached under four writers');
unlike($berr, qr/ERROR|aborted/, 'no writer got an error') or diag($berr);
my ($done) = $bout =~ /number of transactions actually processed: (\d+)/;
ok($done && $done > 100, "the writers kept writing (" . ($done // 0) . " inserts)");
is($sql->(q{SELECT count(*) FROM hot WHERE v = 'live'}), $done, 'and every insert is there');
is($sql->(q{SELECT count(*) FROM ONLY hot_default WHERE at >= '2026-06-01' AND at < '2026-08-01'}),
  '0', 'none of them left in DEFAULT');

# The drain commits after each window. A trigger on DEFAULT makes the move of
# the second window wait on an advisory lock this test holds; meanwhile
# another session already sees the first window attached and its rows there.
$sql->(q{
  CREATE TABLE dr (k int, v text) PARTITION BY RANGE (k);
  CREATE TABLE dr_legacy (LIKE dr);
  INSERT INTO dr_legacy SELECT g, 'x' FROM generate_series(0, 29) g;
  ALTER TABLE dr ATTACH PARTITION dr_legacy DEFAULT;
  CREATE FUNCTION hold_second() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF OLD.k = 10 THEN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); END IF;
    RETURN OLD;
  END $$;
  CREATE TRIGGER hold_second AFTER DELETE ON dr_legacy FOR EACH ROW EXECUTE FUNCTION hold_second();
});
my $holder = $node->background_psql('postgres');
$holder->query_safe('SELECT pg_advisory_lock(4242)');
my $drain = $node->background_psql('postgres', on_error_stop => 0);
$drain->query_until(qr/started/, q{\echo started
CALL partheal_partition_data('dr', '10');
\echo drained
});
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted}),
  'the drain waits inside the second window');
is($sql->(q{SELECT string_agg(tableoid::regclass::text || ':' || n, ',' ORDER BY tableoid::regclass::text)
              FROM (SELECT tableoid, count(*) AS n FROM dr GROUP BY 1) s}),
  'dr_legacy:20,dr_p0:10', 'the first window is committed and visible while the second moves');
$holder->query_safe('SELECT pg_advisory_unlock(4242)');
$drain->query_until(qr/drained/, '');
$drain->quit;
is($sql->(q{SELECT string_agg(tableoid::regclass::text || ':' || n, ',' ORDER BY tableoid::regclass::text)
              FROM (SELECT tableoid, count(*) AS n FROM dr GROUP BY 1) s}),
  'dr_p0:10,dr_p10:10,dr_p20:10', 'then every window is drained');

# Inside a transaction block the drain cannot commit: nothing is visible to
# others until the caller commits.
$sql->(q{
  CREATE TABLE dr2 (k int, v text) PARTITION BY RANGE (k);
  CREATE TABLE dr2_legacy PARTITION OF dr2 DEFAULT;
  INSERT INTO dr2 SELECT g, 'x' FROM generate_series(0, 29) g;
  CREATE TRIGGER hold_second AFTER DELETE ON dr2_legacy FOR EACH ROW EXECUTE FUNCTION hold_second();
});
$holder->query_safe('SELECT pg_advisory_lock(4242)');
$drain = $node->background_psql('postgres', on_error_stop => 0);
$drain->query_safe('BEGIN');
$drain->query_until(qr/started/, q{\echo started
CALL partheal_partition_data('dr2', '10');
\echo drained
});
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted}),
  'in a transaction block the drain waits inside the second window too');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'dr2'::regclass}), '1',
  'but nothing it did is visible yet');
$holder->query_safe('SELECT pg_advisory_unlock(4242)');
$drain->query_until(qr/drained/, '');
$drain->query('COMMIT');
$drain->quit;
$holder->quit;
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'dr2'::regclass}), '4',
  'all of it is, once the caller commits');

# A 0.1 database updated to 0.2 gains the attach.
$sql->('CREATE DATABASE old');
$node->safe_psql('old', q{
  CREATE EXTENSION partheal VERSION '0.1';
  CREATE TABLE m (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('m', 10);
  SELECT partheal_append('m', '[{"v": 1}]');
  CREATE TABLE t (at date NOT NULL) PARTITION BY RANGE (at);
  CREATE TABLE t_rest PARTITION OF t DEFAULT;
  INSERT INTO t VALUES ('2026-03-03');
});
$node->safe_psql('old', 'ALTER EXTENSION partheal UPDATE');
is($node->safe_psql('old', q{SELECT outcome, rows_moved FROM partheal_attach_window('t', '2026-03-01', '2026-04-01')}),
  'attached|1', 'after ALTER EXTENSION UPDATE, partheal_attach_window works');
is($node->safe_psql('old', q{SELECT count(*) FROM partheal_append('m', '[{"v": 2}]')}), '1',
  'and the managed table keeps taking appends');

# A table with no DEFAULT, held by another session past every attempt: the
# outcome is not_attached, and the NOTICE says there was no DEFAULT to hold
# rows, not that rows are still in one.
$sql->(q{CREATE TABLE nodef (at timestamptz NOT NULL) PARTITION BY RANGE (at)});
my $nodef_holder = $node->background_psql('postgres');
$nodef_holder->query_safe('BEGIN');
$nodef_holder->query_safe('LOCK TABLE nodef IN SHARE MODE');
($ret, $out, $err) = $node->psql('postgres',
  q{SET partheal.attach_lock_timeout = 50;
    SET partheal.attach_lock_attempts = 2;
    SELECT outcome, partition IS NULL, rows_moved FROM partheal_attach_window('nodef', '2026-01-01', '2026-02-01')});
is($out, 'not_attached|t|0', 'no DEFAULT and a lock held past every attempt: not_attached') or diag($err);
like($err, qr/HINT:  The table has no DEFAULT partition, so no row was moved or held back; nothing was changed\./,
  'the HINT says there is no DEFAULT');
unlike($err, qr/still in the DEFAULT partition/, 'and does not speak of rows in one');
$nodef_holder->query_safe('COMMIT');
is($sql->(q{SELECT outcome FROM partheal_attach_window('nodef', '2026-01-01', '2026-02-01')}), 'attached',
  'released, it attaches');

# A partition whose DETACH ... CONCURRENTLY was interrupted is pending detach:
# its bounds are still taken. partheal's overlap check names it, with how to
# finish the detach, instead of PostgreSQL's 42P17 on partheal's own ATTACH.
$nodef_holder->query_safe('BEGIN');
$nodef_holder->query_safe('SELECT count(*) FROM nodef');
($ret, $out, $err) = $node->psql('postgres',
  q{SET statement_timeout = '300ms'; ALTER TABLE nodef DETACH PARTITION nodef_p20260101 CONCURRENTLY});
like($err, qr/canceling statement due to statement timeout/, 'a DETACH CONCURRENTLY interrupted');
$nodef_holder->query_safe('COMMIT');
$nodef_holder->quit;
is($sql->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'nodef_p20260101'::regclass}), 't',
  'leaves the partition pending detach');
for my $window (['2026-01-15', '2026-02-15'], ['2026-01-01', '2026-02-01']) {
  ($ret, $out, $err) = $node->psql('postgres', qq{SELECT * FROM partheal_attach_window('nodef', '$window->[0]', '$window->[1]')},
    extra_params => ['-v', 'VERBOSITY=verbose']);
  like($err, qr/ERROR:  42P17: the window FROM .* would overlap partition "nodef_p20260101" of "nodef", which is being detached/,
    "the window from $window->[0] is refused, naming the partition being detached");
  like($err, qr/HINT:  Finish it with ALTER TABLE nodef DETACH PARTITION nodef_p20260101 FINALIZE/, 'with how to finish it');
  unlike($err, qr/QUERY:/, 'and no internal statement');
}
# Registered, a heal of a key in the pending partition's range gets the same
# HINT, and one next to it gets a window cut around the pending bounds.
$sql->(q{SELECT partheal_manage('nodef', interval '1 month', premake => 0)});
($ret, $out, $err) = $node->psql('postgres', q{SELECT partheal_append('nodef', '{"at": "2026-01-10"}')},
  extra_params => ['-v', 'VERBOSITY=verbose']);
like($err, qr/ERROR:  42P17: .*it would overlap partition "nodef_p20260101" of "nodef", which is being detached/,
  'a heal into the range of a pending detach names it');
like($err, qr/HINT:  Finish it with ALTER TABLE public\.nodef DETACH PARTITION public\.nodef_p20260101 FINALIZE, and the next append heals the key/,
  'with how to finish it');
is($sql->(q{SELECT count(*) FROM nodef}), '0', 'and nothing was inserted');
$sql->(q{SELECT partheal_unmanage('nodef')});
$sql->(q{ALTER TABLE nodef DETACH PARTITION nodef_p20260101 FINALIZE});
is($sql->(q{SELECT outcome FROM partheal_attach_window('nodef', '2026-01-01', '2026-02-01', 'nodef_jan')}),
  'attached', 'finalized, the window attaches');

# pg_dump and restore keep the attached windows, and the functions.
my $file = "${PostgreSQL::Test::Utils::tmp_check}/attach_dump.sql";
$node->command_ok(['pg_dump', '-f', $file, '-d', $node->connstr('old')], 'pg_dump runs');
$sql->('CREATE DATABASE restored');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $file, '-d',
    $node->connstr('restored')], 'the dump restores');
is($node->safe_psql('restored', q{SELECT tableoid::regclass, at FROM t}), 't_p20260301|2026-03-03',
  'the attached window and its row are restored');
$node->safe_psql('restored', q{INSERT INTO t VALUES ('2026-05-05')});
is($node->safe_psql('restored', q{SELECT outcome, rows_moved FROM partheal_attach_window('t', '2026-05-01', '2026-06-01')}),
  'attached|1', 'and the restored database attaches the next window');

$node->stop;
done_testing();
