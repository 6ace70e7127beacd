# Plain INSERT writers and the worker's sequence poll: a table that a burst
# outran is caught up without a human, a quiet table keeps one partition
# ahead, and the headroom grows with the traffic up to its cap. And 0.1, 0.2
# and 0.3 databases updated to the current version keep working.
# Tables whose scenario is the worker's own poll from no partitions ahead are
# registered with premake => 0: 0.5's default (4) makes the position's
# partition and the next 4 at registration, which is not what they test.
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

# The version a fresh install gets: the control file's.
my $current = PartHeal::current_version();

my $node = PartHeal::new_node('plain',
  conf => "partheal.naptime = '200ms'\npartheal.max_ahead_partitions = 5\npartheal.ahead_seconds = '10s'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION partheal');
my $sql = sub { $node->safe_psql('postgres', shift) };
my $partitions = sub {
  my ($t) = @_;
  $sql->("SELECT string_agg(c.relname, ',' ORDER BY c.relname COLLATE \"C\") FROM pg_inherits i "
    . "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '$t'::regclass");
};

# A burst that outran creation: the sequence stands far past the last
# partition, so every plain INSERT without the insert gate (heal_inserts
# off, as before 0.12) fails. The worker's next poll creates the position's
# own partition and the one after its mark, and INSERTs land again.
$sql->(q{
  CREATE TABLE burst (id bigserial, v text) PARTITION BY RANGE (id);
  CREATE TABLE burst_p0 PARTITION OF burst FOR VALUES FROM (0) TO (1000);
  SELECT partheal_manage('burst', 1000, premake => 0);
  INSERT INTO burst (v) VALUES ('first');
});
my ($ret, $out, $err) = $node->psql('postgres',
  q{SET partheal.heal_inserts = off; SELECT setval('burst_id_seq', 5000); INSERT INTO burst (v) VALUES ('x')});
like($err, qr/no partition of relation "burst" found for row/,
  'after the burst the next plain INSERT finds no partition');
my $started = time;
my $recovered = 0;
for (1 .. 200) {
  ($ret, $out, $err) = $node->psql('postgres', q{SET partheal.heal_inserts = off; INSERT INTO burst (v) VALUES ('x')});
  if ($ret == 0) { $recovered = 1; last; }
  Time::HiRes::sleep(0.05);
}
my $took = time - $started;
ok($recovered, 'a plain INSERT lands again with no human involved');
cmp_ok($took, '<', 5, 'within a few naptimes (' . sprintf('%.2f s', $took) . ')');
note(sprintf('recovery after the burst: %.2f s', $took));
# The jump of 5,000 ids reads as a burst: the headroom goes to its cap, so
# partitions above the position follow; the empty gap below it stays empty.
like($partitions->('burst'), qr/^burst_p0,burst_p5000(,burst_p[6-9]000|,burst_p10000)*$/,
  'the position\'s own partition was made first, and no gap below it');

# A quiet table: one partition ahead once the mark is passed, no more. The
# worker first sees the table at position 850, past partition 0's mark.
$sql->(q{
  CREATE TABLE quiet (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE quiet_p0 PARTITION OF quiet FOR VALUES FROM (0) TO (1000);
  SELECT setval('quiet_id_seq', 850);
  SELECT partheal_manage('quiet', 1000, premake => 0);
});
ok($node->poll_query_until('postgres',
    q{SELECT count(*) = 2 FROM pg_inherits WHERE inhparent = 'quiet'::regclass}),
  'past the mark: the next partition appears');
# A row now and then, over a few polls: still one ahead.
for (1 .. 5) {
  $sql->(q{INSERT INTO quiet (v) VALUES (1)});
  Time::HiRes::sleep(0.3);
}
is($partitions->('quiet'), 'quiet_p0,quiet_p1000', 'a quiet table keeps one partition ahead');
is($sql->(q{SELECT headroom FROM partheal_stats WHERE parent = 'quiet'::regclass}), '1',
  'its headroom is one');

# Under load the headroom grows with the rate, and stops at the cap (5).
$sql->(q{
  CREATE TABLE busy (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('busy', 100);
  SELECT partheal_append('busy', '{}');
});
my $script = "${PostgreSQL::Test::Utils::tmp_check}/busy.sql";
open(my $fh, '>', $script) or die;
print $fh q{SELECT count(*) FROM partheal_append('busy', '[{}, {}, {}, {}, {}, {}, {}, {}, {}, {}]');} . "\n";
close $fh;
IPC::Run::run(['pgbench', '-n', '-c', '2', '-j', '2', '-T', '3', '-f', $script,
    $node->connstr('postgres')], '>', \$out, '2>', \$err) or diag($err);
my $headroom = $sql->(q{SELECT headroom FROM partheal_stats WHERE parent = 'busy'::regclass});
is($headroom, '5', 'after a burst of appends the headroom stands at the cap');
# The worker catches up to it within a few rounds of four creations.
my $ahead = q{SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = 'busy'::regclass
    AND substring(c.relname from '^busy_p(\d+)$')::bigint > (SELECT max(id) / 100 * 100 FROM busy)};
# Before the mark of the position's partition one fewer is needed ahead.
ok($node->poll_query_until('postgres', "SELECT ($ahead) >= 4"), 'the worker fills the headroom');
ok(PartHeal::rounds_pass($node, 2), 'and polls again');
cmp_ok($sql->($ahead), '<=', 5, 'and makes no more than the cap ahead');
note('busy: ' . $sql->(q{SELECT format('%s rows, %s partitions', (SELECT count(*) FROM busy),
  (SELECT count(*) FROM pg_inherits WHERE inhparent = 'busy'::regclass))}));

# partheal_nextval as the default: a plain INSERT's draws near the end of the
# partitions ask at once, and wait.
$sql->(q{
  CREATE TABLE exact (id bigserial, v int) PARTITION BY RANGE (id);
  CREATE TABLE exact_p0 PARTITION OF exact FOR VALUES FROM (0) TO (1000);
  SELECT partheal_manage('exact', 1000, 80, nextval_default => true, premake => 0);
  INSERT INTO exact (v) SELECT g FROM generate_series(1, 800) g;
});
is($sql->(q{SELECT to_regclass('exact_p1000') IS NOT NULL}), 't',
  'the plain INSERT that drew ids within 256 of the partition\'s end had the next one made before it ended');

# An open ALTER SEQUENCE on one managed table does not hold the worker: it
# skips that table's poll, and heals of another table go on.
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; ALTER SEQUENCE quiet_id_seq CACHE 1;});
ok(PartHeal::rounds_pass($node, 3), 'a few polls meet the held sequence');
$sql->(q{
  CREATE TABLE other (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('other', 10, NULL);
});
my $t0 = time;
($ret, $out, $err) = $node->psql('postgres', q{SELECT partheal_append('other', '{"v": 1}')},
  extra_params => ['-c', 'SET partheal.heal_wait_timeout = 5000']);
my $heal_secs = time - $t0;
is($ret, 0, 'a heal of another table goes through while ALTER SEQUENCE is held') or diag($err);
cmp_ok($heal_secs, '<', 4, sprintf('without waiting for the held sequence (%.2f s)', $heal_secs));
$holder->query_safe('COMMIT');
$holder->quit;

# A database on 0.1 with a managed table, updated to the current version.
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', q{
  CREATE EXTENSION partheal VERSION '0.1';
  CREATE TABLE m (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('m', 10);
  SELECT partheal_append('m', '[{"v": 1}, {"v": 2}]');
  -- The registration made m_p0 to m_p40 (the 0.5 library keeps premake 4
  -- for a declaration without it): a heal needs an id past them.
  SELECT partheal_append('m', '{"id": 95, "v": 0}');
  CREATE VIEW my_stats AS SELECT parent, heals FROM partheal_stats;
  CREATE ROLE stats_reader;
  GRANT SELECT ON partheal_stats TO stats_reader;
});
$node->safe_psql('old', 'ALTER EXTENSION partheal UPDATE');
is($node->safe_psql('old', q{SELECT parent, heals FROM my_stats}), 'm|1',
  'a view built on partheal_stats survives the update');
is($node->safe_psql('old', q{SELECT has_table_privilege('stats_reader', 'partheal_stats', 'SELECT')}),
  't', 'and so does a grant on it');
is($node->safe_psql('old', q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}),
  $current, "ALTER EXTENSION partheal UPDATE reaches $current, through 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8 and 0.9");
