# Memory held by a session: a churn of managed tables leaves no cache behind,
# and an error re-raised by a plpgsql handler still names where PostgreSQL
# raised it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PartHeal::new_node('memory');
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE keep (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE keep_p0 PARTITION OF keep FOR VALUES FROM (0) TO (100000);
  SELECT partheal_manage('keep', 100000, NULL);
});

# One session registers, appends to and drops $n tables; another does the same
# with plain INSERTs. The RSS growth of each is measured after a warm-up.
# Under valgrind RSS means nothing and a long churn is slow: a short one
# still checks that the caches let go.
my $n = $ENV{PARTHEAL_VALGRIND} ? 50 : 1000;
my $rss = q{SELECT 'rss=' || (regexp_match(pg_read_file('/proc/self/status'), 'VmRSS:\s+(\d+)'))[1];};
sub churn {
  my ($managed, $from, $to) = @_;
  my $sql = '';
  for my $i ($from .. $to) {
    $sql .= "CREATE TABLE c$i (id bigserial, v int) PARTITION BY RANGE (id);\n"
      . "CREATE TABLE c${i}_p0 PARTITION OF c$i FOR VALUES FROM (0) TO (100);\n";
    $sql .= $managed
      ? "SELECT partheal_manage('c$i', 100, NULL);\nSELECT partheal_append('c$i', '[{\"v\": 1}, {\"v\": 2}]');\n"
        . "SELECT partheal_append('c$i', '{\"v\": 3}');\n"
      : "INSERT INTO c$i (v) VALUES (1), (2);\nINSERT INTO c$i (v) VALUES (3);\n";
    $sql .= "DROP TABLE c$i;\n";
  }
  return $sql;
}
my %growth;
for my $managed (1, 0) {
  my $script = churn($managed, 1, 100) . $rss . churn($managed, 101, 100 + $n) . $rss
    . q{SELECT partheal_append('keep', '{"v": 1}');}
    . q{SELECT 'targets=' || count(*) FROM pg_backend_memory_contexts WHERE name = 'partheal append target';};
  my $out = $node->safe_psql('postgres', $script);
  my @rss = $out =~ /rss=(\d+)/g;
  $growth{$managed} = $rss[1] - $rss[0];
  note(($managed ? 'partheal_append' : 'plain INSERT')
    . ": RSS $rss[0] kB after 100 tables, $rss[1] kB after $n more");
  if ($managed) {
    my ($targets) = $out =~ /targets=(\d+)/;
    is($targets, 1, 'after the churn the session keeps one append target: the live table\'s');
  }
}
cmp_ok($ENV{PARTHEAL_VALGRIND} ? 0 : $growth{1}, '<=', $ENV{PARTHEAL_VALGRIND} ? 0 : $growth{0} + 1024,
  "a churn of $n managed tables grows the session no more than plain INSERT does, within 1 MB "
  . "(partheal $growth{1} kB, plain $growth{0} kB)");

# A plpgsql handler that re-raises sends the error after the subtransaction
# that held it is gone; its LOCATION must still name PostgreSQL's function.
$node->safe_psql('postgres', q{
  CREATE FUNCTION reraises() RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM partheal_append('keep', '{"v": "not a number"}');
  EXCEPTION WHEN others THEN
    PERFORM repeat('x', 100000) FROM generate_series(1, 10);
    RAISE;
  END $$;
});
my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT reraises();");
like($stderr, qr/ERROR:  22P02: invalid input syntax for type integer: "not a number"/,
  'the re-raised error keeps its SQLSTATE and message');
like($stderr, qr/\nLOCATION:  pg_strtoint32(?:_safe)?, numutils\.c:\d+\s*$/,
  'and its LOCATION names the PostgreSQL function and file that raised it') or diag($stderr);
my $contexts = () = $stderr =~ /PL\/pgSQL function reraises\(\) line/g;
is($contexts, 1, 'each CONTEXT line once') or diag($stderr);

$node->stop;
done_testing();
