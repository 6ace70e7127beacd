# make bench-citus: what one partition costs on a Citus cluster, against the
# shard count, side by side with Citus's own create_time_partitions and with
# a table that is not distributed. Prints a table; asserts nothing (figures
# vary with the machine). Run by test/citus.sh bench (make bench-citus),
# never by make test-citus: it lives beside the other benchmarks.
use strict;
use warnings;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Citus;

my $n = 20;  # partitions per measurement
my ($c, $w1, $w2) = Citus::new_cluster(extra => "partheal.naptime = 200\npartheal.max_ahead_partitions = 64");
my $sql = sub { $c->safe_psql('postgres', shift) };
$sql->('CREATE EXTENSION partheal');

# Milliseconds per partition of $body, which makes $n of them.
my $per = sub {
  my ($body) = @_;
  my $t0 = time;
  $sql->($body);
  return (time - $t0) * 1000 / $n;
};
my $id_table = sub {  # partheal's heal, through partheal_reserve
  my ($name, $shards) = @_;
  $sql->("CREATE TABLE $name (tenant int, id bigserial, body text) PARTITION BY RANGE (id);"
    . ($shards ? "SELECT create_distributed_table('$name', 'tenant', shard_count => $shards);" : '')
    . "SELECT partheal_manage('$name', 100, mark_percent => NULL, premake => 0);");
  return $per->("SELECT partheal_reserve('$name', 100 * $n)");
};
my $time_table = sub {  # partheal's windows at registration (premake), or Citus's
  my ($name, $shards, $citus) = @_;
  $sql->("CREATE TABLE $name (tenant int, at timestamptz NOT NULL) PARTITION BY RANGE (at);"
    . ($shards ? "SELECT create_distributed_table('$name', 'tenant', shard_count => $shards);" : ''));
  return $citus
    ? $per->("SELECT create_time_partitions('$name', interval '1 hour', date_trunc('hour', now()) + interval '$n hours', date_trunc('hour', now()))")
    : $per->("SELECT partheal_manage('$name', interval '1 hour', premake => " . ($n - 1) . ')');
};

my @rows;
my $local = $id_table->('local_ids', 0);
push @rows, ['not distributed', $local, $time_table->('local_times', 0, 0), undef];
for my $shards (4, 8, 16, 32, 64) {
  push @rows, [$shards, $id_table->("ids_$shards", $shards), $time_table->("times_$shards", $shards, 0),
               $time_table->("citus_$shards", $shards, 1)];
}

# PostgreSQL::Test::Utils sends STDOUT to the test's log: the table goes to
# the file test/citus.sh prints.
open(my $out, '>', $ENV{BENCH_OUT} // '/dev/stdout') or die "$ENV{BENCH_OUT}: $!";
select $out;
printf "\nWhat one partition costs on Citus %s (a coordinator and two workers on this machine), %d partitions each\n\n",
  $ENV{CITUS_VERSION} // '?', $n;
print "| shards | partheal heal (id), ms | partitions/s | x a local table | partheal windows (time), ms | Citus create_time_partitions, ms | partheal / Citus |\n";
print "|---|---|---|---|---|---|---|\n";
for (@rows) {
  my ($shards, $ids, $times, $citus) = @$_;
  printf "| %s | %.1f | %.0f | %.1f | %.1f | %s | %s |\n", $shards, $ids, 1000 / $ids, $ids / $local, $times,
    defined $citus ? sprintf('%.1f', $citus) : '-', defined $citus ? sprintf('%.2f', $times / $citus) : '-';
}
close $out;
select STDOUT;
$_->stop for ($c, $w1, $w2);
# PostgreSQL::Test::Utils runs under Test::More, which wants a plan.
Test::More::pass('measured');
Test::More::done_testing();
