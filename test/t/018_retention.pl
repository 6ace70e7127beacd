# Retention of time-keyed tables: windows whose real upper bound is at or
# before now() - retention are detached and dropped (or kept as tables) by
# the worker, under live writers, with the attach's lock discipline; windows
# made by hand are judged by their bounds; a window foreign keys reference is
# left and said once; a long reader makes retention give way, not the
# writers wait; and no window that retention would drop is made. The same
# for an id-keyed table, below the highest id its rows hold.
# Its assertions time the server: make test runs it with no other TAP file beside it.
# TAP lane: alone
# What differs between majors: make test runs it on 17 too.
# TAP majors: every
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;

my $valgrind = $ENV{PARTHEAL_VALGRIND};

my $node = PartHeal::new_node('retention',
  conf => "track_commit_timestamp = on\npartheal.naptime = '200ms'\nwal_level = logical\nmax_wal_senders = 4\nmax_replication_slots = 4\n");
my $sql = sub { $node->safe_psql('postgres', shift) };
$sql->('CREATE EXTENSION partheal');
PartHeal::create_windows_function($node);
my $within = sub { PartHeal::within($node, @_) };
# A writer of one INSERT every 5 ms for 600 rounds, each timed; the longest,
# in ms, goes into the table $lat.
my $timed_writer = sub {
  my ($table, $lat) = @_;
  $sql->(qq{
  DO \$\$
  DECLARE t0 timestamptz; worst float8 := 0;
  BEGIN
    FOR i IN 1..600 LOOP
      t0 := clock_timestamp();
      INSERT INTO $table (body) VALUES ('w');
      worst := greatest(worst, extract(epoch FROM clock_timestamp() - t0) * 1000);
      COMMIT;
      PERFORM pg_sleep(0.005);
    END LOOP;
    INSERT INTO $lat VALUES (worst);
  END \$\$;
  });
};

# An event trigger that refuses the DROP of the named table in public,
# named refuse_drop_of_<table>.
my $refuse_drop_of = sub {
  my ($table) = @_;
  $sql->(qq{
  CREATE FUNCTION refuse_drop_of_$table() RETURNS event_trigger LANGUAGE plpgsql AS \$\$
  BEGIN
    IF EXISTS (SELECT FROM pg_event_trigger_dropped_objects() WHERE object_identity = 'public.$table') THEN
      RAISE EXCEPTION '$table is not to be dropped';
    END IF;
  END \$\$;
  CREATE EVENT TRIGGER refuse_drop_of_$table ON sql_drop EXECUTE FUNCTION refuse_drop_of_$table();
  });
};

# e (made first). A table with a DEFAULT that holds a row past the
# horizon: the drain counts such rows once a minute, and e checks a count
# taken after a DELETE, at the end of the file, so the table is made
# before the rest and its counts come round while they run.
my $late_log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE late (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE late_default PARTITION OF late DEFAULT;
  -- In DEFAULT before the registration: the drain's first look, a minute
  -- before its next count, finds the row past the horizon there.
  INSERT INTO late VALUES (now() - interval '5 days', 'past the horizon'), (now() - interval '1 day', 'kept');
  SELECT partheal_manage('late', interval '1 day', premake => 10, retention => interval '2 days');
});

###########################################################################
# a. Windows of one second kept for three, under a plain INSERT writer of
# now(): the old windows go, one after the other, and no INSERT fails. The
# table has no DEFAULT partition: each goes by DETACH ... CONCURRENTLY.
SKIP: {
skip 'the writer needs native speed', 7 if $valgrind;
$sql->(q{
  CREATE TABLE ticks (at timestamptz NOT NULL DEFAULT clock_timestamp(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('ticks', interval '1 second', premake => 2, retention => interval '3 seconds');
});
my $log_at = -s $node->logfile;
my $w = PartHeal::start_writers($node, 2, 8, q{INSERT INTO ticks (body) VALUES ('w');});
my ($rounds, $failed, @errors) = PartHeal::finish_writers($w);
cmp_ok($rounds, '>', 500, "a: the writers wrote ($rounds rounds)");
is($failed, 0, 'a: no INSERT failed while retention dropped windows') or diag(join("\n", @errors));
ok(defined $within->(q{SELECT count(*) = 0 FROM windows('ticks') WHERE hi <= now() - interval '3 seconds'}, 10),
  'a: every window that ended three seconds ago or more is gone');
is($sql->(q{SELECT count(*) FROM windows('ticks') WHERE lo <= now() - interval '2 seconds' AND hi > now() - interval '2 seconds'}), '1',
  'a: the window of two seconds ago, inside the retention period, stays');
my $dropped = $sql->(q{SELECT dropped_windows FROM partheal_stats WHERE parent = 'ticks'::regclass});
cmp_ok($dropped, '>=', 5, "a: partheal_stats counts the windows dropped ($dropped)");
my $log = substr(slurp_file($node->logfile), $log_at);
my $phl09 = () = $log =~ /PHL09 retention detached "public\.ticks_p\d{8}_\d{6}" FOR VALUES FROM \('[^']+'\) TO \('[^']+'\) from "public\.ticks" and dropped it: its upper bound is at or before the horizon, [^;]+; detached it concurrently: the parent was held for \d+ ms up to its first commit in SHARE UPDATE EXCLUSIVE, against neither writers nor readers/g;
cmp_ok($phl09, '>=', $dropped, "a: each is logged (PHL09, $phl09 lines)");
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'ticks\_p%' AND NOT relispartition}), '0',
  'a: and no table is left behind');
}

