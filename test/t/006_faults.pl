# The fault matrix: for each fault, every row the application
# was told was committed is in the table, no id is there twice, and the
# table takes a new partition again with no one fixing anything.
#
# The application's word is a ledger: a client writes an id into the
# plain table "ledger" only after the transaction of the partheal_append
# that returned it has committed.
# Its assertions time the server: make test runs it with no other TAP file beside it.
# TAP lane: alone
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'under valgrind: its timings and kills need native speed' if $ENV{PARTHEAL_VALGRIND};

my $started = time;
my $tmp = $PostgreSQL::Test::Utils::tmp_check;

# The test framework turns crash restarts off; the SIGKILL fault needs them.
# The SQLSTATE in every log line lets the DROP TABLE fault count XX000s.
my $node = PartHeal::new_node('faults', conf => qq{
restart_after_crash = on
log_line_prefix = '%m [%p] %e %q%a '
});
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE ledger (tab text NOT NULL, id bigint NOT NULL);
});

sub sql { my ($n, $db, $q) = @_; return $n->safe_psql($db, $q); }

# Creates a managed table "$name (id bigserial, v int)".
sub make_table {
  my ($n, $db, $name, $size, $mark) = @_;
  $mark = defined $mark ? $mark : 'NULL';
  sql($n, $db, qq{
    CREATE TABLE $name (id bigserial, v int) PARTITION BY RANGE (id);
    SELECT partheal_manage('$name', $size, $mark);
  });
}

sub write_script {
  my ($file, $text) = @_;
  open(my $fh, '>', "$tmp/$file") or die "$file: $!";
  print $fh $text;
  close $fh;
  return "$tmp/$file";
}

# A pgbench script: append one row, then, the append committed, write its
# id into the ledger.
sub ledger_script {
  my ($table) = @_;
  return write_script("$table.sql", qq{SELECT partheal_append('$table', '{"v": 1}') AS id \\gset
INSERT INTO ledger VALUES ('$table', :id);
});
}

# One append through psql, verbose errors so that the SQLSTATE shows.
# Returns (exit code, stdout, stderr, seconds, timed out).
sub append_psql {
  my ($n, $db, $table, $json, %opts) = @_;
  my ($out, $err) = ('', '');
  my $t0 = time;
  my $timer = IPC::Run::timeout($opts{timeout} || 60);
  my @set = map { ('-c', "SET $_") } @{ $opts{set} || [] };
  my $h = IPC::Run::start(['psql', '-X', '-q', '-A', '-t', '-v', 'VERBOSITY=verbose',
      '-v', 'ON_ERROR_STOP=1', @set, '-c', "SELECT partheal_append('$table', '$json')",
      '-d', $n->connstr($db)], '>', \$out, '2>', \$err, $timer);
  return $h if $opts{background};
  my $timed_out = 0;
  eval { $h->finish; 1 } or do { $timed_out = 1; $h->kill_kill; };
  chomp $out;
  return ($timed_out ? -1 : $h->result(0), $out, $err, time - $t0, $timed_out);
}

# The SQLSTATE of the first ERROR line of a verbose psql's stderr.
sub sqlstate {
  my ($err) = @_;
  return $err =~ /(?:ERROR|FATAL|WARNING):  ([0-9A-Z]{5}): / ? $1 : 'none';
}

# Half-made partitions: relations named like the table's partitions that
# are not attached to anything.
sub orphans {
  my ($n, $db, $table) = @_;
  return sql($n, $db, qq{
    SELECT coalesce(string_agg(c.relname, ', ' ORDER BY c.relname), '') FROM pg_class c
     WHERE c.relname LIKE '${table}\\_p%' AND c.relkind IN ('r', 'p')
       AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)});
}

sub partitions {
  my ($n, $db, $table) = @_;
  return sql($n, $db, "SELECT count(*) FROM pg_inherits WHERE inhparent = '$table'::regclass");
}