# An update ends where a fresh install starts: the same objects, no more
# (0.4 dropped partheal_boundary_selftest, which 0.1 to 0.3 had).
my $members = q{SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'partheal') ORDER BY 1};
my $fresh_members = $node->safe_psql('postgres', $members);
is($node->safe_psql('old', $members), $fresh_members,
  'the updated database has the objects of a fresh install') or diag($fresh_members);
# And the same definitions: the view's, each function's arguments and
# defaults and comment, the config table's columns, defaults and checks.
my $shapes = q{SELECT x FROM (
    SELECT 'view ' || pg_get_viewdef('partheal_stats'::regclass) || ' ' || coalesce(obj_description('partheal_stats'::regclass, 'pg_class'), '') AS x
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure || ' (' || pg_get_function_arguments(p.oid) || ') '
           || pg_get_function_result(p.oid) || ' ' || p.prosecdef || ' ' || p.provolatile::text || ' '
           || coalesce(array_to_string(p.proconfig, ','), '') || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '')
      FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
     WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'partheal')
    UNION ALL
    SELECT 'column ' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
           || a.attnotnull || ' ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '')
      FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
     WHERE a.attrelid = 'partheal_config'::regclass AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'constraint ' || pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conrelid = 'partheal_config'::regclass
  ) s ORDER BY x COLLATE "C"};
my $fresh_shapes = $node->safe_psql('postgres', $shapes);
is($node->safe_psql('old', $shapes), $fresh_shapes,
  'with the same definitions: view, functions, config columns and checks');
