# The insert gate (issue 37) where only a cluster shows it: plain INSERTs
# racing through 10-id partitions with create-ahead off, on every append
# path at once; a heal that times out and a worker killed while a plain
# INSERT waits for its heal (partheal's clear error, nothing half-made, the
# INSERT lands when run again); no relcache reference leaked and no memory
# kept by a session whose INSERTs heal over and over.
# What differs between majors: make test runs it on 17 too.
# TAP majors: every
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;

my $valgrind = $ENV{PARTHEAL_VALGRIND};
my $node = PartHeal::new_node('gate', conf => q{
restart_after_crash = on
partheal.max_ahead_partitions = 1
});
$node->safe_psql('postgres', q{CREATE EXTENSION partheal;});
sub sql { my ($q) = @_; return $node->safe_psql('postgres', $q); }
sub sqlstate {
  my ($err) = @_;
  return $err =~ /(?:ERROR|FATAL):  ([0-9A-Z]{5}): / ? $1 : 'none';
}
my $worker_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND datname = 'postgres'};
# Tables named like a partition of $parent that are no partition of it: what
# a heal cut short would leave behind.
sub orphans {
  my ($parent) = @_;
  return sql(qq{SELECT count(*) FROM pg_class c WHERE c.relname LIKE '${parent}_p%' AND c.relkind = 'r'
                   AND NOT EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid)});
}

###########################################################################
# 1. Plain INSERT writers racing through 10-id partitions, create-ahead off,
# beside partheal_append: each round a single-row VALUES, a 15-row
# INSERT ... SELECT (it straddles a boundary or two), an append, and a
# rolled-back INSERT. Every committed row is there once; no rolled-back row
# is; no statement failed.
{
  sql(q{CREATE TABLE r (id bigserial, v int) PARTITION BY RANGE (id);
        SELECT partheal_manage('r', 10, NULL, premake => 0);});
  my @round = (
    q{INSERT INTO r (v) VALUES (1);},
    q{INSERT INTO r (v) SELECT 2 FROM generate_series(1, 15);},
    q{SELECT partheal_append('r', '{"v": 3}');},
    q{BEGIN; INSERT INTO r (v) SELECT -1 FROM generate_series(1, 3); ROLLBACK;},
  );
  my ($rounds, $failed) = (0, 0);
  for my $phase ([4, $valgrind ? 3 : 5], [8, $valgrind ? 3 : 5]) {
    my ($clients, $seconds) = @$phase;
    my $w = PartHeal::start_writers($node, $clients, $seconds, @round);
    my ($ran, $bad, @lines) = PartHeal::finish_writers($w);
    is($bad, 0, "$clients clients: no statement failed") or diag(join("\n", @lines));
    $rounds += $ran;
    $failed += $bad;
  }
  my $got = sql(q{SELECT count(*) FILTER (WHERE v = 1) || ' ' || count(*) FILTER (WHERE v = 2) || ' '
                     || count(*) FILTER (WHERE v = 3) || ' ' || count(*) FILTER (WHERE v = -1)
                     || ' ' || (count(*) = count(DISTINCT id))::int FROM r});
  is($got, join(' ', $rounds, 15 * $rounds, $rounds, 0, 1),
    "every committed row once ($rounds rounds), no rolled-back row");
  my ($partitions, $heals) = split /\|/, sql(q{SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'r'::regclass),
      insert_heals FROM partheal_stats WHERE parent = 'r'::regclass});
  cmp_ok($heals, '>', 0, "plain INSERTs healed ($heals heals, $partitions partitions)");
  is(sql(q{SELECT count(*) FROM (SELECT id / 10 AS n, tableoid FROM r GROUP BY 1, 2) p
            JOIN pg_class c ON c.oid = p.tableoid WHERE c.relname <> 'r_p' || (p.n * 10)}), '0',
    'each row is in the partition named for its id');
  is(orphans('r'), '0', 'no half-made partition');
}

###########################################################################
# 2. A heal that times out, then a worker killed (terminated, then SIGKILL)
# while a plain INSERT waits for its heal. The worker's ATTACH waits on a
# lock another session holds; ddl_lock_timeout is long, so the INSERT's own
# wait is what ends.
sql(q{ALTER SYSTEM SET partheal.ddl_lock_timeout = '60s'; SELECT pg_reload_conf()});
sql(q{CREATE TABLE k (id bigserial, v int) PARTITION BY RANGE (id);
      SELECT partheal_manage('k', 10, NULL, premake => 0);
      INSERT INTO k (v) VALUES (1);});