# (a) and (b), and no half-made partition.
sub rows_intact {
  my ($n, $db, $table, $label) = @_;
  my ($ledger, $missing, $ledger_dups) = split /\|/, sql($n, $db, qq{
    SELECT count(*),
           count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM $table t WHERE t.id = l.id)),
           count(*) - count(DISTINCT id)
      FROM ledger l WHERE tab = '$table'});
  my ($rows, $dups) = split /\|/, sql($n, $db, "SELECT count(*), count(*) - count(DISTINCT id) FROM $table");
  ok($ledger > 0, "$label: the ledger holds committed appends ($ledger)");
  is($missing, 0, "$label: every id the application was told was committed is in the table");
  is($ledger_dups, 0, "$label: no id was returned twice");
  is($dups, 0, "$label: no id is in the table twice");
  is(orphans($n, $db, $table), '', "$label: no half-made ${table}_p<n> left unattached");
  return ($ledger, $rows);
}

# (c): an append into a partition that does not exist yet heals it.
sub writable_again {
  my ($n, $db, $table, $size, $label) = @_;
  my $max = sql($n, $db, "SELECT coalesce(max(id), 0) FROM $table");
  my $lower = (int($max / $size) + 100) * $size;
  my $id = $lower + 1;
  my $name = "${table}_p$lower";
  is(sql($n, $db, "SELECT to_regclass('$name') IS NULL"), 't', "$label: $name does not exist yet");
  my ($ret, $out, $err, $secs) = append_psql($n, $db, $table, qq({"id": $id}));
  is("$ret|$out", "0|$id", "$label: a later append into a new partition succeeds, no human involved")
    or diag($err);
  sql($n, $db, "INSERT INTO ledger VALUES ('$table', $id)") if $ret == 0 && $out eq $id;
  is(sql($n, $db, "SELECT tableoid::regclass FROM $table WHERE id = $id"), $name,
    "$label: the row is in the partition the heal made");
  # The worker makes partitions ahead of the rows, and may make one more
  # meanwhile; between the fiftieth above the rows and the new row, the heal
  # made its one and no run.
  my $from = (int($max / $size) + 50) * $size;
  is(sql($n, $db, qq{
    SELECT string_agg(c.relname, ',') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = '$table'::regclass AND c.relname ~ '^${table}_p[0-9]+\$'
       AND substring(c.relname from '[0-9]+\$')::numeric BETWEEN $from AND $lower}),
    $name, "$label: one partition more, the one that covers the row");
}

sub stats {
  my ($n, $db, $table) = @_;
  return sql($n, $db, qq{SELECT format('appends %s, heals %s, PH001 %s, ahead requested %s, created %s, failed %s',
      appends, heals, exhaustions, ahead_requested, ahead_created, ahead_failed)
    FROM partheal_stats WHERE parent = '$table'::regclass});
}

my $worker_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'postgres'};