$node->safe_psql('postgres', 'CREATE DATABASE v03');
$node->safe_psql('v03', q{CREATE EXTENSION partheal VERSION '0.3'; ALTER EXTENSION partheal UPDATE});
is($node->safe_psql('v03', $members), $fresh_members, 'and so has a 0.3 database updated to the current version');
is($node->safe_psql('v03', $shapes), $fresh_shapes, 'with the same definitions');
is($node->safe_psql('old', q{SELECT count(*) FROM partheal_stats WHERE next_reason IS NOT NULL OR next_reason IS NULL}),
  '1', 'partheal_stats has 0.3\'s next_reason column');
is($node->safe_psql('old', q{SELECT datname FROM partheal_workers() WHERE datid = (SELECT oid FROM pg_database WHERE datname = 'old')}),
  'old', 'and partheal_workers() the database\'s name');
is($node->safe_psql('old', q{SELECT count(*) FROM partheal_append('m', '[{"v": 3}, {"v": 4}, {"v": 5}]')}),
  '3', 'the managed table keeps taking appends');
is($node->safe_psql('old', q{SELECT parent, appends FROM partheal_stats}), 'm|3',
  'partheal_stats keeps its rows');
# The update gives a table registered before it premake 4, and the worker
# acts on it: the position (5) is in m_p0, so m_p10 to m_p40 are kept ahead.
is($node->safe_psql('old', q{SELECT premake FROM partheal_config WHERE parent = 'm'::regclass}), '4',
  'the update gave the 0.1 registration premake 4');
ok($node->poll_query_until('old', q{SELECT count(*) = 4 FROM pg_class WHERE relname IN ('m_p10', 'm_p20', 'm_p30', 'm_p40')}),
  'and the worker keeps its four partitions ahead');
# partheal_nextval's draws must meet partitions that do not exist yet, so the
# floor goes (premake 0) and the ids run from 6 to 48: the draws ask the
# worker for the missing partitions of the 160 ids ahead of them (16
# partitions of 10), from m_p50, and wait for them.
$node->safe_psql('old', q{SELECT partheal_manage('m', 10, 80, nextval_default => true, premake => 0)});
$node->safe_psql('old', 'INSERT INTO m (v) SELECT g FROM generate_series(1, 43) g');
is($node->safe_psql('old', q{SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relname IN ('m_p50', 'm_p60', 'm_p70', 'm_p80')}), 'm_p50,m_p60,m_p70,m_p80',
  'and 0.2\'s partheal_nextval default works on it: m_p50 to m_p80 were made before the INSERT ended');