my $blocked = sub {    # the worker, inside its DDL, waiting on the parent's lock
  $node->poll_query_until('postgres', q{
    SELECT count(*) = 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid AND NOT l.granted
     WHERE a.backend_type = 'partheal worker' AND l.relation = 'k'::regclass});
};
{
  my $holder = $node->background_psql('postgres');
  $holder->query_safe('BEGIN; LOCK TABLE k IN SHARE UPDATE EXCLUSIVE MODE');
  my ($r, $out, $err) = $node->psql('postgres', q{SET partheal.heal_wait_timeout = '300ms';
      INSERT INTO k (id, v) VALUES (15, 2) RETURNING id;}, extra_params => ['-v', 'VERBOSITY=verbose']);
  is(sqlstate($err), 'PH002', 'a heal that outlasts partheal.heal_wait_timeout: PH002') or diag($err);
  like($err, qr/ERROR:  PH002: .*"k"/, 'its message names the table');
  $holder->query_safe('COMMIT');
  $holder->quit;
  is(sql('SELECT count(*) FROM k WHERE id = 15'), '0', 'the row is not there');
  # The worker's creation, let go, completes; the INSERT run again lands.
  is(sql('INSERT INTO k (id, v) VALUES (15, 2) RETURNING tableoid::regclass'), 'k_p10',
    'run again, the INSERT lands in the partition');
  is(orphans('k'), '0', 'nothing half-made');
}
for my $how ('terminate', 'kill') {
  my $id = $how eq 'terminate' ? 25 : 45;
  my $holder = $node->background_psql('postgres');
  $holder->query_safe('BEGIN; LOCK TABLE k IN SHARE UPDATE EXCLUSIVE MODE');
  my ($out, $err) = ('', '');
  my $insert = IPC::Run::start(['psql', '-X', '-q', '-A', '-t', '-v', 'VERBOSITY=verbose',
      '-c', q{SET partheal.heal_wait_timeout = '20s'},
      '-c', qq{INSERT INTO k (id, v) VALUES ($id, 3) RETURNING id}, '-d', $node->connstr('postgres')],
    '>', \$out, '2>', \$err, IPC::Run::timeout(90));
  ok($blocked->(), "$how: the worker's ATTACH waits on the lock while the INSERT waits for it");
  my $victim = sql($worker_q);
  my $offset = -s $node->logfile;
  if ($how eq 'terminate') {
    sql("SELECT pg_terminate_backend($victim)");
    $node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $victim")
      or die;
    $holder->query_safe('COMMIT');
    $holder->quit;
  } else {
    kill 'KILL', $victim;
    PartHeal::back_after_crash($node, $offset) or die 'the server did not come back';
    eval { $holder->quit; 1 };
  }
  my $finished = eval { $insert->finish; 1 };
  $insert->kill_kill unless $finished;
  ok($finished, "$how: the waiting INSERT returned");
  chomp $out;
  if ($finished && $insert->result(0) == 0 && $out eq $id) {
    pass("$how: the INSERT landed once the worker came back");
  } else {
    unlike($err, qr/XX000|could not open relation/, "$how: a clean error, not an internal one") or diag($err);
    like($err, qr/(?:ERROR|FATAL):  [0-9A-Z]{5}: |server closed the connection unexpectedly/,
      "$how: an error a client can act on") or diag($err);
    is(sql("INSERT INTO k (id, v) VALUES ($id, 3) RETURNING tableoid::regclass"), 'k_p' . ($id - 5),
      "$how: run again, the INSERT lands in its partition");
  }
  is(sql("SELECT count(*) FROM k WHERE id = $id"), '1', "$how: the row is there once");
  is(orphans('k'), '0', "$how: nothing half-made");
}
sql(q{ALTER SYSTEM RESET partheal.ddl_lock_timeout; SELECT pg_reload_conf()});

###########################################################################
# 3. A session whose INSERTs heal over and over keeps no more memory than a
# session of plain PostgreSQL whose INSERTs touch as many partitions made
# beforehand (PostgreSQL keeps a relcache entry for every relation a session
# opens), and leaks no relcache reference (PostgreSQL warns of one at
# commit). Memory is the backend's own contexts, not RSS, which grows with
# the shared buffers a session touches.
{
  my $n = $valgrind ? 20 : 300;
  sql(q{CREATE TABLE m (id bigserial, v int) PARTITION BY RANGE (id);
        SELECT partheal_manage('m', 10, NULL, premake => 0);
        CREATE TABLE plain_m (id bigserial, v int) PARTITION BY RANGE (id);});
  sql(qq{DO \$\$ BEGIN FOR i IN 0..@{[$n + 20]} LOOP
           EXECUTE format('CREATE TABLE plain_m_p%s PARTITION OF plain_m FOR VALUES FROM (%s) TO (%s)',
                          i * 10, i * 10, i * 10 + 10);
         END LOOP; END \$\$});
  my $mem = q{SELECT 'mem=' || sum(total_bytes) FROM pg_backend_memory_contexts;};
  # Statement k writes ids 10k+5 to 10k+14: it needs partition 10k+10,
  # which the one before it did not.
  my $inserts = sub {
    my ($table, $from, $count) = @_;
    return join('', map { my $id = 10 * ($from + $_) + 5;
      "INSERT INTO $table (id, v) SELECT $id + g, 1 FROM generate_series(0, 9) g;\n" } 0 .. $count - 1);
  };
  my %growth;
  for my $table ('m', 'plain_m') {
    my $offset = -s $node->logfile;
    my ($r, $out, $err) = $node->psql('postgres',
      $inserts->($table, 0, 20) . $mem . $inserts->($table, 20, $n) . $mem);
    is($r, 0, "$table: $n INSERTs in one session ran") or diag($err);
    unlike($err . substr(slurp_file($node->logfile), $offset), qr/leak/i, "$table: no leak warning");
    my @mem = $out =~ /mem=(\d+)/g;
    $growth{$table} = int(($mem[1] - $mem[0]) / 1024);
  }
  cmp_ok($growth{m}, '<=', $growth{plain_m} + 256,
    "$n INSERTs that each healed a partition grew the session no more than plain PostgreSQL's "
    . "INSERTs into as many partitions made beforehand, within 256 kB (gate $growth{m} kB, "
    . "plain $growth{plain_m} kB)");
  is(sql(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'm'::regclass}), $n + 21,
    'every partition they needed was made');
}

$node->stop;
done_testing();
