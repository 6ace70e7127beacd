# docs/migration.md, run as written: its script turns a plain events table of
# 50,000 rows into monthly partitions while a writer keeps inserting, and no
# write is lost, rejected or duplicated. Then the guide's claims that need a
# failure to show: without ALTER SEQUENCE ... OWNED BY the drop is refused and
# rolled back whole; a row left in DEFAULT stops the drop; a swap that cannot
# have its locks gives up, changes nothing, and a second run completes.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'under valgrind: a live writer needs native speed' if $ENV{PARTHEAL_VALGRIND};

# The guide travels with the tests: test/t/../../docs/migration.md, or under
# PARTHEAL_ROOT when the tests run from a copy without docs/.
my ($guide) = grep { -f $_ } ("$FindBin::Bin/../../docs/migration.md",
  defined $ENV{PARTHEAL_ROOT} ? ("$ENV{PARTHEAL_ROOT}/docs/migration.md") : ());
my ($script) = $guide ? slurp_file($guide)
  =~ /^<!-- migration-script:begin -->\n```sql\n(.*?)^```\n<!-- migration-script:end -->$/ms : ();
unless ($script) {
  fail($guide ? "a ```sql block between the migration-script markers of $guide"
    : 'docs/migration.md next to test/ (the copy must include docs/) or under PARTHEAL_ROOT');
  done_testing();
  exit;
}

my $node = PartHeal::new_node('migration');
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN');

# The guide's starting point, with $rows rows over the twelve months that end
# with this one, oldest first, and ids from the bigserial's sequence.
my $setup = sub {
  my ($db, $rows) = @_;
  $node->safe_psql('postgres', "CREATE DATABASE $db") unless $db eq 'postgres';
  $node->safe_psql($db, qq{
    CREATE TABLE events (
      id         bigserial PRIMARY KEY,
      created_at timestamptz NOT NULL DEFAULT now(),
      kind       text NOT NULL,
      payload    jsonb
    );
    CREATE INDEX events_created_at_idx ON events (created_at);
    GRANT SELECT, INSERT ON events TO app;
    GRANT USAGE ON SEQUENCE events_id_seq TO app;
    INSERT INTO events (created_at, kind, payload)
    SELECT m.lower + (least(m.lower + interval '1 month', now()) - m.lower)
             * ((g / 12)::float8 / ($rows / 12 + 1)),
           'old', jsonb_build_object('g', g)
      FROM generate_series(0, $rows - 1) g,
           LATERAL (SELECT date_trunc('month', now()) - make_interval(months => 11 - g % 12) AS lower) m
     ORDER BY 1;
    ANALYZE events;
  });
  return $node->safe_psql($db, q{SELECT date_trunc('month', now())});
};