###########################################################################
# b. Real bounds: a wide window made by hand that still holds rows inside
# the retention period stays, a misaligned old one goes; with
# retention_keep_table the window is kept as a plain table, owned as before.
$sql->(q{
  CREATE ROLE keeper;
  GRANT CREATE ON SCHEMA public TO keeper;
  CREATE TABLE days (at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  ALTER TABLE days OWNER TO keeper;
  -- Wide: from 40 days ago to yesterday's midnight, so its upper bound is
  -- after the horizon of 2 days at any hour; its last row is a minute before
  -- that bound (a row at now() - 36 hours would miss it after noon).
  -- Misaligned: from noon 60 days ago to 40 days ago.
  CREATE TABLE days_wide (LIKE days);
  ALTER TABLE days ATTACH PARTITION days_wide FOR VALUES FROM (date_trunc('day', now()) - interval '40 days') TO (date_trunc('day', now()) - interval '1 day');
  CREATE TABLE days_old (LIKE days);
  ALTER TABLE days ATTACH PARTITION days_old FOR VALUES FROM (date_trunc('day', now()) - interval '60 days' + interval '12 hours') TO (date_trunc('day', now()) - interval '40 days');
  ALTER TABLE days_wide OWNER TO keeper;
  ALTER TABLE days_old OWNER TO keeper;
  INSERT INTO days VALUES (now() - interval '50 days', 'old'), (now() - interval '30 days', 'wide'), (date_trunc('day', now()) - interval '1 day' - interval '1 minute', 'wide, recent');
  SET ROLE keeper;
  SELECT partheal_manage('days', interval '1 day', retention => interval '2 days', retention_keep_table => true);
  RESET ROLE;
});
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_inherits WHERE inhrelid = 'days_old'::regclass}, 30),
  'b: the misaligned old window, past the horizon, is detached');
is($sql->(q{SELECT relispartition, pg_get_userbyid(relowner), (SELECT count(*) FROM days_old) FROM pg_class WHERE oid = 'days_old'::regclass}),
  'f|keeper|1', 'b: and kept as a plain table, owned as before, with its row (retention_keep_table)');
ok(PartHeal::rounds_pass($node, 2), 'b: the worker polled again since');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'days_wide'::regclass}), '1',
  'b: the wide window that reaches into the retention period stays');
is($sql->(q{SELECT string_agg(body, ',' ORDER BY body) FROM days}), 'wide,wide, recent',
  'b: with its rows, old and recent');
is($sql->(q{SELECT detached_windows, dropped_windows, retention, retention_keep_table FROM partheal_stats WHERE parent = 'days'::regclass}),
  '1|0|2 days|t', 'b: partheal_stats counts it as detached, and shows the retention');
$sql->(q{SET ROLE keeper; SELECT partheal_manage('days', interval '1 day', premake => 3, retention => interval '2 days')});
is($sql->(q{SELECT premake, retention_keep_table FROM partheal_config WHERE parent = 'days'::regclass}), '3|t',
  'b: registered again without retention_keep_table, the table keeps it');

###########################################################################
# c. Foreign keys reference the table: a due window is left attached, said
# once.
my $log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE refd (at timestamptz NOT NULL PRIMARY KEY) PARTITION BY RANGE (at);
  CREATE TABLE refd_old (LIKE refd);
  ALTER TABLE refd ATTACH PARTITION refd_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  CREATE TABLE refs (at timestamptz REFERENCES refd (at));
  SELECT partheal_manage('refd', interval '1 day', retention => interval '2 days');
});
ok(PartHeal::rounds_pass($node, 4), 'c: the worker polled four times since');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'refd_old'::regclass}), '1',
  'c: a window other tables reference through foreign keys stays attached');
my $phl10 = () = substr(slurp_file($node->logfile), $log_at) =~ /PHL10 retention left "public\.refd_old" FOR VALUES .* attached to "public\.refd": foreign keys reference it/g;
is($phl10, 1, 'c: said once (PHL10)');

###########################################################################
# d. A long reader holds a table with a DEFAULT partition, which rules out
# DETACH CONCURRENTLY: the plain DETACH gives way and tries again, and a
# writer meanwhile is not held behind it.
$sql->(q{
  CREATE TABLE held (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE held_default PARTITION OF held DEFAULT;
  CREATE TABLE held_old (LIKE held);
  ALTER TABLE held ATTACH PARTITION held_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  CREATE TABLE lat (ms float8);
});
my $reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM held});
$log_at = -s $node->logfile;
$sql->(q{SELECT partheal_manage('held', interval '1 day', retention => interval '2 days')});
# A writer of one INSERT every 5 ms, each timed, for 4 s while the reader holds.
$timed_writer->('held', 'lat');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'held_old'::regclass}), '1',
  'd: while a reader holds the table, the due window stays');
# The drain's attach of today's window comes first in the poll, and gives
# way to the reader too (PHL07): retention's attempts may end after the
# writer's.
ok($node->wait_for_log(
    qr/PHL10 retention left "public\.held_old" FOR VALUES .* attached to "public\.held": its locks could not be had in 5 attempts of 200 ms/,
    $log_at), 'd: retention tried, and gave way (PHL10)');
my $worst = $sql->(q{SELECT round(ms) FROM lat});
# Under valgrind every statement is slower: the bound is only that the
# writer did not wait for the reader.
cmp_ok($worst, '<', $valgrind ? 3000 : 500,
  "d: and the writer is not held behind retention's wait for more than its budget (longest INSERT $worst ms)");