###########################################################################
# 1. Eight appenders through many boundaries, heals and create-ahead racing.
for my $case (['f1_tiny', 10, 80, 1000], ['f1_big', 1000, 80, 2500]) {
  my ($table, $size, $mark, $per_client) = @$case;
  my $label = "1 ($table, size $size)";
  make_table($node, 'postgres', $table, $size, $mark);
  my $total = 8 * $per_client;
  my ($out, $err) = ('', '');
  my $t0 = time;
  my $ok = IPC::Run::run(['pgbench', '-n', '-c', '8', '-j', '2', '-t', $per_client,
      '-f', ledger_script($table), $node->connstr('postgres')], '>', \$out, '2>', \$err,
    IPC::Run::timeout(120));
  my $secs = time - $t0;
  ok($ok, "$label: pgbench exits cleanly") or diag($err);
  like($out, qr/actually processed: $total\/$total/, "$label: all $total transactions processed");
  like($out, qr/number of failed transactions: 0 /, "$label: no failed transaction");
  my @errors = grep { /ERROR/ } split /\n/, $err;
  is(scalar(@errors), 0, "$label: no client got an error")
    or diag(join("\n", @errors[0 .. ($#errors < 4 ? $#errors : 4)]));
  my ($ledger, $rows) = rows_intact($node, 'postgres', $table, $label);
  is($ledger, $total, "$label: the ledger has all $total appends");
  note(sprintf('%s: %d rows, %d partitions in %.1f s; %s', $label, $rows,
      partitions($node, 'postgres', $table), $secs, stats($node, 'postgres', $table)));
  writable_again($node, 'postgres', $table, $size, $label);
}

###########################################################################
# 2. The caller rolls back after a heal: the partition stays and is used.
{
  my $label = '2 (rollback)';
  make_table($node, 'postgres', 'f2', 10);
  my ($ret, $out, $err) = $node->psql('postgres', q{
    BEGIN;
    SELECT partheal_append('f2', '{"v": 1}');
    ROLLBACK;});
  is("$ret|$out", '0|1', "$label: the append inside the transaction healed and returned id 1") or diag($err);
  is(sql($node, 'postgres', q{SELECT string_agg(c.relname, ',') FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'f2'::regclass}),
    'f2_p0', "$label: after ROLLBACK the partition stays attached");
  is(sql($node, 'postgres', 'SELECT count(*) FROM f2'), '0', "$label: the rolled back row is gone");
  for (1 .. 3) {
    my $id = sql($node, 'postgres', q{SELECT partheal_append('f2', '{"v": 2}')});
    sql($node, 'postgres', "INSERT INTO ledger VALUES ('f2', $id)");
  }
  is(sql($node, 'postgres', 'SELECT string_agg(DISTINCT tableoid::regclass::text, \',\') FROM f2'),
    'f2_p0', "$label: later appends land in it");
  is(sql($node, 'postgres', q{SELECT heals FROM partheal_stats WHERE parent = 'f2'::regclass}),
    '1', "$label: without another heal");
  rows_intact($node, 'postgres', 'f2', $label);
  writable_again($node, 'postgres', 'f2', 10, $label);
}

###########################################################################
# 6. A lock held past partheal.ddl_lock_timeout: a fast, documented error,
# then a heal once the lock is gone.
{
  my $label = '6 (lock past ddl_lock_timeout)';
  sql($node, 'postgres', q{ALTER SYSTEM SET partheal.ddl_lock_timeout = '200ms'; SELECT pg_reload_conf()});
  make_table($node, 'postgres', 'f6', 10);
  # Ids 1 to 9 fill the partition [0, 10); the next id needs a heal.
  for (1 .. 9) {
    my $id = sql($node, 'postgres', q{SELECT partheal_append('f6', '{"v": 1}')});
    sql($node, 'postgres', "INSERT INTO ledger VALUES ('f6', $id)");
  }
  my $holder = $node->background_psql('postgres');
  $holder->query_safe('BEGIN; LOCK TABLE f6 IN SHARE UPDATE EXCLUSIVE MODE');
  my ($ret, $out, $err, $secs, $timed_out) = append_psql($node, 'postgres', 'f6', '{"v": 1}');
  ok(!$timed_out && $ret != 0, "$label: the append needing a heal fails");
  is(sqlstate($err), '55P03', "$label: with SQLSTATE 55P03");
  like($err, qr/ERROR:  55P03: could not create the partition of "f6" for id 10: /,
    "$label: the message is prefixed 'could not create the partition of' and names the id");
  ok($secs < 5, sprintf('%s: fast (%.2f s)', $label, $secs));
  note(sprintf('%s: failed in %.2f s: %s', $label, $secs, (split /\n/, $err)[0]));
  $holder->query_safe('COMMIT');
  $holder->quit;
  my $id = sql($node, 'postgres', q{SELECT partheal_append('f6', '{"v": 1}')});
  sql($node, 'postgres', "INSERT INTO ledger VALUES ('f6', $id)");
  is(sql($node, 'postgres', "SELECT tableoid::regclass FROM f6 WHERE id = $id"), 'f6_p10',
    "$label: once the lock is released the next append heals (id $id)");
  is(sql($node, 'postgres', q{SELECT heals FROM partheal_stats WHERE parent = 'f6'::regclass}), '3',
    "$label: three heals: [0, 10), the failed one, the one after the release");
  rows_intact($node, 'postgres', 'f6', $label);
  writable_again($node, 'postgres', 'f6', 10, $label);
  sql($node, 'postgres', q{ALTER SYSTEM RESET partheal.ddl_lock_timeout; SELECT pg_reload_conf()});
}

###########################################################################
# 3. The worker killed while its DDL waits for a lock and an append waits for
# it: (i) pg_terminate_backend, (ii) SIGKILL, which restarts the server.
{
  sql($node, 'postgres', q{ALTER SYSTEM SET partheal.ddl_lock_timeout = '60s'; SELECT pg_reload_conf()});
  make_table($node, 'postgres', 'f3', 10);
  for (1 .. 5) {
    my $id = sql($node, 'postgres', q{SELECT partheal_append('f3', '{"v": 1}')});
    sql($node, 'postgres', "INSERT INTO ledger VALUES ('f3', $id)");
  }
  my $blocked = sub {    # the worker, inside its DDL, waiting on the parent's lock
    $node->poll_query_until('postgres', q{
      SELECT count(*) = 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
       WHERE a.backend_type = 'partheal worker' AND l.relation = 'f3'::regclass});
  };

  for my $how ('terminate', 'kill') {
    my $label = "3$how (worker killed mid-DDL: " . ($how eq 'terminate' ? 'pg_terminate_backend' : 'SIGKILL') . ')';
    my $id = $how eq 'terminate' ? 25 : 45;
    my $holder = $node->background_psql('postgres');
    $holder->query_safe('BEGIN; LOCK TABLE f3 IN SHARE UPDATE EXCLUSIVE MODE');
    my ($out, $err) = ('', '');
    my $t0 = time;
    my $append = IPC::Run::start(['psql', '-X', '-q', '-A', '-t', '-v', 'VERBOSITY=verbose',
        '-c', q{SET partheal.heal_wait_timeout = '20s'},
        '-c', qq{SELECT partheal_append('f3', '{"id": $id}')}, '-d', $node->connstr('postgres')],
      '>', \$out, '2>', \$err, IPC::Run::timeout(90));
    ok($blocked->(), "$label: the worker's ATTACH waits on the lock while the append waits");
    my $victim = sql($node, 'postgres', $worker_q);
    my $offset = -s $node->logfile;
    if ($how eq 'terminate') {
      sql($node, 'postgres', "SELECT pg_terminate_backend($victim)");
      $node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $victim")
        or die;
      # The waiting append starts another worker, which takes the request again.
      my $again = $blocked->();
      note("$label: a new worker took the request and waits on the lock again: " . ($again ? 'yes' : 'no'));
      $holder->query_safe('COMMIT');
      $holder->quit;
    } else {
      kill 'KILL', $victim;
      PartHeal::back_after_crash($node, $offset) or die 'the server did not come back';
      eval { $holder->quit; 1 };
    }
    my $finished = eval { $append->finish; 1 };
    my $secs = time - $t0;
    $append->kill_kill unless $finished;
    ok($finished, sprintf('%s: the waiting append returned, did not hang (%.1f s)', $label, $secs));
    chomp $out;
    my $outcome;
    if ($finished && $append->result(0) == 0 && $out eq $id) {
      sql($node, 'postgres', "INSERT INTO ledger VALUES ('f3', $id)");
      $outcome = "landed id $id";
    } else {
      my $first = join(' / ', grep { /ERROR|FATAL|WARNING|server closed/ } split /\n/, $err) || $err;
      $outcome = 'failed, SQLSTATE ' . sqlstate($err) . ": $first";
      unlike($err, qr/XX000|could not open relation/, "$label: with a clean error, not an internal one");
      like($err, qr/(?:ERROR|FATAL|WARNING):  [0-9A-Z]{5}: |server closed the connection unexpectedly/,
        "$label: the error is one a client can act on");
      # The half-made partition of the killed DDL must not block its heal.
      my ($r, $o, $e) = append_psql($node, 'postgres', 'f3', qq({"id": $id}));
      is("$r|$o", "0|$id", "$label: the failed append, run again, lands") or diag($e);
      sql($node, 'postgres', "INSERT INTO ledger VALUES ('f3', $id)") if $r == 0 && $o eq $id;
      is(sql($node, 'postgres', "SELECT tableoid::regclass FROM f3 WHERE id = $id"), 'f3_p' . ($id - 5),
        "$label: in the partition the killed worker was making");
    }
    note(sprintf('%s: the waiting append %s after %.1f s', $label, $outcome, $secs));
    rows_intact($node, 'postgres', 'f3', $label);
    writable_again($node, 'postgres', 'f3', 10, $label);
  }
  sql($node, 'postgres', q{ALTER SYSTEM RESET partheal.ddl_lock_timeout; SELECT pg_reload_conf()});
}

###########################################################################
# 4. An immediate shutdown under append traffic, then a start.
{
  my $label = '4 (immediate stop under traffic)';
  make_table($node, 'postgres', 'f4', 10, 80);
  my ($out, $err) = ('', '');
  my $bench = IPC::Run::start(['pgbench', '-n', '-c', '4', '-j', '2', '-T', '60',
      '-f', ledger_script('f4'), $node->connstr('postgres')], '>', \$out, '2>', \$err,
    IPC::Run::timeout(90));
  $node->poll_query_until('postgres', q{SELECT count(*) >= 1500 FROM ledger WHERE tab = 'f4'}) or die;
  $node->stop('immediate');
  my $t0 = time;
  eval { $bench->finish; 1 } or $bench->kill_kill;
  ok(time - $t0 < 30, "$label: the clients saw the server go");
  $node->start;
  my ($ledger, $rows) = rows_intact($node, 'postgres', 'f4', $label);
  note(sprintf('%s: %d appends confirmed in the ledger, %d rows, %d partitions after recovery',
      $label, $ledger, $rows, partitions($node, 'postgres', 'f4')));
  writable_again($node, 'postgres', 'f4', 10, $label);
}

###########################################################################
# 7. DROP TABLE of a managed parent while appends run: once with ordinary
# partitions (the appends are on the fast path when the DROP comes), once
# with tiny ones (appends are waiting on heals when it comes).
for my $case (['f7_big', 1000], ['f7_tiny', 10]) {
  my ($table, $size) = @$case;
  my $label = "7 (DROP TABLE under appends, size $size)";
  make_table($node, 'postgres', $table, $size, 80);
  my ($out, $err) = ('', '');
  my $offset = -s $node->logfile;
  my $bench = IPC::Run::start(['pgbench', '-n', '-c', '6', '-j', '2', '-T', '60',
      '-f', ledger_script($table), $node->connstr('postgres')], '>', \$out, '2>', \$err,
    IPC::Run::timeout(90));
  $node->poll_query_until('postgres', qq{SELECT count(*) >= 1500 FROM ledger WHERE tab = '$table'}) or die;
  # Ledger and table read in one snapshot while the appends go on. It must
  # be REPEATABLE READ: a READ COMMITTED statement is planned under one
  # snapshot and run under a newer one, so it misses the rows of partitions
  # attached in between (PostgreSQL's own behaviour with ATTACH PARTITION).
  my ($ledger_before, $missing_before, $rows_before, $dups_before) = split /\|/, sql($node, 'postgres', qq{
    BEGIN ISOLATION LEVEL REPEATABLE READ;
    SELECT (SELECT count(*) FROM ledger WHERE tab = '$table'),
           (SELECT count(*) FROM ledger l WHERE tab = '$table' AND NOT EXISTS (SELECT 1 FROM $table t WHERE t.id = l.id)),
           count(*), count(*) - count(DISTINCT id) FROM $table;
    COMMIT;});
  my $t0 = time;
  sql($node, 'postgres', "DROP TABLE $table");
  my $drop_secs = time - $t0;
  my $finished = eval { $bench->finish; 1 };
  $bench->kill_kill unless $finished;
  ok($finished, sprintf('%s: every appender ended (%.1f s after the DROP began)', $label, time - $t0));
  my @errors = grep { /ERROR/ } split /\n/, $err;
  my %kinds;
  for (@errors) { (my $k = $_) =~ s/.*ERROR:\s+//; $k =~ s/\d+/N/g; $kinds{$k}++; }
  note(sprintf("%s: the DROP took %.1f s; appenders' errors: %s", $label, $drop_secs,
      join('; ', map { "$kinds{$_} x $_" } sort keys %kinds)));
  my $log = substr(slurp_file($node->logfile), $offset);
  my $xx = () = $log =~ / XX000 [^\n]*ERROR:/g;
  ok(@errors > 0, "$label: the appenders in flight were told");
  unlike($err, qr/could not open relation with OID/,
    "$label: no append got 'could not open relation with OID' (FINDING if this fails: "
    . "partheal_append gets the OID from its regclass argument, queues behind DROP's lock in "
    . "relation_open, and finds the relation gone)");
  is($xx, 0, "$label: no XX000 error in the server log");
  note("$label: before the drop the ledger had $ledger_before ids, the table $rows_before rows ($dups_before duplicates)");
  is($missing_before, 0, "$label: before the drop, every id in the ledger was in the table");
  is($dups_before, 0, "$label: no id twice before the drop");
  # The table is gone; a new table of the same name, and the others, heal.
  is(sql($node, 'postgres', qq{SELECT count(*) FROM partheal_config WHERE parent::text = '$table'}), '0',
    "$label: the registration went with the table");
  is(orphans($node, 'postgres', $table), '', "$label: no half-made ${table}_p<n> left");
  sql($node, 'postgres', qq{DELETE FROM ledger WHERE tab = '$table'});
  make_table($node, 'postgres', $table, $size, 80);
  writable_again($node, 'postgres', $table, $size, "$label, recreated");
  writable_again($node, 'postgres', 'f1_tiny', 10, "$label, another table");
}

$node->stop;

###########################################################################
# 5. max_worker_processes exhausted: PH003 at once, never a hang.
{
  my $label = '5 (worker slots exhausted)';
  # 4 slots: the logical replication launcher, partheal's launcher, and one
  # partheal worker in each of two databases.
  my $small = PartHeal::new_node('slots', conf => "max_worker_processes = 4\n");
  for my $db ('s1', 's2') {
    $small->safe_psql('postgres', "CREATE DATABASE $db");
    $small->safe_psql($db, 'CREATE EXTENSION partheal');
    make_table($small, $db, 't', 10);
    sql($small, $db, q{SELECT partheal_append('t', '{"v": 1}')});
  }
  ok($small->poll_query_until('postgres', q{
      SELECT count(*) = 4 FROM pg_stat_activity
       WHERE backend_type IN ('partheal worker', 'partheal launcher', 'logical replication launcher')}),
    "$label: the four slots are taken");
  $small->safe_psql('postgres', 'CREATE DATABASE s3');
  $small->safe_psql('s3', q{
    CREATE EXTENSION partheal;
    CREATE TABLE ledger (tab text NOT NULL, id bigint NOT NULL);
    CREATE TABLE t (id bigserial, v int) PARTITION BY RANGE (id);
    CREATE TABLE t_p0 PARTITION OF t FOR VALUES FROM (0) TO (10);});
  my ($ret, $out, $err) = $small->psql('s3', q{SELECT partheal_manage('t', 10, NULL)});
  is($ret, 0, "$label: registration works with no slot free") or diag($err);
  for (1 .. 9) {
    my $id = sql($small, 's3', q{SELECT partheal_append('t', '{"v": 1}')});
    sql($small, 's3', "INSERT INTO ledger VALUES ('t', $id)");
  }
  pass("$label: appends into existing partitions need no worker");
  my ($r, $o, $e, $secs, $timed_out) = append_psql($small, 's3', 't', '{"v": 1}', timeout => 30);
  ok(!$timed_out, sprintf('%s: the append needing a heal returned (%.2f s)', $label, $secs));
  ok($secs < 30, "$label: within 30 s");
  isnt($r, 0, "$label: it failed");
  is(sqlstate($e), 'PH003', "$label: with PH003");
  note(sprintf('%s: failed in %.2f s: %s', $label, $secs, join(' / ', grep { /ERROR|DETAIL/ } split /\n/, $e)));
  rows_intact($small, 's3', 't', $label);
  # A slot frees up (the extension leaves s1, whose worker exits for good):
  # the next append heals, nothing done to s3 or its table.
  $small->safe_psql('s1', 'DROP EXTENSION partheal CASCADE');
  ok($small->poll_query_until('postgres', q{
      SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 's1'}),
    "$label: a slot frees up");
  # The launcher retries a database left without a slot every second (README,
  # Capacity); until then an append gets PH003 at once.
  ok($small->poll_query_until('s3', q{
      SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 's3'}),
    "$label: the launcher gives s3 its worker");
  writable_again($small, 's3', 't', 10, $label);
  $small->stop;
}

note(sprintf('006_faults wall time: %.1f s', time - $started));
done_testing();