my $script_file = "${PostgreSQL::Test::Utils::tmp_check}/migration.sql";
my $write_script = sub {
  open(my $fh, '>', $script_file) or die "$script_file: $!";
  print $fh shift;
  close $fh;
};
# As the guide says to run it.
my $psql_script = sub { ['psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr(shift), '-f', $script_file] };
my $run_script = sub {
  my ($db) = @_;
  my ($out, $err) = ('', '');
  IPC::Run::run($psql_script->($db), '>', \$out, '2>', \$err);
  return ($? >> 8, $out, $err);
};

# -- The migration under a live writer --------------------------------------

my $month = $setup->('postgres', 50000);

# The application: one psql session as app, plain INSERTs back to back, each
# followed by a marker so that a statement's end is seen whether it
# succeeded (an id) or failed (stderr). It writes 20 rows, then as many as it
# can while each of the given scripts runs in turn, then 20 more.
my $under_writer = sub {
  my ($db, @scripts) = @_;
  my ($w_in, $w_out, $w_err) = ('', '', '');
  my $writer = IPC::Run::start(
    [ 'psql', '-XAtq', '-d', $node->connstr($db) . ' user=app' ],
    '<', \$w_in, '>', \$w_out, '2>', \$w_err);
  my $timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
  my (@ids, @results);
  my ($sent, $longest, $during) = (0, 0, 0);
  my $write_one = sub {
    $sent++;
    $w_in .= qq{INSERT INTO events (created_at, kind, payload) VALUES (now(), 'live', '{"w": $sent}') RETURNING id;\n}
      . "\\echo done $sent\n";
    my $t0 = time;
    $timer->start($PostgreSQL::Test::Utils::timeout_default);
    pump_until($writer, $timer, \$w_out, qr/^done $sent\n/m) or die "the writer is stuck at insert $sent";
    my $waited = time - $t0;
    $longest = $waited if $waited > $longest;
    $w_out =~ s/\A(.*?)^done $sent\n//ms or die "unexpected writer output: $w_out";
    push @ids, $1 =~ /^(\d+)$/mg;
  };
  $write_one->() for 1 .. 20;
  my $started = time;
  for my $text (@scripts) {
    $write_script->($text);
    my ($m_out, $m_err) = ('', '');
    my $run = IPC::Run::start($psql_script->($db), '>', \$m_out, '2>', \$m_err);
    for (;;) {
      $write_one->();
      $during++;
      $run->pump_nb;
      last unless $run->pumpable;
      die 'the migration did not end' if time - $started > 600;
    }
    $run->finish;
    push @results, { rc => $run->full_result(0) >> 8, out => $m_out, err => $m_err };
    last if $results[-1]{rc} != 0;
  }
  my $took = time - $started;
  $write_one->() for 1 .. 20;
  $w_in .= "\\q\n";
  $writer->finish;
  return { results => \@results, ids => \@ids, sent => $sent, during => $during,
           longest => $longest, took => $took, writer_err => $w_err };
};

my $run = $under_writer->('postgres', $script);
my ($rc, $m_out, $m_err) = @{$run->{results}[0]}{qw(rc out err)};
my ($took, $during, $longest, $w_err, $sent) = @$run{qw(took during longest writer_err sent)};
my @ids = @{$run->{ids}};

is($rc, 0, 'the guide\'s script runs to the end with ON_ERROR_STOP') or diag($m_err);
unlike($m_err, qr/ERROR|WARNING/, 'and reports no error or warning');
note("migration: $m_out$m_err");
note(sprintf('the script took %.2f s; the writer inserted %d rows meanwhile, its longest wait %d ms',
  $took, $during, $longest * 1000));
cmp_ok($during, '>=', 10, 'the writer was inserting while the script ran');
is($w_err, '', 'the writer got no error');
is(scalar(@ids), $sent, "every one of the writer's $sent inserts returned an id");

my $sql = sub { $node->safe_psql('postgres', shift) };
is($sql->(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM events WHERE kind = 'live'}),
  join(',', sort { $a <=> $b } @ids), 'every row the writer committed is there, once');
is($sql->(q{SELECT format('%s %s %s %s', count(*), count(DISTINCT id), min(id), max(id))
    FROM events WHERE kind = 'old'}),
  '50000 50000 1 50000', 'all 50,000 legacy rows are there, with their ids');
is($sql->(q{SELECT count(*) - count(DISTINCT id) FROM events}), '0', 'no id appears twice');

is($sql->(q{SELECT to_regclass('events_legacy') IS NULL AND NOT EXISTS (
    SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'events'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT')}),
  't', 'the DEFAULT partition is gone');
my $windows = q{
  SELECT c.relname, (regexp_match(pg_get_expr(c.relpartbound, c.oid),
           '^FOR VALUES FROM \(''([^'']+)''\) TO \(''([^'']+)''\)$'))::timestamptz[] AS b
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = 'events'::regclass};
is($sql->(qq{SELECT count(*) FROM ($windows) w
    WHERE b IS NULL OR b[1] <> date_trunc('month', b[1]) OR b[2] <> b[1] + interval '1 month'
       OR relname <> 'events_p' || to_char(b[1], 'YYYYMMDD')}),
  '0', 'every partition is one calendar month, named events_pYYYYMM01');
is($sql->(qq{SELECT min(b[1]) = timestamptz '$month' - interval '11 months'
       AND max(b[1]) >= timestamptz '$month' + interval '1 month'
       AND count(*) = (SELECT count(*) FROM generate_series(min(b[1]), max(b[1]), interval '1 month'))
     FROM ($windows) w}),
  't', 'the months run without a gap from the oldest legacy month to the next month');
note('partitions: ' . $sql->(q{SELECT string_agg(format('%s %s', c.relname, (SELECT count(*) FROM events e
    WHERE e.tableoid = c.oid)), ', ' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass}));

is($sql->(q{SELECT format('%s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
    WHERE conrelid = 'events'::regclass AND contype = 'p'}),
  'events_pkey PRIMARY KEY (id, created_at)', 'the primary key is (id, created_at), under its old name');
is($sql->(q{SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class c JOIN pg_index i
    ON i.indexrelid = c.oid WHERE i.indrelid = 'events'::regclass}),
  'events_created_at_idx,events_pkey', 'the parent\'s indexes have the old names');
is($sql->(q{SELECT pg_get_serial_sequence('events', 'id')}), 'public.events_id_seq',
  'events_id_seq is owned by events.id');
my $max = $sql->(q{SELECT max(id) FROM events});
cmp_ok($sql->(q{SELECT nextval('events_id_seq')}), '>', $max,
  'nextval still works after the drop, above every id in the table');
my ($ret, $out, $err) = $node->psql('postgres',
  q{INSERT INTO events (created_at, kind) VALUES (now(), 'after') RETURNING tableoid::regclass},
  extra_params => [ '-U', 'app' ]);
is($ret, 0, 'a plain INSERT by the application still lands') or diag($err);
is($out, 'events_p' . $sql->(q{SELECT to_char(now(), 'YYYYMM01')}), 'in this month\'s partition');
($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO events (id, created_at, kind)
    SELECT id, created_at, 'dup' FROM events WHERE kind = 'after'});
like($err, qr/duplicate key value violates unique constraint "events_p\d+_pkey"/,
  'the key refuses a second row with the same id and created_at');
($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO events (created_at, kind)
    VALUES (date_trunc('month', now()) + interval '3 months', 'far')});
like($err, qr/no partition of relation "events" found for row/,
  'with no DEFAULT, a month that has no partition is refused');
# The monthly job that replaces the DEFAULT: with none left, attaching a month
# does not wait for an open insert.
my $inserting = $node->background_psql('postgres');
$inserting->query_safe(q{BEGIN; INSERT INTO events (created_at, kind) VALUES (now(), 'open')});
is($sql->(q{SET partheal.attach_lock_attempts = 1;
    SELECT outcome FROM partheal_attach_window('events',
      (date_trunc('month', now()) + interval '2 months')::text,
      (date_trunc('month', now()) + interval '3 months')::text)}),
  'attached', 'with no DEFAULT, the month after next attaches while an insert is open');
$inserting->query_safe('COMMIT');
$inserting->quit;
my @held = slurp_file($node->logfile) =~ /PHL06 .* the parent was locked for (\d+) ms in all/g;
note("the parent was locked per attach (ms): " . join(', ', @held));

# -- Without OWNED BY ---------------------------------------------------------

my $without = $script =~ s/^ALTER SEQUENCE events_id_seq OWNED BY events\.id;\n//mr;
isnt($without, $script, 'the script has the OWNED BY step to take out');
$setup->('unowned', 1200);
$write_script->($without);
($ret, $out, $err) = $run_script->('unowned');
isnt($ret, 0, 'without OWNED BY the script fails');
like($err, qr/cannot drop table events_legacy because other objects depend on it/,
  'at the drop: the id defaults depend on the legacy table\'s sequence');
is($node->safe_psql('unowned', q{SELECT format('%s %s %s', pg_get_expr(c.relpartbound, c.oid),
    (SELECT count(*) FROM events_legacy), (SELECT count(*) FROM events))
    FROM pg_class c WHERE c.relname = 'events_legacy'}),
  'DEFAULT 0 1200', 'and the detach rolled back with it: the empty DEFAULT is still attached');

# -- A row left in DEFAULT ------------------------------------------------------

$setup->('leftover', 1200);
$node->safe_psql('leftover', q{INSERT INTO events (created_at, kind) VALUES ('infinity', 'stray')});
$write_script->($script);
($ret, $out, $err) = $run_script->('leftover');
isnt($ret, 0, 'a row with no window stops the script');
like($err, qr/events_legacy still holds rows/, 'at the emptiness check');
is($node->safe_psql('leftover', q{SELECT format('%s %s', pg_get_expr(c.relpartbound, c.oid),
    (SELECT kind FROM events_legacy)) FROM pg_class c WHERE c.relname = 'events_legacy'}),
  'DEFAULT stray', 'the DEFAULT is still attached, with the row');

# -- The swap cannot have its locks --------------------------------------------

$setup->('busy', 1200);
my $reader = $node->background_psql('busy');
$reader->query_safe('BEGIN; SELECT count(*) FROM events;');
($ret, $out, $err) = $run_script->('busy');
isnt($ret, 0, 'a transaction reading events keeps the swap from its lock');
like($err, qr/canceling statement due to lock timeout/, 'the swap gives up on lock_timeout');
is($node->safe_psql('busy', q{SELECT format('%s %s %s', relkind,
    (SELECT relkind FROM pg_class WHERE relname = 'events_new'), (SELECT count(*) FROM events))
    FROM pg_class WHERE relname = 'events'}),
  'r p 1200', 'nothing changed: events is the plain table with its rows, events_new is empty');
$reader->query_safe('COMMIT');
$reader->quit;
($ret, $out, $err) = $run_script->('busy');
is($ret, 0, 'run again, the script completes') or diag($err);
is($node->safe_psql('busy', q{SELECT format('%s %s %s', relkind, (SELECT count(*) FROM events),
    (SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass))
    FROM pg_class WHERE relname = 'events'}),
  'p 1200 13', 'events is partitioned, with every row, in 13 months');

# -- An identity id -------------------------------------------------------------

my ($conversion) = slurp_file($guide)
  =~ /^<!-- identity-conversion:begin -->\n```sql\n(.*?)^```\n<!-- identity-conversion:end -->$/ms;
ok($conversion, 'the guide has the identity conversion between its markers');
$node->safe_psql('postgres', 'CREATE DATABASE ident');
$node->safe_psql('ident', q{
  CREATE TABLE events (
    id         bigint GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY 2) PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    kind       text NOT NULL,
    payload    jsonb
  );
  CREATE INDEX events_created_at_idx ON events (created_at);
  GRANT SELECT, INSERT ON events TO app;
  INSERT INTO events (created_at, kind)
  SELECT now() - make_interval(months => g % 3) - interval '1 hour', 'old'
    FROM generate_series(1, 3000) g;
});
my $ident_state = q{SELECT format('%s %s %s %s', (SELECT relkind FROM pg_class WHERE relname = 'events'),
  to_regclass('events_new') IS NULL, to_regclass('events_id_created_at_key') IS NULL,
  (SELECT count(*) FROM events))};
$write_script->($script);
($ret, $out, $err) = $run_script->('ident');
isnt($ret, 0, 'the script refuses an identity id');
like($err, qr/events\.id is an identity column/, 'at step 0, naming the identity column');
is($node->safe_psql('ident', $ident_state), 'r t t 3000',
  'before changing anything: no index, no events_new, every row in the plain table');
# The conversion, then the script, both under a live writer.
my $ident = $under_writer->('ident', $conversion, $script);
is(scalar(@{$ident->{results}}), 2, 'the conversion ran to the end') or diag($ident->{results}[0]{err});
is($ident->{results}[-1]{rc}, 0, 'then the script ran to the end') or diag($ident->{results}[-1]{err});
is($ident->{writer_err}, '', 'the writer got no error during either');
my $isql = sub { $node->safe_psql('ident', shift) };
is($isql->(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM events WHERE kind = 'live'}),
  join(',', sort { $a <=> $b } @{$ident->{ids}}), 'every row the writer committed is there, once');
is($isql->(q{SELECT format('%s %s', count(*) - count(DISTINCT id), min(id) FILTER (WHERE kind = 'live') > 3000)
    FROM events}), '0 t', 'no id appears twice: the writer\'s ids continue above the legacy ones');
is($isql->(q{SELECT format('%s %s', relkind, pg_get_serial_sequence('events', 'id'))
    FROM pg_class WHERE relname = 'events'}), 'p public.events_id_seq',
  'events is partitioned, its id drawn from a sequence it owns');
is($isql->(q{SELECT seqincrement FROM pg_sequence WHERE seqrelid = 'events_id_seq'::regclass}), '2',
  'with the identity\'s increment');

# -- Shapes step 0 refuses ------------------------------------------------------

$setup->('viewed', 100);
$node->safe_psql('viewed', q{CREATE VIEW recent AS SELECT * FROM events WHERE created_at > now() - interval '1 day'});
$write_script->($script);
($ret, $out, $err) = $run_script->('viewed');
isnt($ret, 0, 'a view on events stops the script');
like($err, qr/a view or rule reads events/, 'at step 0, saying why');
is($node->safe_psql('viewed', q{SELECT format('%s %s %s', relkind, to_regclass('events_new') IS NULL,
    (SELECT count(*) FROM pg_extension WHERE extname = 'partheal')) FROM pg_class WHERE relname = 'events'}),
  'r t 0', 'before changing anything, CREATE EXTENSION included');

$node->stop;
done_testing();