$reader->query_safe('COMMIT');
$reader->quit;
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'held_old'}, 60),
  'd: the reader gone, the window is dropped at a retry');

###########################################################################
# e. No window that retention would drop at once is made: an append of a
# row past the horizon is refused (PH005) with nothing created; with a
# DEFAULT, such a row lands there and stays.
$sql->(q{
  CREATE TABLE young (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('young', interval '1 day', retention => interval '2 days');
});
my ($rc, $out, $err) = $node->psql('postgres',
  q{SELECT partheal_append('young', '{"at": "2001-01-01 00:00:00+00", "body": "too old"}')});
like($err, qr/ERROR:  "at" 2001-01-01 00:00:00\+00 of "young" is older than the table's retention/,
  'e: an append past the horizon is refused');
is($sql->(q{SELECT count(*) FROM windows('young') WHERE lo < '2002-01-01'}), '0', 'e: and nothing is created');
($rc, $out, $err) = $node->psql('postgres',
  q{\set VERBOSITY verbose
    SELECT partheal_append('young', '{"at": "2001-01-01 00:00:00+00", "body": "too old"}')});
like($err, qr/ERROR:  PH005/, 'e: with its own SQLSTATE, PH005');
ok(defined $within->(q{SELECT count(*) = 0 FROM ONLY late_default WHERE body = 'kept'}, 30),
  'e: with a DEFAULT, a row within the retention period drains to its window');
ok(PartHeal::rounds_pass($node, 2), 'e: the worker polled again since');
is($sql->(q{SELECT body FROM ONLY late_default}), 'past the horizon',
  'e: a row past the horizon stays in DEFAULT, inside the drain\'s band or not');
is($sql->(q{SELECT count(*) FROM windows('late') WHERE hi <= now() - interval '2 days'}), '0',
  'e: and its window is not made');
ok(defined $within->(q{SELECT default_expired_rows = 1 FROM partheal_stats WHERE parent = 'late'::regclass}, 30),
  'e: partheal_stats counts it (default_expired_rows)');
my $phl11 = () = substr(slurp_file($node->logfile), $late_log_at) =~
  /PHL11 the DEFAULT partition of "public\.late" holds 1 row older than the retention horizon's window, which starts at .+?: partheal makes no window for them and never drops them/g;
is($phl11, 1, 'e: and says so once (PHL11)');
$sql->(q{DELETE FROM late_default});

###########################################################################
# f. An id-keyed table with a retention of 300 ids: at position 1000, the
# partitions ending at or below id 700 go, and an id below it is refused.
$sql->(q{
  CREATE TABLE msg (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('msg', 100, premake => 1, retention => 300);
  SELECT count(*) FROM partheal_append('msg', (SELECT jsonb_agg(jsonb_build_object('body', 'm')) FROM generate_series(1, 1000)));
});
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname IN ('msg_p0', 'msg_p100', 'msg_p200', 'msg_p300', 'msg_p400', 'msg_p500', 'msg_p600')}, 30),
  'f: the partitions ending at or below the position minus 300 ids are dropped');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'msg'::regclass AND inhrelid IN ('msg_p700'::regclass, 'msg_p800'::regclass, 'msg_p900'::regclass, 'msg_p1000'::regclass)}),
  '4', 'f: the ones above stay');
is($sql->(q{SELECT min(id), max(id), count(*) FROM msg}), '700|1000|301', 'f: with their rows');
is($sql->(q{SELECT dropped_windows, retention_ids FROM partheal_stats WHERE parent = 'msg'::regclass}),
  '7|300', 'f: partheal_stats counts them and shows the retention');
($rc, $out, $err) = $node->psql('postgres', q{SELECT partheal_append('msg', '{"id": 150, "body": "old"}')});
like($err, qr/ERROR:  "id" 150 of "msg" is older than the table's retention/,
  'f: the owner\'s append of an id below the horizon is refused, not healed again');
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname = 'msg_p100'}), '0', 'f: and nothing is created');