# A 0.2 database with a managed id table and a window attached out of a
# DEFAULT partition (0.2 brought partheal_attach_window), updated to the current version:
# what it had stays and works, and it gains 0.5's columns and the time form.
$node->safe_psql('postgres', 'CREATE DATABASE v02');
my $v02 = sub { $node->safe_psql('v02', shift) };
$v02->(q{
  CREATE EXTENSION partheal VERSION '0.2';
  CREATE TABLE m (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('m', 10);
  SELECT count(*) FROM partheal_append('m', '[{"v": 1}, {"v": 2}, {"v": 3}]');
  CREATE TABLE ev (at date NOT NULL, v text) PARTITION BY RANGE (at);
  CREATE TABLE ev_rest PARTITION OF ev DEFAULT;
  INSERT INTO ev VALUES ('2026-03-03', 'a'), ('2026-03-20', 'b'), ('2026-05-05', 'rest');
});
my $window = $v02->(q{SELECT partition FROM partheal_attach_window('ev', '2026-03-01', '2026-04-01') WHERE outcome = 'attached'});
like($window, qr/^ev_\w+$/, '0.2: a window is attached out of DEFAULT before the update');
$v02->('ALTER EXTENSION partheal UPDATE');
is($v02->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.2 database updates to the current version');
is($v02->($members), $fresh_members, 'with the objects of a fresh install');
is($v02->($shapes), $fresh_shapes, 'and their definitions');
is($v02->(q{SELECT parent, partition_size, mark_percent, premake, partition_interval IS NULL FROM partheal_config}),
  'm|10|80|4|t', 'the registration is kept, and gets premake 4');
# An id far past the partitions ahead (which premake 4 may have added by
# now) needs a heal of its own.
my $heals = $v02->(q{SELECT heals FROM partheal_stats WHERE parent = 'm'::regclass});
is($v02->(q{SELECT partheal_append('m', '{"id": 1005, "v": 4}')}), '1005', 'an append after the update');
is($v02->(q{SELECT tableoid::regclass FROM m WHERE id = 1005}), 'm_p1000', 'lands in the partition it healed');
is($v02->(q{SELECT heals FROM partheal_stats WHERE parent = 'm'::regclass}) - $heals, 1, 'by one heal');
is($v02->(qq{SELECT tableoid::regclass, string_agg(v, ',' ORDER BY v) FROM ev GROUP BY 1 ORDER BY tableoid::regclass::text}),
  "$window|a,b\nev_rest|rest", 'the attached window is still there with its rows');
is($v02->(q{SELECT key_type, premake, partition_interval IS NULL, time_zone IS NULL FROM partheal_stats WHERE parent = 'm'::regclass}),
  'bigint|4|t|t', 'partheal_stats has 0.5\'s columns');
# The time form, in the updated database: registration makes now's window
# and premake (4) after it, and a plain INSERT of now() lands in one.
$v02->(q{
  CREATE TABLE tt (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('tt', interval '1 day');
});
like($v02->(q{INSERT INTO tt (body) VALUES ('x') RETURNING tableoid::regclass}), qr/^tt_p\d{8}$/,
  'a timestamptz table registered by the day in the updated database takes a plain INSERT');
cmp_ok($v02->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'tt'::regclass}), '>=', 5,
  'in one of the five windows registration made');
is($v02->(q{SELECT count(*) FROM partheal_append('tt', '[{"body": "y"}]')}), '1', 'and appends');

# A 0.5 database under the 0.8 library: its catalog has no drain_default,
# and its time-keyed tables are not drained until it is updated (0.5's
# default). The update keeps what 0.5 did: drained only where the server
# set partheal.drain_default on. partheal_stats gains the drain's columns.
$node->safe_psql('postgres', 'CREATE DATABASE v05');
my $v05 = sub { $node->safe_psql('v05', shift) };
$v05->(q{
  CREATE EXTENSION partheal VERSION '0.5';
  CREATE TABLE d5 (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE d5_default PARTITION OF d5 DEFAULT;
  SELECT partheal_manage('d5', interval '1 day');
  INSERT INTO d5 (at, body) VALUES (now() - interval '1 day', 'back');
});
sleep 2;
is($v05->(q{SELECT count(*) FROM ONLY d5_default}), '1',
  'a 0.5 database\'s DEFAULT is not drained under the 0.8 library before its update');
$v05->('ALTER EXTENSION partheal UPDATE');
is($v05->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.5 database updates to the current version');
is($v05->($members), $fresh_members, 'with the objects of a fresh install');
is($v05->($shapes), $fresh_shapes, 'and their definitions');
is($v05->(q{SELECT drain_default FROM partheal_config WHERE parent = 'd5'::regclass}), 'f',
  'the update gives its registration drain_default false, as the server\'s setting was its default');
is($v05->(q{SELECT drain_default, default_rows IS NOT NULL, drained_rows FROM partheal_stats WHERE parent = 'd5'::regclass}),
  'f|t|0', 'and partheal_stats the drain\'s columns');
$v05->(q{SELECT partheal_manage('d5', interval '1 day', drain_default => true)});
ok($node->poll_query_until('v05', q{SELECT count(*) = 0 FROM ONLY d5_default}),
  'registered with drain_default => true, its DEFAULT is drained');
# Where the server had the setting on, the update keeps the drain on.
$node->safe_psql('postgres', q{ALTER SYSTEM SET partheal.drain_default = on; SELECT pg_reload_conf()});
$node->safe_psql('postgres', 'CREATE DATABASE v05on');
$node->safe_psql('v05on', q{
  CREATE EXTENSION partheal VERSION '0.5';
  CREATE TABLE d5 (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('d5', interval '1 day');
  ALTER EXTENSION partheal UPDATE;
});
is($node->safe_psql('v05on', q{SELECT drain_default FROM partheal_config WHERE parent = 'd5'::regclass}), 't',
  'a 0.5 database updated where partheal.drain_default is set on keeps its table drained');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET partheal.drain_default; SELECT pg_reload_conf()});

# A sequence not drawn from yet is polled too: a table managed with no
# partition at all, and one whose sequence was RESTARTed past its partitions,
# get the position's own partition within a few naptimes, and plain INSERTs
# land. The watermark comes down to the restarted position's partition.
my $within = sub {  # polls for at most $seconds
  my ($query, $seconds) = @_;
  for (1 .. $seconds * 10) {
    return 1 if $sql->($query) eq 't';
    Time::HiRes::sleep(0.1);
  }
  return 0;
};
$sql->(q{CREATE TABLE fresh (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('fresh', 10, premake => 0)});
ok($within->(q{SELECT count(*) >= 1 FROM pg_inherits WHERE inhparent = 'fresh'::regclass}, 3),
  'a table managed with no partition gets its first one without any draw');
is($sql->(q{INSERT INTO fresh (v) VALUES (1) RETURNING id, tableoid::regclass}), '1|fresh_p0',
  'and the first plain INSERT lands in it');
$sql->(q{SELECT count(*) FROM partheal_append('fresh', (SELECT jsonb_agg(jsonb_build_object('v', g)) FROM generate_series(1, 24) g))});
ok($within->(q{SELECT watermark >= 2 FROM partheal_stats WHERE parent = 'fresh'::regclass}, 3),
  'ids at 25: the marks claimed partition 2');
$sql->(q{ALTER SEQUENCE fresh_id_seq RESTART});
ok($within->(q{SELECT watermark = 0 FROM partheal_stats WHERE parent = 'fresh'::regclass}, 3),
  'after RESTART the watermark comes down to the position\'s partition, 0');
$sql->(q{ALTER SEQUENCE fresh_id_seq RESTART WITH 5000});
ok($within->(q{SELECT to_regclass('fresh_p5000') IS NOT NULL}, 3),
  'RESTART WITH 5000, never drawn: the worker creates 5000\'s partition');
is($sql->(q{INSERT INTO fresh (v) VALUES (2) RETURNING id, tableoid::regclass}), '5000|fresh_p5000',
  'and the next plain INSERT lands in it');

# Interleaved ids: INCREMENT BY 1000 at partition size 100 puts every draw in
# a partition of its own, and create-ahead follows the draws, not the
# partition numbers: slow plain INSERTs never fail, and the partitions made
# are about one per row, plus the headroom.
for my $case (['stride_mark', 'true'], ['stride_poll', 'NULL']) {
  my ($t, $nextval_default) = @$case;
  $sql->(qq{CREATE SEQUENCE ${t}_seq INCREMENT BY 1000;
    CREATE TABLE $t (id bigint DEFAULT nextval('${t}_seq'), v int) PARTITION BY RANGE (id);
    ALTER SEQUENCE ${t}_seq OWNED BY $t.id;
    SELECT partheal_manage('$t', 100, 80, nextval_default => $nextval_default)});
  ok($within->(qq{SELECT to_regclass('${t}_p0') IS NOT NULL}, 3), "$t: the first id's partition");
  my $failed = 0;
  for my $i (1 .. 30) {
    my ($rc) = $node->psql('postgres', "INSERT INTO $t (v) VALUES ($i)");
    $failed++ if $rc != 0;
    Time::HiRes::sleep(0.1);
  }
  is($failed, 0, "$t: none of 30 slow plain INSERTs 1000 ids apart failed");
  my $made = $sql->(qq{SELECT count(*) FROM pg_inherits WHERE inhparent = '$t'::regclass});
  cmp_ok($made, '<=', 30 + 5 + 1, "$t: $made partitions for 30 rows: one a row, plus the headroom");
  is($sql->(qq{SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = '$t'::regclass
        AND NOT EXISTS (SELECT FROM $t WHERE tableoid = c.oid)
        AND substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM [(]''?(-?[0-9]+)')::bigint
            < (SELECT max(id) FROM $t)}), '0',
    "$t: no partition was made for ids the sequence skips");
}

# A burst of single-row INSERTs faster than the worker: a draw that leaves
# fewer ids routable ahead than the rest of its partition past the mark (256, or
# 16 partitions at most) waits for the worker to make the missing partitions, so no INSERT
# draws an id its statement has no partition for. Before: size 100 right
# after registration lost the rows at 500, its first id past premake; size
# 10 with 8 writers lost one at every partition.
for my $case (['rush100', 100, 4, 2, 5000, ['-M', 'prepared']], ['rush10', 10, 0, 8, 300, []]) {
  my ($t, $size, $premake, $clients, $each, $mode) = @$case;
  $sql->(qq{CREATE TABLE $t (id bigserial, v int) PARTITION BY RANGE (id);
    SELECT partheal_manage('$t', $size, nextval_default => true, premake => $premake)});
  ok($within->(qq{SELECT to_regclass('${t}_p0') IS NOT NULL}, 3), "$t: the first id's partition");
  my $script = "${PostgreSQL::Test::Utils::tmp_check}/$t.sql";
  open(my $fh, '>', $script) or die;
  print $fh "INSERT INTO $t (v) VALUES (1);\n";
  close $fh;
  my ($rout, $rerr) = ('', '');
  IPC::Run::run(['pgbench', '-n', '-c', $clients, '-j', '2', '-t', $each, @$mode, '-f', $script,
      $node->connstr('postgres')], '>', \$rout, '2>', \$rerr);
  my $rows = $clients * $each;
  unlike($rerr, qr/no partition/, "$t: no INSERT of $clients writers found no partition")
    or diag($rerr);
  is($sql->(qq{SELECT format('%s %s', count(*), count(DISTINCT id)) FROM $t}), "$rows $rows",
    "$t: all $rows rows of $clients writers at partition size $size are there, each once");
}

# Log noise: a COPY after partheal_reserve made its partitions crosses every
# mark without a request (the partitions exist), so no PHL05 line; a full
# create-ahead queue is said once a minute per table at most.
$sql->(q{CREATE TABLE quiet_copy (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('quiet_copy', 100, 80, nextval_default => true);
  SELECT partheal_reserve('quiet_copy', 50000)});
my $log_from = -s $node->logfile;
$sql->("COPY quiet_copy (v) FROM STDIN;\n" . join("\n", 1 .. 50000) . "\n\\.\n");
is($sql->(q{SELECT count(*) FROM quiet_copy}), '50000', 'the COPY of 50,000 rows lands');
# Only the marks of the last partitions ask, for the five ahead of them past
# the reservation.
cmp_ok($sql->(q{SELECT ahead_requested FROM partheal_stats WHERE parent = 'quiet_copy'::regclass}), '<=', 5,
  'no create-ahead request for partitions that exist');
my $copy_log = substr(slurp_file($node->logfile), $log_from);
is(scalar(() = $copy_log =~ /PHL05/g), 0, 'and no PHL05 line');
$sql->(q{CREATE TABLE flood (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('flood', 10, 80, nextval_default => true)});
$log_from = -s $node->logfile;
$sql->(q{SELECT count(partheal_nextval('flood', 'flood_id_seq')) FROM generate_series(1, 20000)});
my $flood_log = substr(slurp_file($node->logfile), $log_from);
my @full = $flood_log =~ /(PHL05 create-ahead queue full[^\n]*)/g;
is(scalar(@full), 1, 'a queue filled by 2,000 marks is said once') or diag(join("\n", @full));
unlike($flood_log, qr/PHL05[^\n]*\n(?:CONTEXT|STATEMENT):/, 'without CONTEXT or STATEMENT lines');

# An idle table costs next to nothing: the worker polls every table of a
# database in one transaction, so 50 idle tables cost about one commit a
# poll, not one or two per table (before: 2 per table per poll, here 1,000
# in 2 s). (make bench measures CPU per poll against the table count.)
$node->safe_psql('postgres', 'CREATE DATABASE idle');
$node->safe_psql('idle', q{
  CREATE EXTENSION partheal;
  DO $$
  BEGIN
    FOR i IN 1 .. 50 LOOP
      EXECUTE format('CREATE TABLE t%s (id bigserial, v int) PARTITION BY RANGE (id)', i);
      EXECUTE format('CREATE TABLE t%s_p0 PARTITION OF t%s FOR VALUES FROM (0) TO (1000)', i, i);
      PERFORM partheal_manage(format('t%s', i)::regclass, 1000);
    END LOOP;
  END $$;
});
sleep 2;
my $commits = q{SELECT xact_commit FROM pg_stat_database WHERE datname = 'idle'};
my $c0 = $sql->($commits);
my $idle_t0 = time;
sleep 2;
my $c1 = $sql->($commits);
my $polls = (time - $idle_t0) / 0.2;
note(sprintf('50 idle tables: %d commits in %.1f s, about %.1f a poll', $c1 - $c0, time - $idle_t0,
  ($c1 - $c0) / $polls));
cmp_ok($c1 - $c0, '<', 50, '50 idle tables: fewer commits in 2 s than there are tables');

# Uninstall: the partitions partheal makes never carry partheal_nextval as a
# default of their own, and partheal_unmanage puts nextval back on every
# partition that does (made by hand with PARTITION OF, which copies the
# parent's default, or by partheal before 0.3). DROP EXTENSION then works.
$node->safe_psql('postgres', 'CREATE DATABASE uninstall');
my $u = sub { $node->safe_psql('uninstall', shift) };
$u->(q{
  CREATE EXTENSION partheal;
  CREATE TABLE u (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('u', 10, NULL, nextval_default => true);
  SELECT count(*) FROM partheal_append('u', (SELECT jsonb_agg(jsonb_build_object('v', g)) FROM generate_series(1, 45) g));
  CREATE TABLE u_by_hand PARTITION OF u FOR VALUES FROM (1000) TO (1010);
  CREATE TABLE u_legacy (LIKE u INCLUDING DEFAULTS);
  ALTER TABLE u ATTACH PARTITION u_legacy FOR VALUES FROM (2000) TO (2010);
});
my $dependents = q{SELECT count(*) FROM pg_depend d JOIN pg_attrdef a ON a.oid = d.objid
  WHERE d.classid = 'pg_attrdef'::regclass
    AND d.refobjid = 'partheal_nextval(regclass, regclass)'::regprocedure
    AND a.adrelid <> 'u'::regclass};
is($u->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'u'::regclass}), '7',
  'the heals made five partitions beside the two made by hand');
is($u->($dependents), '2',
  'only the two made by hand carry partheal_nextval; the heals\' partitions do not');
is($u->(q{SELECT string_agg(DISTINCT pg_get_expr(adbin, adrelid), ', ') FROM pg_attrdef
  WHERE adrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'u'::regclass)
    AND adrelid NOT IN ('u_by_hand'::regclass, 'u_legacy'::regclass)}),
  q{nextval('u_id_seq'::regclass)}, 'the heals\' partitions default to the plain nextval');
$u->(q{SELECT partheal_unmanage('u')});
is($u->($dependents), '0', 'partheal_unmanage put nextval back on every partition');
my ($drop_rc, $drop_out, $drop_err) = $node->psql('uninstall', 'DROP EXTENSION partheal');
is($drop_rc, 0, 'DROP EXTENSION succeeds after partheal_unmanage') or diag($drop_err);
is($u->(q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'u_legacy'::regclass}),
  q{nextval('u_id_seq'::regclass)}, 'a partition keeps drawing from the sequence for direct inserts');

# A 0.6 database: the update adds partheal_cover (and the Citus worker
# nodes' partheal_cover_for_node), and ends where a fresh install starts.
$node->safe_psql('postgres', 'CREATE DATABASE v06');
my $v06 = sub { $node->safe_psql('v06', shift) };
$v06->(q{
  CREATE EXTENSION partheal VERSION '0.6';
  CREATE TABLE c6 (id bigserial, v text) PARTITION BY RANGE (id);
  SELECT partheal_manage('c6', 100, mark_percent => NULL, premake => 0);
});
$v06->('ALTER EXTENSION partheal UPDATE');
is($v06->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.6 database updates to the current version');
is($v06->($members), $fresh_members, 'with the objects of a fresh install');
is($v06->($shapes), $fresh_shapes, 'and their definitions');
is($v06->(q{SELECT partheal_cover('c6', ARRAY['250'])}), '1', 'partheal_cover works after the update');

# A 0.7 database under the 0.8 library: its two-argument
# partheal_cover_for_node (a Citus worker node of that version asks it)
# still works; the update replaces it with 0.8's, which says whether the
# key was drawn.
$node->safe_psql('postgres', 'CREATE DATABASE v07');
my $v07 = sub { $node->safe_psql('v07', shift) };
$v07->(q{
  CREATE EXTENSION partheal VERSION '0.7';
  CREATE TABLE c7 (id bigserial, v text) PARTITION BY RANGE (id);
  SELECT partheal_manage('c7', 100, mark_percent => NULL, premake => 0);
});
is($v07->(q{SELECT partheal_cover_for_node('public.c7', ARRAY['250'])}), '{"made": 1}',
  'a 0.7 database\'s two-argument partheal_cover_for_node works under the 0.8 library');
$v07->('ALTER EXTENSION partheal UPDATE');
is($v07->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.7 database updates to the current version');
is($v07->($members), $fresh_members, 'with the objects of a fresh install');
is($v07->(q{SELECT partheal_cover_for_node('public.c7', ARRAY['350'], false)}), '{"made": 1}',
  'and the three-argument one');

# A 0.8 database: its two-argument untyped form works under this library,
# and the update replaces it with the one that takes premake and the rest.
$node->safe_psql('postgres', 'CREATE DATABASE v08');
my $v08 = sub { $node->safe_psql('v08', shift) };
$v08->(q{
  CREATE EXTENSION partheal VERSION '0.8';
  CREATE TABLE e8 (at timestamptz NOT NULL DEFAULT now(), v text) PARTITION BY RANGE (at);
  SELECT partheal_manage('e8', '1 day');
});
is($v08->(q{SELECT premake FROM partheal_config WHERE parent = 'e8'::regclass}), '4',
  'a 0.8 database\'s two-argument untyped form works under this library');
$v08->('ALTER EXTENSION partheal UPDATE');
is($v08->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.8 database updates to the current version');
is($v08->($members), $fresh_members, 'with the objects of a fresh install');
is($v08->($shapes), $fresh_shapes, 'and their definitions');
$v08->(q{SELECT partheal_manage('e8', '1 day', 2)});
is($v08->(q{SELECT premake FROM partheal_config WHERE parent = 'e8'::regclass}), '2',
  'and partheal_manage(\'e8\', \'1 day\', 2) takes premake 2');

# A 0.9 database: partheal_manage returns void there, under this library
# too (its C function's text is dropped); the update makes all three forms
# return the summary, and the text form passes it on.
$node->safe_psql('postgres', 'CREATE DATABASE v09');
my $v09 = sub { $node->safe_psql('v09', shift) };
is($v09->(q{
  CREATE EXTENSION partheal VERSION '0.9';
  CREATE TABLE i9 (id bigserial, v text) PARTITION BY RANGE (id);
  SELECT partheal_manage('i9', 100, premake => 1);
}), '', 'a 0.9 database\'s partheal_manage returns void under this library');
is($v09->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'i9'::regclass}), '2',
  'and registers and makes the partitions as before');
$v09->('ALTER EXTENSION partheal UPDATE');
is($v09->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.9 database updates to the current version');
is($v09->($members), $fresh_members, 'with the objects of a fresh install');
is($v09->($shapes), $fresh_shapes, 'and their definitions');
like($v09->(q{SELECT partheal_manage('i9', 100, premake => 3)}),
  qr/^"i9" is managed: partitions of 100 ids, 3 kept ahead, the next made at 80% of the current one; made 2 partitions, i9_p200 to i9_p300$/,
  'after it, the id form returns its summary');
$v09->(q{CREATE TABLE e9 (at timestamptz NOT NULL, v text) PARTITION BY RANGE (at)});
like($v09->(q{SELECT partheal_manage('e9', '1 hour', 1)}),
  qr/^"e9" is managed: windows of 01:00:00 in UTC, 1 kept ahead, DEFAULT drained back 30 days; made [23] windows, e9_p\d{8}_\d{6} to e9_p\d{8}_\d{6}$/,
  'and the text form the time form\'s');

# A 0.10 database: its partheal_workers() has no rounds column, and works
# under this library; the update adds it, and the worker's rounds count up.
$node->safe_psql('postgres', 'CREATE DATABASE v10');
my $v10 = sub { $node->safe_psql('v10', shift) };
$v10->(q{CREATE EXTENSION partheal VERSION '0.10'});
is($v10->(q{SELECT string_agg(x, ',') FROM (SELECT datname::text AS x FROM partheal_workers() WHERE datname = 'v10') s}),
  'v10', 'a 0.10 database\'s partheal_workers() works under this library');
$v10->('ALTER EXTENSION partheal UPDATE');
is($v10->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.10 database updates to the current version');
is($v10->($members), $fresh_members, 'with the objects of a fresh install');
is($v10->($shapes), $fresh_shapes, 'and their definitions');
ok(PartHeal::rounds_pass($node, 2, 'v10'), 'and partheal_workers().rounds counts its worker\'s poll rounds');

# A 0.11 database with managed tables: the insert gate is the library's, so
# its plain INSERTs heal before the update; the update adds
# partheal_stats.insert_heals, which counts the heals made before it.
$node->safe_psql('postgres', 'CREATE DATABASE v11');
my $v11 = sub { $node->safe_psql('v11', shift) };
$v11->(q{
  CREATE EXTENSION partheal VERSION '0.11';
  CREATE TABLE i11 (id bigserial, v text) PARTITION BY RANGE (id);
  SELECT partheal_manage('i11', 10, NULL, premake => 0);
  CREATE TABLE t11 (at timestamptz NOT NULL, v text) PARTITION BY RANGE (at);
  SELECT partheal_manage('t11', interval '1 day', premake => 0);
});
is($v11->(q{INSERT INTO i11 (id, v) VALUES (15, 'x'), (25, 'y') RETURNING tableoid::regclass}),
  "i11_p10\ni11_p20", 'a 0.11 database\'s plain INSERT heals under this library');
is($v11->(q{INSERT INTO t11 VALUES ('2020-02-02 10:00+00', 'x') RETURNING tableoid::regclass}),
  't11_p20200202', 'a time-keyed one too');
$v11->('ALTER EXTENSION partheal UPDATE');
is($v11->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.11 database updates to the current version');
is($v11->($members), $fresh_members, 'with the objects of a fresh install');
is($v11->($shapes), $fresh_shapes, 'and their definitions');
is($v11->(q{SELECT string_agg(parent::text || '=' || insert_heals, ',' ORDER BY parent::text) FROM partheal_stats}),
  'i11=2,t11=1', 'and partheal_stats.insert_heals counts the heals of the INSERTs made before it');
is($v11->(q{INSERT INTO i11 (id, v) VALUES (35, 'z') RETURNING tableoid::regclass}), 'i11_p30',
  'and plain INSERTs heal after it');

# A 0.12 database: its partheal_workers() has no backing_off column, and
# works under this library; the update adds it, and a catch-up that fails
# (the owner may not create in the schema) shows in it, backing off.
$node->safe_psql('postgres', 'CREATE DATABASE v12');
my $v12 = sub { $node->safe_psql('v12', shift) };
$v12->(q{
  CREATE EXTENSION partheal VERSION '0.12';
  CREATE ROLE owner12 LOGIN;
  CREATE SCHEMA s12 AUTHORIZATION owner12;
  SET ROLE owner12;
  CREATE TABLE s12.i12 (id bigserial, v text) PARTITION BY RANGE (id);
  RESET ROLE;
});
is($v12->(q{SELECT string_agg(x, ',') FROM (SELECT datname::text AS x FROM partheal_workers() WHERE datname = 'v12') s}),
  'v12', 'a 0.12 database\'s partheal_workers() works under this library');
$v12->('ALTER EXTENSION partheal UPDATE');
is($v12->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current,
  'a 0.12 database updates to the current version');
is($v12->($members), $fresh_members, 'with the objects of a fresh install');
is($v12->($shapes), $fresh_shapes, 'and their definitions');
$v12->(q{
  SELECT partheal_manage('s12.i12', 10, premake => 0);
  REVOKE CREATE ON SCHEMA s12 FROM owner12;
  SELECT nextval('s12.i12_id_seq') FROM generate_series(1, 12);
});
ok($node->poll_query_until('v12', q{SELECT ahead_failed >= 1 FROM partheal_stats WHERE parent = 's12.i12'::regclass}),
  'the catch-up of a table whose owner lost CREATE fails');
ok($node->poll_query_until('v12', q{SELECT backing_off >= 1 FROM partheal_workers() WHERE datname = 'v12'}),
  'and partheal_workers().backing_off shows its back-off');
$v12->(q{GRANT CREATE ON SCHEMA s12 TO owner12});
ok($node->poll_query_until('v12', q{SELECT to_regclass('s12.i12_p10') IS NOT NULL}),
  'given CREATE again, the catch-up goes on once its back-off is over');
ok($node->poll_query_until('v12', q{SELECT backing_off = 0 FROM partheal_workers() WHERE datname = 'v12'}),
  'and nothing backs off');

$node->stop;
done_testing();
