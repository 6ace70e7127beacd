# The README's quick start, run as it is written: every SQL block under
# "## Quick start", in order, on a fresh cluster, and each output it shows
# in "-- " comment lines compared with what psql prints. Then what its prose
# promises: the plain INSERT's error, the PHL01 and PHL02 lines, and the
# partition create-ahead makes once it is turned on.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use PostgreSQL::Test::Utils;
use Test::More;

my $readme = slurp_file("$FindBin::Bin/../../README.md");
my ($quick) = $readme =~ /^## Quick start\n(.*?)^## /ms;
ok($quick, 'the README has a quick start');
my @blocks = $quick =~ /^```sql\n(.*?)^```/msg;
cmp_ok(scalar @blocks, '>=', 5, 'its SQL blocks were found');

my $node = PartHeal::new_node('readme');
my $plain_insert_checked = 0;
for my $block (@blocks) {
  my (@sql, @want);
  for my $line (split /\n/, $block) {
    if ($line =~ /^-- ?(.*)$/) { push @want, $1; }
    else { push @sql, $line; }
  }
  my $sql = join("\n", @sql);
  # Before the first append: the README says a plain INSERT fails now.
  if (!$plain_insert_checked && $sql =~ /partheal_append/) {
    my ($rc, $out, $err) = $node->psql('postgres',
      q{INSERT INTO message_log (topic) VALUES ('plain')});
    like($err, qr/no partition of relation "message_log" found for row/,
      'a plain INSERT past the last partition fails as the README says');
    $plain_insert_checked = 1;
  }
  # Aligned output with headers, as the README shows it.
  my $got = $node->safe_psql('postgres', $sql,
    extra_params => ['-P', 'format=aligned', '-P', 'tuples_only=off', '-P', 'footer=off']);
  next unless @want;
  # The README shows the result of the block's last statement.
  my @got = split /\n/, $got;
  my @tail = @got[-scalar(@want) .. -1];
  s/\s+$// for @tail, @want;
  is(join("\n", @tail), join("\n", @want), "README output: " . (grep { /\S/ } @sql)[-1]);
}

my $log = slurp_file($node->logfile);
like($log, qr/PHL01 heal: no partition of "public\.message_log" for id 100/,
  'the server log has the PHL01 line of the append that healed');
like($log, qr/PHL02 created partition "public\.message_log_p100" FROM \(100\) TO \(200\)/,
  'and the PHL02 line of the partition the worker created');

# Create-ahead is on after the last block: ids reaching 180 make [200, 300).
$node->safe_psql('postgres', q{
  SELECT partheal_append('message_log', '{"topic": "x"}') FROM generate_series(1, 80);
});
ok($node->poll_query_until('postgres',
  q{SELECT count(*) = 1 FROM pg_class WHERE relname = 'message_log_p200'}),
  'once create-ahead is on, the worker makes the next partition at the 80% mark');

done_testing();