###########################################################################
# g. An id-keyed table's horizon counts from the highest id its rows hold,
# never from the sequence: a session's CACHE of 1,000 ids puts last_value at
# 1,000 after the first row, and a role with INSERT and USAGE can draw
# 20,000 numbers without writing one. Neither may drop a row. The canary
# rcc, whose seven due partitions retention drops one per round, shows that
# rounds went by meanwhile.
$log_at = length(slurp_file($node->logfile));
$sql->(q{
  CREATE TABLE rc (id bigserial, v int) PARTITION BY RANGE (id);
  ALTER SEQUENCE rc_id_seq CACHE 1000;
  SELECT partheal_manage('rc', 100, premake => 2, retention => 300);
  CREATE TABLE dr (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('dr', 100, premake => 2, retention => 1000);
  SELECT count(*) FROM partheal_append('dr', (SELECT jsonb_agg(jsonb_build_object('v', g)) FROM generate_series(1, 500) g));
  CREATE ROLE drawer LOGIN;
  GRANT INSERT ON dr TO drawer;
  GRANT USAGE ON SEQUENCE dr_id_seq TO drawer;
  CREATE TABLE rcc (id bigserial, v int) PARTITION BY RANGE (id);
  SELECT partheal_manage('rcc', 100, premake => 0, retention => 300);
});
is($node->safe_psql('postgres', q{SELECT count(nextval('dr_id_seq')) FROM generate_series(1, 20000)},
                    extra_params => ['-U', 'drawer']),
  '20000', 'g: a role with INSERT and USAGE drew 20,000 ids and wrote none');
# One session: its first INSERT caches ids 1 to 1,000; it waits for the
# canary's partitions to go, and inserts again from its cache.
($rc, $out, $err) = $node->psql('postgres', q{
  INSERT INTO rc (v) VALUES (1);
  SELECT count(*) FROM partheal_append('rcc', (SELECT jsonb_agg(jsonb_build_object('v', g)) FROM generate_series(1, 1000) g));
  DO $$ BEGIN
    FOR i IN 1..1200 LOOP
      EXIT WHEN NOT EXISTS (SELECT FROM pg_class WHERE relname = 'rcc_p600');
      PERFORM pg_sleep(0.05);
    END LOOP;
  END $$;
  SELECT count(*) = 0 FROM pg_class WHERE relname IN ('rcc_p0', 'rcc_p600');
  INSERT INTO rc (v) VALUES (2) RETURNING id;
});
is($rc, 0, 'g: the cached session\'s second INSERT succeeds') or diag($err);
is($out, "1000\nt\n2", 'g: after the canary\'s seven partitions went, one a round, it draws id 2');
is($sql->(q{SELECT string_agg(id::text, ',' ORDER BY id) FROM rc}), '1,2', 'g: both rows of the cached session are there');
is($sql->(q{SELECT last_value FROM rc_id_seq}), '1000', 'g: while the sequence stands at the end of the cached range');
is($sql->(q{SELECT count(*), min(id), max(id) FROM dr}), '500|1|500', 'g: the owner\'s 500 rows are all there, the sequence past 20,000');
is($sql->(q{SELECT string_agg(dropped_windows::text, ',' ORDER BY parent::text) FROM partheal_stats WHERE parent IN ('rc'::regclass, 'dr'::regclass)}),
  '0,0', 'g: retention dropped nothing of either');
my $churn = () = substr(slurp_file($node->logfile), $log_at) =~ /PHL09 retention detached "?public"?\.(rc|dr)_p/g;
is($churn, 0, 'g: and logged no PHL09 for them');

###########################################################################
# h. A date key: windows of whole days, the horizon the last midnight at or
# before now() - retention. A window ending at it goes; one reaching past it
# stays.
$sql->(q{
  CREATE TABLE dd (d date NOT NULL, v int) PARTITION BY RANGE (d);
  CREATE TABLE dd_old (LIKE dd);
  ALTER TABLE dd ATTACH PARTITION dd_old FOR VALUES FROM (current_date - 30) TO (current_date - 10);
  CREATE TABLE dd_edge (LIKE dd);
  ALTER TABLE dd ATTACH PARTITION dd_edge FOR VALUES FROM (current_date - 10) TO (current_date - 8);
  INSERT INTO dd VALUES (current_date - 20, 1), (current_date - 9, 2);
  SELECT partheal_manage('dd', interval '1 day', retention => interval '9 days');
});
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'dd_old'}, 30),
  'h: a date window ending ten days ago goes, with a retention of nine');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'dd_edge'::regclass}), '1',
  'h: the one ending eight days ago, past the horizon, stays');
is($sql->(q{SELECT string_agg(v::text, ',') FROM dd}), '2', 'h: with its row');

###########################################################################
# i. A DROP that fails (a view on the window) takes its DETACH back, is
# logged, and is tried again; once the view is gone, the window goes.
$log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE viewed (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
  CREATE TABLE viewed_old (LIKE viewed);
  ALTER TABLE viewed ATTACH PARTITION viewed_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  CREATE VIEW on_old AS SELECT * FROM viewed_old;
  SELECT partheal_manage('viewed', interval '1 day', retention => interval '2 days');
});
ok(PartHeal::rounds_pass($node, 3), 'i: the worker polled three times since');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'viewed_old'::regclass}), '1',
  'i: a window whose DROP fails stays attached: the detach is taken back with it');
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL10 retention of "public\.viewed" failed: cannot drop table public\.viewed_old because other objects depend on it/,
  'i: the failure is logged (PHL10)');
$sql->('DROP VIEW on_old');
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'viewed_old'}, 90),
  'i: the view gone, the window goes at a retry');

###########################################################################
# j. A long reader holds a table without DEFAULT: DETACH CONCURRENTLY's
# first transaction takes the window out of the table, its second gives way
# after the lock budget (the reader is older than the detach), and the
# writer never waits; once the reader is gone, FINALIZE completes it at the
# next polls, not when a back-off grown meanwhile (1, 2, 4 s) runs out.
$sql->(q{
  CREATE TABLE cc (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE cc_old (LIKE cc);
  ALTER TABLE cc ATTACH PARTITION cc_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  INSERT INTO cc VALUES (now() - interval '25 days', 'old');
  CREATE TABLE lat_cc (ms float8);
});
$reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM cc});
$log_at = -s $node->logfile;
$sql->(q{SELECT partheal_manage('cc', interval '1 day', retention => interval '2 days')});
$timed_writer->('cc', 'lat_cc');
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL10 retention's DETACH CONCURRENTLY of "public\.cc_old" from "public\.cc" stopped: canceling statement due to (lock|statement) timeout/,
  'j: the second transaction of DETACH CONCURRENTLY gave way to the older reader (PHL10)');
is($sql->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'cc_old'::regclass}), 't',
  'j: the window is left detach-pending');
is($sql->(q{SELECT count(*) FROM cc WHERE body = 'old'}), '0', 'j: out of the table for a new query');
$worst = $sql->(q{SELECT round(ms) FROM lat_cc});
cmp_ok($worst, '<', $valgrind ? 3000 : 500,
  "j: and the writer did not wait for it (longest INSERT $worst ms)");
