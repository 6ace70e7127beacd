# The worker's drain of DEFAULT (partheal.drain_default): plain INSERT
# writers of back-dated and current rows into a daily Berlin table whose
# DEFAULT partition takes them; the worker makes each window as the heal
# would cut and name it, and moves its rows out under the live writers. No
# writer error, no row lost, a reader's count never goes down, DEFAULT ends
# with only the rows no window can hold. A window that cannot be drained
# (foreign keys reference its table) is reported and retried with back-off,
# and does not hold up another table. The drain is on by default; with the
# table's drain_default or the server's setting off, nothing moves.
# Its assertions time the server: make test runs it with no other TAP file beside it.
# TAP lane: alone
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;

# Under valgrind the writers of section a are left out: they need native
# speed. The drain's other sections run.
my $valgrind = $ENV{PARTHEAL_VALGRIND};

my $node = PartHeal::new_node('drain', conf => "track_commit_timestamp = on\npartheal.naptime = '500ms'\n");
my $sql = sub { $node->safe_psql('postgres', shift) };
$sql->('CREATE EXTENSION partheal');
PartHeal::create_windows_function($node);

my $within = sub { PartHeal::within($node, @_) };

###########################################################################
# a. Back-dated writers into a daily Berlin table with a DEFAULT.
SKIP: {
skip 'the writers need native speed', 16 if $valgrind;
$sql->(q{
  CREATE TABLE ev (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE INDEX ON ev (at);
  CREATE TABLE ev_default PARTITION OF ev DEFAULT;
  -- A backlog from before: eight days ago, and rows no window can hold.
  INSERT INTO ev (at, body) SELECT now() - interval '8 days' + i * interval '1 minute', 'old'
    FROM generate_series(1, 1000) i;
  INSERT INTO ev (at, body) VALUES ('infinity', 'inf'), ('-infinity', 'inf');
});
my ($rc, $out, $err) = $node->psql('postgres',
  q{SELECT partheal_manage('ev', interval '1 day', premake => 10, time_zone => 'Europe/Berlin')});
is($rc, 0, 'a: a daily Berlin table with a DEFAULT partition is registered') or diag($err);

# A soak: 15 s on the major that checks assertions (PARTHEAL_SOAK=full), 8
# on the others, where the drain still moves the backlog under the writers.
my $seconds = ($ENV{PARTHEAL_SOAK} // 'full') eq 'short' ? 8 : 15;
my $w = PartHeal::start_writers($node, 2, $seconds,
  q{INSERT INTO ev (at, body) VALUES (now() - random() * interval '5 days', 'back');},
  q{INSERT INTO ev (body) VALUES ('now');});
# A reader of the parent, meanwhile: its count never goes down.
my ($reads, $drops, $last) = (0, 0, 0);
my $t0 = time;
while (time - $t0 < $seconds) {
  my $n = $sql->('SELECT count(*) FROM ev');
  $drops++ if $n < $last;
  $last = $n;
  $reads++;
  Time::HiRes::sleep(0.1);
}
# The reader raced the drain only if the drain moved rows meanwhile.
my $moved = $sql->(q{SELECT drained_rows FROM partheal_stats WHERE parent = 'ev'::regclass});
my ($rounds, $failed, @errors) = PartHeal::finish_writers($w);
cmp_ok($rounds, '>', 1000, "a: the writers wrote ($rounds rounds)");
cmp_ok($moved, '>', 0, "a: the drain moved rows while they wrote and the reader read ($moved)");
is($failed, 0, 'a: no writer statement failed') or diag(join("\n", @errors));
is($drops, 0, "a: a reader's count of the table never went down ($reads reads)");

my $took = $within->(q{SELECT count(*) = 2 FROM ONLY ev_default}, 60);
ok(defined $took, 'a: DEFAULT is drained of every row a window can hold, after the writers')
  or diag($sql->(q{SELECT at FROM ONLY ev_default ORDER BY at LIMIT 5}));
diag(sprintf('a: DEFAULT drained %.1f s after the writers stopped', $took // -1));
is($sql->('SELECT count(*) FROM ev'), 1000 + 2 + 2 * $rounds, 'a: every row is there, once');
is($sql->(q{SELECT string_agg(body, ',') FROM ONLY ev_default}), 'inf,inf',
  'a: the infinities stay in DEFAULT: no window holds them');
# Each window is a Berlin day, named by it, as the heal makes them.
is($sql->(q{SELECT count(*) FROM windows('ev')
  WHERE (lo AT TIME ZONE 'Europe/Berlin')::time <> '00:00'
     OR hi AT TIME ZONE 'Europe/Berlin' <> (lo AT TIME ZONE 'Europe/Berlin') + interval '1 day'
     OR part::text <> 'ev_p' || to_char(lo AT TIME ZONE 'Europe/Berlin', 'YYYYMMDD')}), '0',
  'a: every window is a Berlin day, named ev_pYYYYMMDD by its lower bound');
cmp_ok($sql->(q{SELECT count(*) FROM windows('ev')}), '>=', 6,
  'a: the windows of eight days ago and of the last five days and today');
is($sql->(q{SELECT count(*) FROM ev WHERE tableoid <> 'ev_default'::regclass
  AND NOT EXISTS (SELECT FROM windows('ev') w WHERE w.part = ev.tableoid AND ev.at >= w.lo AND ev.at < w.hi)}),
  '0', 'a: each row is in the window of its key');
my $log = slurp_file($node->logfile);
my $attached = () = $log =~ /PHL06 attached public\.ev_p\d{8} to public\.ev FOR VALUES/g;
cmp_ok($attached, '>=', 6, "a: each window's attach is logged (PHL06, $attached lines)");
unlike($log, qr/PHL07 the drain of the DEFAULT partition of \S*\bev\b\S* failed/, 'a: no drain of ev failed');
like($log, qr/PHL08 "public\.ev" has a DEFAULT partition "public\.ev_default": rows without a window of their own go there, and the worker makes their windows and moves them out/,
  'a: the worker says once that it drains the table (PHL08)');
# Oldest first: the backlog of eight days ago, older than any writer's row,
# has the first window made.
is($sql->(q{SELECT lo = (SELECT min(lo) FROM windows('ev')) FROM windows('ev') ORDER BY made LIMIT 1}), 't',
  'a: the oldest window is made first');

# A back-dated row after the drain reaches its own window within a poll and
# the move: nine days back, a window not made yet, within premake (10).
$sql->(q{INSERT INTO ev (at, body) VALUES (now() - interval '9 days 12 hours', 'late')});
$took = $within->(q{SELECT tableoid <> 'ev_default'::regclass FROM ev WHERE body = 'late'}, 30);
ok(defined $took, 'a: a row nine days back reaches its own window');
diag(sprintf('a: the late row reached its window %.2f s after its INSERT (naptime 500 ms)', $took // -1));
}

###########################################################################
# b. Windows that cannot be drained, reported and retried with back-off,
# while the table's later windows and other tables drain: foreign keys
# reference one table (moving rows out of DEFAULT would run their ON DELETE
# actions); on another, a trigger on DEFAULT refuses the move of one window's
# rows.
$sql->(q{
  CREATE TABLE fk (at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (at)) PARTITION BY RANGE (at);
  CREATE TABLE fk_default PARTITION OF fk DEFAULT;
  CREATE TABLE fk_ref (at timestamptz REFERENCES fk (at) ON DELETE CASCADE);
  INSERT INTO fk (at) VALUES (now() - interval '3 days');
  INSERT INTO fk_ref SELECT at FROM fk;
  SELECT partheal_manage('fk', interval '1 day');
  CREATE TABLE stuck (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE stuck_default PARTITION OF stuck DEFAULT;
  -- A sequence counts the tries: nextval is not rolled back with them. The
  -- trigger runs under partheal's search_path (pg_catalog, pg_temp), so
  -- it names its schema.
  CREATE SEQUENCE stuck_tries;
  CREATE FUNCTION keep_stuck() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.body = 'stuck' THEN PERFORM nextval('public.stuck_tries'); RAISE EXCEPTION 'stuck rows stay'; END IF;
      RETURN OLD;
    END $$;
  CREATE TRIGGER keep BEFORE DELETE ON stuck_default FOR EACH ROW EXECUTE FUNCTION keep_stuck();
  INSERT INTO stuck (at, body) VALUES (now() - interval '3 days', 'stuck'), (now() - interval '2 days', 'fine');
  SELECT partheal_manage('stuck', interval '1 day');
});
ok(defined $within->(q{SELECT count(*) = 1 FROM ONLY stuck_default}, 30),
  'b: the window after the one that cannot be drained drains');
is($sql->(q{SELECT body FROM ONLY stuck_default}), 'stuck', 'b: the stuck row stays in DEFAULT');
is($sql->(q{SELECT count(*) FROM windows('stuck') WHERE lo <= now() - interval '3 days' AND hi > now() - interval '3 days'}),
  '0', 'b: and its window was not made');
my $log_at = -s $node->logfile;
my $tries_before = $sql->(q{SELECT last_value FROM stuck_tries});
# Under valgrind a try takes longer: twice the watch, for the same bounds.
my $watch = $valgrind ? 16 : 8;
sleep $watch;
my $stuck_tries = $sql->(q{SELECT last_value FROM stuck_tries}) - $tries_before;
is($sql->(q{SELECT count(*) FROM ONLY fk_default}), '1', 'b: the referenced row stays in DEFAULT');
is($sql->(q{SELECT count(*) FROM fk_ref}), '1', 'b: and the row referencing it is untouched');
my $log = substr(slurp_file($node->logfile), $log_at);
my $gave_up = () = $log =~ /PHL07 partheal: the window .* of "fk" was not attached: foreign keys reference/g;
cmp_ok($gave_up, '>=', 1, "b: the fk window is reported (PHL07, $gave_up lines in $watch s)");
cmp_ok($gave_up, '<=', 6, "b: and retried with back-off, not at every poll (@{[2 * $watch]} in $watch s)");
cmp_ok($stuck_tries, '>=', 1, "b: the stuck window is retried ($stuck_tries tries in $watch s)");
cmp_ok($stuck_tries, '<=', 6, 'b: with back-off, not at every poll');
like($log . slurp_file($node->logfile), qr/PHL07 the drain of the DEFAULT partition of .*stuck.* failed: stuck rows stay/,
  'b: its failure is logged (PHL07)');
is($sql->(q{SELECT count(*) FROM windows('fk') WHERE lo <= now() - interval '3 days' AND hi > now() - interval '3 days'}),
  '0', 'b: the referenced row\'s window was not made');
is($sql->(q{SELECT count(*) FROM pg_class c WHERE (relname LIKE 'fk\_p2%' OR relname LIKE 'stuck\_p2%')
  AND NOT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = c.oid)}), '0',
  'b: no table was left behind by the retries');

###########################################################################
# e. A window of more than 100,000 rows in DEFAULT is left there, said once:
# its move would be one transaction of the worker's, with heal requests
# waiting behind it. A later, smaller window still drains.
$log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE big (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE big_default PARTITION OF big DEFAULT;
  INSERT INTO big (at, body) SELECT date_trunc('day', now() - interval '2 days') + interval '1 hour', 'big'
    FROM generate_series(1, 100001);
  INSERT INTO big (at, body) VALUES (now() - interval '1 day', 'small');
  SELECT partheal_manage('big', interval '1 day');
});
ok(defined $within->(q{SELECT count(*) = 0 FROM ONLY big_default WHERE body = 'small'}, 30),
  'e: the smaller window after the big one drains');
is($sql->(q{SELECT count(*) FROM ONLY big_default}), '100001', 'e: the big window\'s rows stay in DEFAULT');
$log = substr(slurp_file($node->logfile), $log_at);
my $said = () = $log =~ /PHL07 the window .* of "?public\.big"? is left in DEFAULT: it holds more than 100000 rows there/g;
is($said, 1, 'e: said once (PHL07)');
# Its back-off (a minute at once) is the scheduler's, in shared memory: it
# shows in partheal_workers().backing_off, and outlasts rounds in which the
# table is not due for the drain (registered without it, then with it
# again) and the worker itself (killed, and a new one started): neither
# tries the window again within the minute, which would say PHL07 again.
ok(defined $within->(q{SELECT backing_off >= 1 FROM partheal_workers() WHERE datname = current_database()}, 30),
  'e: the big window backs off, as partheal_workers().backing_off shows');
$sql->(q{SELECT partheal_manage('big', interval '1 day', drain_default => false)});
ok(PartHeal::rounds_pass($node, 2), 'e: rounds pass with the table not due for the drain');
$sql->(q{SELECT partheal_manage('big', interval '1 day', drain_default => true)});
my $big_worker = $sql->(q{SELECT pid FROM partheal_workers() WHERE datname = current_database()});
$sql->("SELECT pg_terminate_backend($big_worker)");
ok(defined $within->(qq{SELECT pid <> $big_worker AND state = 'running' FROM partheal_workers() WHERE datname = current_database()}, 30),
  'e: a new worker runs');
ok(PartHeal::rounds_pass($node, 3), 'e: and completes rounds with the table due again');
$log = substr(slurp_file($node->logfile), $log_at);
$said = () = $log =~ /PHL07 the window .* of "?public\.big"? is left in DEFAULT: it holds more than 100000 rows there/g;
is($said, 1, 'e: the window was not tried again: its back-off outlasted both');
is($sql->(q{SELECT backing_off >= 1 FROM partheal_workers() WHERE datname = current_database()}), 't',
  'e: and still shows');

###########################################################################
# d. Anyone who can put a row in DEFAULT chooses its key: the worker makes
# windows only from 30 days back (at most 1,000 windows) to premake after
# now's, and leaves the rest in DEFAULT, counted and said once. Late rows
# within the reach move: 20 days late, or in a window that closed long ago
# (before: only premake windows back, so both stayed in DEFAULT for good).
$log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE pub (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE pub_default PARTITION OF pub DEFAULT;
  SELECT partheal_manage('pub', interval '1 day', premake => 2);
  INSERT INTO pub (at, body) VALUES (now() - interval '1 day', 'near'),
    (now() - interval '20 days', 'late'), (now() - interval '29 days', 'late'),
    (now() - interval '40 days', 'far'), (now() + interval '30 days', 'future');
});
ok(defined $within->(q{SELECT string_agg(body, ',' ORDER BY body) = 'far,future' FROM ONLY pub_default}, 30),
  'd: the rows within 30 days back move to their windows, 20 and 29 days late too');
ok(defined $within->(q{SELECT default_expired_rows = 1 FROM partheal_stats WHERE parent = 'pub'::regclass}, 90),
  'd: the row 40 days back is counted in partheal_stats.default_expired_rows');
is($sql->(q{SELECT string_agg(body, ',' ORDER BY body) FROM ONLY pub_default}), 'far,future',
  'd: the rows 40 days back and 30 days ahead stay in DEFAULT');
is($sql->(q{SELECT count(*) FROM windows('pub') WHERE hi <= now() - interval '31 days' OR lo >= now() + interval '3 days'}),
  '0', 'd: no window outside the reach was made');
is($sql->(q{SELECT count(*) FROM windows('pub') WHERE lo > now() - interval '19 days' AND hi <= now() - interval '3 days'}),
  '0', 'd: and none between the late rows\' windows: only those rows\' windows were made');
my $pub_log = substr(slurp_file($node->logfile), $log_at);
my $phl11 = () = $pub_log =~ /PHL11 the DEFAULT partition of "?public\.pub"? holds 1 row older than the oldest window the drain makes/g;
is($phl11, 1, 'd: and said once (PHL11)');

# d2. The owner sets the reach at registration: drain_reach => 10 days
# drains a row 5 days late and leaves one 20 days late in DEFAULT, counted;
# registered again without it, the table keeps it.
like($sql->(q{
  CREATE TABLE pr (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE pr_default PARTITION OF pr DEFAULT;
  SELECT partheal_manage('pr', interval '1 day', premake => 1, drain_reach => interval '10 days');
}), qr/^"pr" is managed: windows of 1 day in UTC, 1 kept ahead, DEFAULT drained back 10 days; /,
  'd2: partheal_manage says how far back the drain reaches');
$sql->(q{INSERT INTO pr (at, body) VALUES (now() - interval '5 days', 'late'), (now() - interval '20 days', 'far')});
ok(defined $within->(q{SELECT string_agg(body, ',') = 'far' FROM ONLY pr_default}, 30),
  'd2: the row 5 days late moves to its window');
ok(defined $within->(q{SELECT default_expired_rows = 1 FROM partheal_stats WHERE parent = 'pr'::regclass}, 90),
  'd2: the row 20 days late, past drain_reach, stays in DEFAULT and is counted');
is($sql->(q{SELECT count(*) FROM windows('pr') WHERE hi <= now() - interval '11 days'}), '0',
  'd2: no window past drain_reach was made');
$sql->(q{SELECT partheal_manage('pr', interval '1 day', premake => 1)});
is($sql->(q{SELECT drain_reach FROM partheal_config WHERE parent = 'pr'::regclass}), '10 days',
  'd2: registered again without drain_reach, the table keeps it');

###########################################################################
# f. The switch per table: registered with drain_default => false, a
# table's DEFAULT keeps its rows while another table drains, and the worker
# says it once with the WARNING; registered again with the default, its rows
# move. partheal_stats counts what the drain moved and estimates what
# DEFAULT holds.
$log_at = -s $node->logfile;
my $pub_drained = $sql->(q{SELECT drained_rows FROM partheal_stats WHERE parent = 'pub'::regclass});
# The window of two days ago is in pub's band and not made yet, so the
# control row goes to DEFAULT first.
$sql->(q{
  CREATE TABLE sw (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE sw_default PARTITION OF sw DEFAULT;
  SELECT partheal_manage('sw', interval '1 day', drain_default => false);
  INSERT INTO sw (at, body) VALUES (now() - interval '1 day', 'kept'), (now() - interval '2 days', 'kept');
  INSERT INTO pub (at, body) VALUES (now() - interval '2 days', 'control');
});
ok(defined $within->(q{SELECT count(*) = 0 FROM ONLY pub_default WHERE body = 'control'}, 30),
  'f: another table drains meanwhile');
ok(PartHeal::rounds_pass($node, 2), 'f: and the worker polled again since');
is($sql->(q{SELECT count(*) FROM ONLY sw_default}), '2', 'f: the table registered with drain_default => false keeps its rows in DEFAULT');
is($sql->(q{SELECT count(*) FROM windows('sw')}), '0', 'f: and gets no window');
is($sql->(q{SELECT drain_default, drained_rows, drained_windows FROM partheal_stats WHERE parent = 'sw'::regclass}),
  'f|0|0', 'f: partheal_stats shows the switch off and nothing moved');
ok(defined $within->(q{SELECT default_rows = 2 FROM partheal_stats WHERE parent = 'sw'::regclass}, 30),
  'f: and estimates the two rows in DEFAULT (default_rows)');
is($sql->(q{SELECT drained_rows FROM partheal_stats WHERE parent = 'pub'::regclass}) - $pub_drained, 1,
  'f: the other table\'s drained_rows counts the row it moved');
my $phl08 = () = substr(slurp_file($node->logfile), $log_at)
  =~ /WARNING:  PHL08 "public\.sw" has a DEFAULT partition "public\.sw_default": rows without a partition of their own go there/g;
is($phl08, 1, 'f: the worker says once that the table is not drained (PHL08, a WARNING)');
$log_at = -s $node->logfile;
$sql->(q{SELECT partheal_manage('sw', interval '1 day', drain_default => true)});
ok(defined $within->(q{SELECT count(*) = 0 FROM ONLY sw_default}, 30),
  'f: registered again with drain_default => true, its rows move');
like(substr(slurp_file($node->logfile), $log_at),
  qr/LOG:  PHL08 "public\.sw" has a DEFAULT partition "public\.sw_default": rows without a window of their own go there, and the worker makes their windows/,
  'f: and the worker says that it drains it now (PHL08, a LOG)');
is($sql->(q{SELECT count(DISTINCT tableoid) FROM sw}), '2', 'f: into their two windows');
is($sql->(q{SELECT drain_default, drained_rows, drained_windows FROM partheal_stats WHERE parent = 'sw'::regclass}),
  't|2|2', 'f: partheal_stats counts two rows in two windows');
ok(defined $within->(q{SELECT default_rows = 0 FROM partheal_stats WHERE parent = 'sw'::regclass}, 30),
  'f: and estimates DEFAULT empty');
# Drained, the table gets windows ahead as a table without DEFAULT does:
# now's and premake (4) after it, each attached past DEFAULT, so that a
# DEFAULT now() row goes straight into its window.
ok(defined $within->(q{SELECT count(*) = 5 FROM windows('sw') WHERE hi > now()}, 30),
  'f: the worker makes now\'s window and the four after it');
isnt($sql->(q{INSERT INTO sw (body) VALUES ('now') RETURNING tableoid::regclass}), 'sw_default',
  'f: a row of now() lands in its window, not in DEFAULT');
# The poll after the last of them says when the next comes.
ok(defined $within->(q{SET TimeZone = 'UTC'; SELECT ahead_created = 5 AND next_reason LIKE 'when the clock reaches %'
    AND next_window = format('[%s, %s)', date_trunc('day', now() + interval '5 days'),
                             date_trunc('day', now() + interval '6 days'))
  FROM partheal_stats WHERE parent = 'sw'::regclass}, 10),
  'f: partheal_stats counts them in ahead_created, and says which comes next and when')
  or diag($sql->(q{SELECT ahead_created, next_reason, next_window FROM partheal_stats WHERE parent = 'sw'::regclass}));

###########################################################################
# g. Older snapshots: a REPEATABLE READ transaction that took its snapshot
# before a move, and selects the window by its key after it, would see
# none of the moved rows (its plan prunes DEFAULT, the window's rows are
# newer than its snapshot). The drain holds the move back while such a
# transaction runs, says so once (PHL12), and moves the rows when it ends.
# With partheal.drain_snapshot_wait run out, it moves them anyway, and says
# so (PHL12): what docs/time-keys.md says remains.
my ($y_lo, $y_hi, $b_lo, $b_hi) = split /\|/, $sql->(q{
  SELECT d - interval '1 day', d, d - interval '3 days', d - interval '2 days'
    FROM (SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS d) t});
$sql->(qq{
  CREATE TABLE rr (at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE rr_default PARTITION OF rr DEFAULT;
  INSERT INTO rr SELECT '$y_lo'::timestamptz + i * interval '1 minute', 'y' FROM generate_series(1, 100) i;
});
my $by_key = sub { my ($lo, $hi) = @_; qq{SELECT count(*) FROM rr WHERE at >= '$lo' AND at < '$hi'} };
my $rr = $node->background_psql('postgres');
$rr->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1});
my $g_at = -s $node->logfile;
$sql->(q{SELECT partheal_manage('rr', interval '1 day', time_zone => 'UTC')});
my $held = PartHeal::logged_within($node,
  qr/PHL12 the drain of the DEFAULT partition of \S*\brr\b\S* holds back the move of the window FROM \(.*?\) TO \(.*?\) while \d+ transactions? with an older snapshot runs?/,
  $g_at, 30);
ok(defined $held, 'g: the drain holds the move back while a REPEATABLE READ transaction older than it runs (PHL12)');
# A table registered after that line is seen at a later poll, and held
# back too: rr was polled again meanwhile, and its rows stayed.
$sql->(qq{
  CREATE TABLE rr_later (at timestamptz NOT NULL) PARTITION BY RANGE (at);
  CREATE TABLE rr_later_default PARTITION OF rr_later DEFAULT;
  INSERT INTO rr_later SELECT '$y_lo'::timestamptz + i * interval '1 minute' FROM generate_series(1, 10) i;
  SELECT partheal_manage('rr_later', interval '1 day', time_zone => 'UTC');
});
ok(defined PartHeal::logged_within($node,
    qr/PHL12 the drain of the DEFAULT partition of \S*\brr_later\b\S* holds back the move of the window FROM \(.*?\) TO \(.*?\) while \d+ transactions? with an older snapshot runs?/,
    $g_at, 30),
  'g: a table registered later is held back too, at a later poll');
# Windows ahead are still made while the move is held (the drain makes
# them on a table with a DEFAULT): the window two days ahead is made, and
# made again when taken away.
my $ahead = $sql->(q{SELECT 'rr_p' || to_char((now() AT TIME ZONE 'UTC')::date + 2, 'YYYYMMDD')});
ok(defined $within->(qq{SELECT to_regclass('$ahead') IS NOT NULL}, 30),
  'g: windows ahead are made while the move is held back');
# In one transaction: a round between the two would see the window missing
# and its name still taken, and make it under another name.
$sql->(qq{BEGIN; ALTER TABLE rr DETACH PARTITION $ahead; DROP TABLE $ahead; COMMIT});
ok(defined $within->(qq{SELECT to_regclass('$ahead') IS NOT NULL}, 30),
  'g: and one taken away is made again');
is($sql->(q{SELECT count(*) FROM ONLY rr_default}), '100', 'g: DEFAULT still holds the rows');
is($rr->query_safe($by_key->($y_lo, $y_hi)), '100',
  "g: the old snapshot sees every row when it selects the window by its key");
is($rr->query_safe(q{SELECT count(*) FROM rr}), '100', 'g: and when it reads the whole parent');
$rr->query_safe('COMMIT');
my $moved = $within->(q{SELECT NOT EXISTS (SELECT FROM ONLY rr_default) AND NOT EXISTS (SELECT FROM ONLY rr_later_default)}, 30);
ok(defined $moved, 'g: once it has ended, the rows move');
is($sql->($by_key->($y_lo, $y_hi)), '100', 'g: every row is in the window');
# Said once the move's transaction has committed: waited for, not read at
# once.
ok(defined PartHeal::logged_within($node,
    qr/PHL12 the drain of the DEFAULT partition of \S*\brr\b\S* moved the rows of the window FROM \(.*?\) TO \(.*?\): the transactions with older snapshots had let go of them/,
    $g_at, 30),
  'g: and the log says why they move now');

# partheal.drain_snapshot_wait run out: the move goes ahead.
$sql->(q{ALTER SYSTEM SET partheal.drain_snapshot_wait = '2s'; SELECT pg_reload_conf()});
ok(defined $within->(q{SELECT current_setting('partheal.drain_snapshot_wait') = '2s'}, 10),
  'g: partheal.drain_snapshot_wait is 2 s');
# One old snapshot holds the drain back while the rows are written, and a
# second is taken after them.
# The second session connects first: under valgrind a connection takes
# longer than the wait.
my $rr2 = $node->background_psql('postgres');
$rr->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1});
$g_at = -s $node->logfile;
$sql->(qq{INSERT INTO rr SELECT '$b_lo'::timestamptz + i * interval '1 minute', 'b' FROM generate_series(1, 50) i});
$rr2->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1});
my $anyway = PartHeal::logged_within($node,
  qr/PHL12 the drain of the DEFAULT partition of \S*\brr\b\S* moved the rows of the window FROM \(.*?\) TO \(.*?\) while \d+ transactions? with an older snapshot still ran, after waiting \d+ ms \(partheal\.drain_snapshot_wait\)/,
  $g_at, 60);
ok(defined $anyway, 'g: after partheal.drain_snapshot_wait, the drain moves the rows anyway, and says so (PHL12)');
ok(defined $within->(q{SELECT NOT EXISTS (SELECT FROM ONLY rr_default)}, 30), 'g: and they move');
# The drain moved past those two: a later window moves without waiting
# for them again. (Before rr2 reads the table: a transaction that holds a
# lock on the parent holds a move off by that lock, whatever the wait.)
my $waived_at = -s $node->logfile;
$sql->(qq{INSERT INTO rr VALUES ('$b_lo'::timestamptz - interval '1 day' + interval '1 hour', 'c')});
ok(defined $within->(q{SELECT NOT EXISTS (SELECT FROM ONLY rr_default)}, 30),
  'g: a later window moves while the transactions the drain moved past still run')
  or diag($sql->(q{SELECT l.pid, l.relation::regclass, l.mode, l.granted, a.query FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.relation IN ('rr'::regclass, 'rr_default'::regclass)}));
unlike(substr(slurp_file($node->logfile), $waived_at), qr/PHL12 [^\n]*\brr\b[^\n]* holds back/,
  'g: without holding back for them again');
# What remains, as the docs say: the snapshot taken after the rows were
# written, and before they moved, misses them when it selects their
# window by its key, and finds them when it reads the whole parent.
is($rr2->query_safe($by_key->($b_lo, $b_hi)), '0',
  'g: a snapshot older than a move that went ahead misses the rows by key (the documented gap)');
is($rr2->query_safe(q{SELECT count(*) FROM rr}), '150', 'g: and reads them in DEFAULT by the whole parent');
$rr->query_safe('COMMIT');
$rr2->query_safe('COMMIT');
$rr->quit;
$rr2->quit;
$sql->(q{ALTER SYSTEM RESET partheal.drain_snapshot_wait; SELECT pg_reload_conf()});

###########################################################################
# c. With partheal.drain_default off (read at reload), rows stay in
# DEFAULT, and a registration's WARNING names the setting; turned on again,
# they move.
$node->append_conf('postgresql.conf', "partheal.drain_default = off\n");
$node->reload;
ok(defined $within->(q{SELECT current_setting('partheal.drain_default') = 'off'}, 10), 'c: the setting is off');
ok(PartHeal::rounds_pass($node, 2), 'c: the worker polled since the reload');
# Three days ago is in sw's band (premake 4), and its window not made.
$sql->(q{INSERT INTO sw (at, body) VALUES (now() - interval '3 days', 'off')});
ok(PartHeal::rounds_pass($node, 3), 'c: the worker polled three times since the row came');
is($sql->(q{SELECT count(*) FROM ONLY sw_default WHERE body = 'off'}), '1',
  'c: with the setting off, DEFAULT keeps a row the drain would move');
$sql->(q{CREATE TABLE offt (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
  CREATE TABLE offt_default PARTITION OF offt DEFAULT});
my ($rc_off, $out_off, $err_off) = $node->psql('postgres', q{SELECT partheal_manage('offt', interval '1 day')});
like($err_off, qr/WARNING:  "offt" has a DEFAULT partition: .*\nDETAIL:  partheal\.drain_default is off on this server/,
  'c: a registration meanwhile says that the server\'s setting keeps its DEFAULT as it is');
$node->append_conf('postgresql.conf', "partheal.drain_default = on\n");
$node->reload;
ok(defined $within->(q{SELECT count(*) = 0 FROM ONLY sw_default WHERE body = 'off'}, 30),
  'c: turned on again at reload, it moves');

$node->stop;
done_testing();
