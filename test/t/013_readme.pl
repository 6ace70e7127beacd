# The README's quick start, run as it is written: every SQL block under
# "## Quick start", in order, on a fresh cluster, and each output it shows
# in "-- " comment lines compared with what psql prints. Then what its prose
# promises: the plain INSERT's error with the gate off, EXPLAIN's line, the
# PHL01 and PHL02 lines, and the
# partitions create-ahead makes once it is turned on.
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

# Each block is statements, each ending in ";", some followed by the output
# the README shows for it as "-- " lines: psql's aligned output, verbatim.
my @steps;
for my $block (@blocks) {
  my ($sql, @want) = ('');
  for my $line (split /\n/, $block) {
    if ($line =~ /^-- ?(.*)$/ && $sql eq '') { push @{ $steps[-1]{want} }, $1; next; }
    next if $line =~ /^--/ || ($sql eq '' && $line !~ /\S/);
    $sql .= "$line\n";
    if ($line =~ /;\s*(--.*)?$/) { push @steps, { sql => $sql, want => [] }; $sql = ''; }
  }
}
cmp_ok(scalar @steps, '>=', 8, 'its statements were found');
my $plain_insert_checked = 0;
for my $step (@steps) {
  # Before the first plain INSERT: the README says that with
  # partheal.heal_inserts off it fails as without partheal (with an id of
  # its own: a drawn one would be used up), and EXPLAIN shows the gate.
  if (!$plain_insert_checked && $step->{sql} =~ /^INSERT INTO message_log/) {
    my ($rc, $out, $err) = $node->psql('postgres',
      q{SET partheal.heal_inserts = off; INSERT INTO message_log (id, topic) VALUES (100, 'plain')});
    like($err, qr/no partition of relation "message_log" found for row/,
      'with partheal.heal_inserts off, a plain INSERT past the last partition fails as the README says');
    like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) INSERT INTO message_log (topic) VALUES ('x')}),
      qr/^Insert on message_log\n  ->  Custom Scan \(PartHealGate\)$/, 'EXPLAIN shows the gate under the INSERT, as one line');
    $plain_insert_checked = 1;
  }
  my $got = $node->safe_psql('postgres', $step->{sql},
    extra_params => ['-P', 'format=aligned', '-P', 'tuples_only=off', '-P', 'footer=off']);
  my @want = @{ $step->{want} };
  next unless @want;
  my @got = split /\n/, $got;
  s/\s+$// for @got, @want;
  my ($first) = grep { /\S/ } split /\n/, $step->{sql};
  is(join("\n", @got), join("\n", @want), "the README's output of: $first");
}

my $log = slurp_file($node->logfile);
ok($plain_insert_checked, 'the quick start has a plain INSERT');
like($log, qr/PHL01 heal: no partition of "public\.message_log" for id 100 .*; healed for a plain INSERT/,
  'the server log has the PHL01 line of the INSERT that healed');
like($log, qr/PHL02 created partition "public\.message_log_p100" FROM \(100\) TO \(200\)/,
  'and the PHL02 line of the partition the worker created');

# Create-ahead is on after the last block: the call made premake (4)
# partitions ahead of the position before it returned, [200, 300) to
# [500, 600); ids reaching 180, the mark, make the worker keep one more.
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname IN
  ('message_log_p200', 'message_log_p300', 'message_log_p400', 'message_log_p500')}),
  '4', 'turning create-ahead on made the premake partitions ahead before the call returned');
$node->safe_psql('postgres', q{
  SELECT partheal_append('message_log', '{"topic": "x"}') FROM generate_series(1, 80);
});
ok($node->poll_query_until('postgres',
  q{SELECT count(*) = 1 FROM pg_class WHERE relname = 'message_log_p600'}),
  'once ids pass the 80% mark, the worker makes the next partition, [600, 700)');

# Every column of every view of the extension, and every output column of
# its functions, is in docs/reference.md's signatures, and what it means in
# backquotes in reference.md, operations.md or time-keys.md (issue 35: retention_ids was in neither).
# The internal functions behind the view are left out.
my $docs = "$FindBin::Bin/../../docs";
my $reference = slurp_file("$docs/reference.md");
my $meanings = join('', map { slurp_file("$docs/$_") } qw(reference.md operations.md time-keys.md));
my ($internal) = $reference =~ /^### Internal objects\n(.*?)^## /ms;
my @columns = split /\n/, $node->safe_psql('postgres', q{
  SELECT c.relname || '.' || a.attname
    FROM pg_depend d JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND c.relkind = 'v'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'partheal')
  UNION
  SELECT p.proname || '().' || u.name
    FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid AND d.classid = 'pg_proc'::regclass,
         unnest(p.proargnames, p.proargmodes) AS u(name, mode)
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND u.mode IN ('o', 't')
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'partheal')
   ORDER BY 1});
@columns = grep { my ($object) = /^(\w+)/; index($internal, "`$object(") < 0 } @columns;
cmp_ok(scalar @columns, '>', 30, 'the columns of the view and the functions were found');
is(join(', ', grep { my ($col) = /\.(\w+)$/; $reference !~ /\b$col\b/ } @columns), '',
  'every column of a view or function result is in docs/reference.md');
is(join(', ', grep { my ($col) = /\.(\w+)$/; index($meanings, "`$col`") < 0 } @columns), '',
  'and what each means in docs/operations.md or docs/time-keys.md');

done_testing();