# The reader holds on to 4 s past the first give-way, on the server's
# clock: the back-off alone tries again 1, 3 and 7 s after it.
my $logged_at = sub {
  my ($pattern) = @_;
  my ($at) = substr(slurp_file($node->logfile), $log_at) =~ /^(\S+ \S+ UTC) \[\d+\] (?:\S+ )?LOG:  $pattern/m;
  return $at;
};
my $gave_way_at = $logged_at->(q{PHL10 retention's DETACH CONCURRENTLY of "public\.cc_old"});
ok(defined $within->("SELECT clock_timestamp() >= '$gave_way_at'::timestamptz + interval '4 seconds'", 60),
  'j: the reader holds 4 s past the give-way');
my $commit_at = $sql->(q{SELECT clock_timestamp()});
$reader->query_safe('COMMIT');
$reader->quit;
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'cc_old'}, 90),
  'j: the reader gone, the detach is completed and the window dropped');
my $dropped_at = $logged_at->(q{PHL09 retention detached "public\.cc_old"});
my $after = $sql->("SELECT round(extract(epoch FROM '$dropped_at'::timestamptz - '$commit_at'::timestamptz) * 1000)");
cmp_ok($after, '<', $valgrind ? 60000 : 1500,
  "j: at the first polls after the reader's end ($after ms), not at the back-off's next try (7 s after the give-way)");
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL09 retention detached "public\.cc_old" FOR VALUES .* from "public\.cc" and dropped it: its upper bound is at or before the horizon, [^;]+; completed a pending DETACH CONCURRENTLY \(FINALIZE\)/,
  'j: with FINALIZE (PHL09)');

###########################################################################
# m. A user's DETACH CONCURRENTLY still waiting in its second transaction is
# left to finish: the worker does not FINALIZE it under it. And a DROP that
# fails after DETACH CONCURRENTLY (an event trigger refuses it) takes its
# transaction back; the detach is completed without it, the window kept as
# a plain table and said (PHL10), and the table's retention goes on.
$sql->(q{
  CREATE TABLE um (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE um_mid (LIKE um);
  ALTER TABLE um ATTACH PARTITION um_mid FOR VALUES FROM (now() - interval '1 day') TO (now() + interval '1 day');
  SELECT partheal_manage('um', interval '1 day', retention => interval '2 days');
});
$reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM um});
my $detacher = $node->background_psql('postgres');
$detacher->query_until(qr/started/, q{\echo started
ALTER TABLE um DETACH PARTITION um_mid CONCURRENTLY;
\echo detached
});
ok(defined $within->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'um_mid'::regclass}, 10),
  'm: a user\'s DETACH CONCURRENTLY waits in its second transaction');
ok(PartHeal::rounds_pass($node, 3), 'm: the worker polled three times since');
is($sql->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'um_mid'::regclass}), 't',
  'm: and left it pending');
$reader->query_safe('COMMIT');
$reader->quit;
ok($detacher->query_until(qr/detached/, ''), 'm: and the user\'s command completes itself');
$detacher->quit;
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'um_mid'::regclass}), '0', 'm: detached');

$log_at = -s $node->logfile;
$refuse_drop_of->('nd_old');
$sql->(q{
  CREATE TABLE nd (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
  CREATE TABLE nd_old (LIKE nd);
  ALTER TABLE nd ATTACH PARTITION nd_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  CREATE TABLE nd_newer (LIKE nd);
  ALTER TABLE nd ATTACH PARTITION nd_newer FOR VALUES FROM (now() - interval '20 days') TO (now() - interval '10 days');
  SELECT partheal_manage('nd', interval '1 day', retention => interval '2 days');
});
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_inherits WHERE inhrelid = 'nd_old'::regclass}, 30),
  'm: a window whose DROP an event trigger refuses is detached all the same');
is($sql->(q{SELECT relispartition FROM pg_class WHERE oid = 'nd_old'::regclass}), 'f', 'm: and kept as a plain table');
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL10 retention detached "public\.nd_old" FOR VALUES .* from "public\.nd" but could not drop it: nd_old is not to be dropped/,
  'm: said (PHL10)');
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'nd_newer'}, 30),
  'm: and the table\'s next due window is dropped after it: its retention goes on');
$sql->(q{DROP EVENT TRIGGER refuse_drop_of_nd_old});

# m2. A table more than two windows behind goes in batches: one whose DROP
# of its third partition an event trigger refuses is taken back whole and
# said (PHL10), no PHL09 line names a partition that is still there, and
# the windows go one at a time then, the refused one kept as a table.
$log_at = -s $node->logfile;
$refuse_drop_of->('bt_p200');
$sql->(q{
  CREATE TABLE bt (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('bt', 100, premake => 1, retention => 300);
  SELECT count(*) FROM partheal_append('bt', (SELECT jsonb_agg(jsonb_build_object('body', 'b')) FROM generate_series(1, 1000)));
});
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_inherits WHERE inhrelid IN (SELECT oid FROM pg_class WHERE relname IN ('bt_p0', 'bt_p100', 'bt_p200', 'bt_p300', 'bt_p400', 'bt_p500', 'bt_p600'))}, 30),
  'm2: the due partitions are detached, the batch refused');
my $bt_log = substr(slurp_file($node->logfile), $log_at);
like($bt_log, qr/PHL10 retention's batch of \d+ due partitions of "public\.bt" failed, and was taken back whole: bt_p200 is not to be dropped/,
  'm2: the refused batch is said (PHL10)');
my @bt_said = $bt_log =~ /PHL09 retention detached "public\.(bt_p\d+)" [^\n]* and dropped it/g;
is($sql->(q{SELECT count(*) FROM pg_class WHERE relname IN ('} . join("', '", @bt_said, 'none') . q{')}), '0',
  'm2: every partition PHL09 says was dropped is gone (' . join(', ', @bt_said) . ')');
is($sql->(q{SELECT relispartition FROM pg_class WHERE relname = 'bt_p200'}), 'f', 'm2: the refused one is kept as a plain table');
ok(defined $within->(q{SELECT dropped_windows = 6 FROM partheal_stats WHERE parent = 'bt'::regclass}, 30),
  'm2: and the six others are dropped and counted once each');
$sql->(q{DROP EVENT TRIGGER refuse_drop_of_bt_p200});

###########################################################################
# l. A publication of the table through its root, and a subscriber with a
# plain table of that name: every row written reaches it, in the windows
# the worker makes as well, and it keeps them when retention detaches and
# drops their windows here (DDL is not replicated, and a DETACH or DROP
# deletes no row).
$sql->(q{
  CREATE TABLE feed (at timestamptz NOT NULL DEFAULT clock_timestamp(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('feed', interval '1 second', premake => 2, retention => interval '3 seconds');
  CREATE PUBLICATION feed_pub FOR TABLE feed WITH (publish_via_partition_root = true);
});
my $subscriber = PostgreSQL::Test::Cluster->new('subscriber');
$subscriber->init;
$subscriber->start;
$subscriber->safe_psql('postgres', 'CREATE TABLE feed (at timestamptz NOT NULL, body text)');
my $publisher = $node->connstr() . ' dbname=postgres';
$subscriber->safe_psql('postgres', "CREATE SUBSCRIPTION feed_sub CONNECTION '$publisher' PUBLICATION feed_pub");
$subscriber->wait_for_subscription_sync($node, 'feed_sub');
my $w = PartHeal::start_writers($node, 2, $valgrind ? 4 : 8, q{INSERT INTO feed (body) VALUES ('w');});
my ($rounds, $failed, @errors) = PartHeal::finish_writers($w);
is($failed, 0, 'l: no INSERT into the published table failed') or diag(join("\n", @errors));
ok(defined $within->(q{SELECT dropped_windows >= 3 FROM partheal_stats WHERE parent = 'feed'::regclass}, 30),
  'l: retention dropped windows of the published table');
$node->wait_for_catchup('feed_sub');
my $here = $sql->(q{SELECT count(*) FROM feed});
cmp_ok($here, '<', $rounds, "l: here the dropped windows' rows are gone ($here of $rounds left)");
is($subscriber->safe_psql('postgres', 'SELECT count(*) FROM feed'), $rounds,
  "l: the subscriber has every row written ($rounds), those of dropped windows too");
# The drain leaves a published table's DEFAULT alone: a move is a DELETE
# and an INSERT to a subscriber.
$log_at = -s $node->logfile;
$sql->(q{
  CREATE TABLE feed_late (at timestamptz NOT NULL, body text) PARTITION BY RANGE (at);
  CREATE TABLE feed_late_default PARTITION OF feed_late DEFAULT;
  INSERT INTO feed_late VALUES (now() - interval '1 day', 'late');
  CREATE PUBLICATION late_pub FOR TABLE feed_late WITH (publish_via_partition_root = true);
  SELECT partheal_manage('feed_late', interval '1 day');
});
ok($node->wait_for_log(
    qr/PHL07 partheal: the window FROM \('[^']+'\) TO \('[^']+'\) of "feed_late" was not attached: the table is published for logical replication/,
    $log_at), 'l: the drain does not move rows of a published table (PHL07)');
is($sql->(q{SELECT count(*) FROM ONLY feed_late_default}), '1', 'l: they stay in DEFAULT');
$subscriber->stop;

###########################################################################
# o. Retention keeps pace under writers whose transactions overlap, and no
# writer waits for it: the window is polled for alone (SHARE ROW EXCLUSIVE
# on it), the parent only in DETACH CONCURRENTLY's own SHARE UPDATE
# EXCLUSIVE. Before, partheal polled for SHARE ROW EXCLUSIVE on the parent,
# a moment with no writer's transaction open, which these writers never
# leave: 13 to 15 windows more than 2 s past the horizon stayed attached.
SKIP: {
skip 'the writers need native speed', 10 if $valgrind;
$sql->(q{
  CREATE TABLE ov (at timestamptz NOT NULL DEFAULT clock_timestamp(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('ov', interval '1 second', premake => 2, retention => interval '3 seconds');
  CREATE TABLE lat_ov (ms float8);
});
my $seconds = 12;
my $t0 = time;
my $ow = PartHeal::start_writers($node, 4, $seconds,
  q{BEGIN;}, q{INSERT INTO ov (body) VALUES ('w');}, q{SELECT pg_sleep(0.3);},
  q{INSERT INTO ov (body) VALUES ('w');}, q{COMMIT;});
# A fifth writer, timed, while the others run and retention drops windows.
$timed_writer->('ov', 'lat_ov');
# From 5 s on (the first windows fall due after 3 s): the windows ending
# more than two windows before the horizon, as often as the test can look.
my $late_windows = 0;
while (time < $t0 + $seconds - 0.5) {
  Time::HiRes::sleep(0.25);
  next if time < $t0 + 5;
  my $w = $sql->(q{SELECT count(*) FROM windows('ov') WHERE hi <= now() - interval '5 seconds'});
  $late_windows = $w if $w > $late_windows;
}
my ($orounds, $ofailed, @oerrors) = PartHeal::finish_writers($ow);
note("o: $orounds rounds of overlapping writers; most windows more than 2 past the horizon: $late_windows");
is($ofailed, 0, 'o: no overlapping writer failed') or diag(join("\n", @oerrors));
# About 8 windows fall due while they run. Before, the second transaction
# of DETACH CONCURRENTLY waited 200 ms for each of these 0.3 s transactions
# and mostly gave way, and its FINALIZE was backed off 1, 2, 4, 8 s: 0 to 2
# went while the writers ran, in CI on 15 and 18.
my $ov_dropped = $sql->(q{SELECT dropped_windows FROM partheal_stats WHERE parent = 'ov'::regclass});
cmp_ok($ov_dropped, '>=', 5, "o: retention dropped the due windows while the writers ran ($ov_dropped)");
cmp_ok($late_windows, '==', 0,
  "o: and kept the table within two windows of its horizon: $late_windows more than two past it at worst (before: 13 to 15)");
my $ov_worst = $sql->(q{SELECT round(ms) FROM lat_ov});
cmp_ok($ov_worst, '<', 200, "o: a writer did not wait for retention (longest INSERT $ov_worst ms)");

# An id table under 4 appenders of 300 ids at partition size 1000: a
# partition made every few ms, most of them by heals. No append fails;
# retention is behind at once, and its due partitions go 8 at a time under
# one short hold of the parent (PHL09 "detached together"; none begun after
# 15 ms of it), where one a
# poll went before (6 in 6 s of such appenders, 1,172 to 1,271 due left).
# Most batches wait out their slice while the appenders hold the parent
# through their heals, so it does not keep up while they run (the note says
# how far behind it was); once they stop it catches up in batches, and a
# writer meanwhile waits one slice (25 ms) and a hold at most.
$sql->(q{
  CREATE TABLE idr (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('idr', 1000, premake => 2, retention => 5000);
  CREATE TABLE lat_idr (ms float8);
});
my $log_at = -s $node->logfile;
my $iw = PartHeal::start_writers($node, 4, 4,
  q{SELECT count(*) FROM partheal_append('idr', (SELECT jsonb_agg(jsonb_build_object('body', 'a')) FROM generate_series(1, 300)));});
my ($irounds, $ifailed, @ierrors) = PartHeal::finish_writers($iw);
my $due_idr = q{SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'idr'::regclass
      AND substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO [(]''?(-?[0-9]+)')::bigint
          <= (SELECT max(id) FROM idr) - 5000};
my $dropped_ids = $sql->(q{SELECT dropped_windows FROM partheal_stats WHERE parent = 'idr'::regclass});
my $due_at_stop = $sql->($due_idr);
note("o: $irounds appends of 300 in 4 s; retention dropped $dropped_ids partitions meanwhile, "
  . "$due_at_stop due ones were left when they stopped");
is($ifailed, 0, 'o: no append failed') or diag(join("\n", @ierrors));
cmp_ok($dropped_ids, '>=', 8, "o: retention dropped id partitions under the appenders ($dropped_ids)");
# A writer, timed, while retention catches up.
$timed_writer->('idr', 'lat_idr');
ok(defined $within->("SELECT ($due_idr) <= 2", 60),
  'o: once the appenders stop, retention catches up to within two partitions of its horizon');
my $idr_log = substr(slurp_file($node->logfile), $log_at);
my @batches = $idr_log =~ /PHL09 retention detached "public\.idr_p\d+" FOR VALUES FROM \(\d+\) TO \(\d+\) from "public\.idr" and dropped it: [^\n]* one of ([2-8]) due partitions detached together, the parent locked for (\d+) ms/g;
my ($most_held) = sort { $b <=> $a } map { $batches[2 * $_ + 1] } 0 .. $#batches / 2;
cmp_ok(scalar(@batches) / 2, '>=', 8, 'o: in batches of 2 to 8 partitions (PHL09)');
note("o: a batch held the parent for $most_held ms at the longest");
my $idr_worst = $sql->(q{SELECT round(ms) FROM lat_idr});
# A slice (25 ms) and a hold (no window begun after 15 ms) come to 40 ms
# and the commit: under 50 ms, the bound retention promises a writer. An
# assertion-enabled server (18 in make test-all) runs every statement
# slower: it measured up to 41 ms there, so it gets half again.
my $asserts = $sql->(q{SHOW debug_assertions}) eq 'on';
cmp_ok($idr_worst, '<', $asserts ? 75 : 50,
  "o: a writer waited a slice and a hold at most (longest INSERT $idr_worst ms)");
unlike($idr_log, qr/PHL10 [^\n]*idr[^\n]*could not be had in/,
  'o: and never gave up on one for want of its locks (PHL10 "could not be had")');
$sql->(q{SELECT partheal_unmanage('idr'); SELECT partheal_unmanage('ov')});
$sql->(q{DROP TABLE idr; DROP TABLE ov});
}

###########################################################################
# g. partheal.retention off (read at reload) keeps every window, as after
# restoring an old backup; on again, the due ones go.
$node->append_conf('postgresql.conf', "partheal.retention = off\n");
$node->reload;
ok(defined $within->(q{SELECT current_setting('partheal.retention') = 'off'}, 10), 'g: the setting is off');
ok(PartHeal::rounds_pass($node, 2), 'g: and the worker polled since the reload');
$sql->(q{
  CREATE TABLE paused (at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (at);
  CREATE TABLE paused_old (LIKE paused);
  ALTER TABLE paused ATTACH PARTITION paused_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  SELECT partheal_manage('paused', interval '1 day', retention => interval '2 days');
});
ok(PartHeal::rounds_pass($node, 3), 'g: the worker polled three times since');
is($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhrelid = 'paused_old'::regclass}), '1',
  'g: with partheal.retention off, a due window stays');
$node->append_conf('postgresql.conf', "partheal.retention = on\n");
$node->reload;
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'paused_old'}, 30),
  'g: turned on again, it goes');

###########################################################################
# e, ended. The count taken after the DELETE, a minute after the one
# before it (no restart in between: k comes after this).
ok(defined $within->(q{SELECT default_expired_rows = 0 FROM partheal_stats WHERE parent = 'late'::regclass}, 90),
  'e: deleted, the count is 0 at the next count, a minute on');

###########################################################################
# k. A crash between the two transactions of DETACH CONCURRENTLY: the
# worker waits in the second for a reader (a lock budget of a minute), the
# server stops in immediate mode; after the restart the next poll completes
# the detach with FINALIZE. While the worker waits, a heal request of
# another table is served at once: the wait gives way to it (it would
# otherwise wait 30 s, past partheal.heal_wait_timeout), and so does the
# FINALIZE's wait for its locks that comes next. And a user's own DETACH
# CONCURRENTLY that was cut short, of a window inside the retention period,
# is completed and the table kept.
$sql->(q{
  CREATE TABLE cr (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  CREATE TABLE cr_old (LIKE cr);
  ALTER TABLE cr ATTACH PARTITION cr_old FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '20 days');
  CREATE TABLE cr_new (LIKE cr);
  ALTER TABLE cr ATTACH PARTITION cr_new FOR VALUES FROM (now() - interval '1 day') TO (now() + interval '1 day');
  INSERT INTO cr VALUES (now(), 'new');
  CREATE TABLE hk (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('hk', 10, premake => 0);
});
$node->append_conf('postgresql.conf', "partheal.attach_lock_timeout = '60s'\ndeadlock_timeout = '60s'\n");
$node->reload;
# An append of 20 ids, each call crossing into partitions not made yet: its
# time in ms.
my $heal_ms = sub {
  return $sql->(q{WITH a AS MATERIALIZED (SELECT count(*) FROM partheal_append('hk',
      (SELECT jsonb_agg(jsonb_build_object('body', 'h')) FROM generate_series(1, 20))))
    SELECT round(extract(epoch FROM clock_timestamp() - now()) * 1000) FROM a});
};
$reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM cr});
$sql->(q{SELECT partheal_manage('cr', interval '1 day', retention => interval '2 days')});
ok(defined $within->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'cr_old'::regclass}, 30),
  'k: the worker is between the two transactions of DETACH CONCURRENTLY');
ok(defined $within->(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND wait_event_type = 'Lock'}, 60),
  'k: waiting for the reader');
my $parts_hk = $sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'hk'::regclass});
my $took = $heal_ms->();
cmp_ok($took, '<', $valgrind ? 10000 : 2000, "k: an append that heals meanwhile is served ($took ms)");
cmp_ok($sql->(q{SELECT count(*) FROM pg_inherits WHERE inhparent = 'hk'::regclass}), '>', $parts_hk,
  'k: by the worker, which made its partitions');
ok(defined $within->(q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'partheal worker' AND wait_event_type = 'Lock'}, 60),
  'k: and waits for the reader again');
$took = $heal_ms->();
cmp_ok($took, '<', $valgrind ? 10000 : 2000, "k: a second append that heals is served too ($took ms)");
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL10 retention[^\n]*cr[^\n]*: canceling statement due to user request\n[^\n]*DETAIL:  It gave way to a heal request, which the worker serves first\./,
  'k: the give-way is said (PHL10)');
$node->stop('immediate');
eval { $reader->quit };
$node->append_conf('postgresql.conf', "partheal.attach_lock_timeout = '200ms'\ndeadlock_timeout = '1s'\n");
$log_at = -s $node->logfile;
$node->start;
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_class WHERE relname = 'cr_old'}, 30),
  'k: after the restart, the detach is completed and the window dropped');
like(substr(slurp_file($node->logfile), $log_at),
  qr/PHL09 retention detached "public\.cr_old" FOR VALUES .* and dropped it: .*completed a pending DETACH CONCURRENTLY \(FINALIZE\)/,
  'k: with FINALIZE (PHL09)');
$reader = $node->background_psql('postgres');
$reader->query_safe(q{BEGIN; SELECT count(*) FROM cr});
($rc, $out, $err) = $node->psql('postgres', q{SET lock_timeout = '300ms'; ALTER TABLE cr DETACH PARTITION cr_new CONCURRENTLY});
like($err, qr/lock timeout/, 'k: a user\'s DETACH CONCURRENTLY cut short by its lock_timeout');
is($sql->(q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'cr_new'::regclass}), 't', 'k: leaves the window detach-pending');
$reader->query_safe('COMMIT');
$reader->quit;
ok(defined $within->(q{SELECT count(*) = 0 FROM pg_inherits WHERE inhrelid = 'cr_new'::regclass}, 30),
  'k: the worker completes it');
is($sql->(q{SELECT relispartition, (SELECT count(*) FROM cr_new) FROM pg_class WHERE oid = 'cr_new'::regclass}), 'f|1',
  'k: and keeps the table, with its row: its upper bound is after the horizon');

$node->stop;
done_testing();
