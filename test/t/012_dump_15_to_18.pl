# A pg_dump of a PostgreSQL 15 database with managed and attached tables,
# restored into 18: the registrations, the partitions and the rows come
# across, and the tables go on healing, creating ahead and attaching there.
# Runs under make test PG=18, which installs partheal into Debian's 15 too
# and names it in PARTHEAL_PG15; skipped elsewhere.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'make test PG=18 runs this (PARTHEAL_PG15 names the 15 to dump from)'
  unless $ENV{PARTHEAL_PG15};

my $old = PostgreSQL::Test::Cluster->new('old15', install_path => $ENV{PARTHEAL_PG15});
# Its own initdb: the run's INITDB_TEMPLATE is a data directory of the
# major under test.
$old->init(force_initdb => 1);
$old->append_conf('postgresql.conf',
  "shared_preload_libraries = 'partheal'\nmax_worker_processes = 16\nlc_messages = 'C'\n");
$old->start;
like($old->safe_psql('postgres', 'SHOW server_version_num'), qr/^15/, 'the old server is 15');
$old->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE TABLE log (id bigserial, body text) PARTITION BY RANGE (id);
  -- premake 0: the worker on 18 is to make log_p100 itself (below), which
  -- the default premake would have made at registration on 15.
  SELECT partheal_manage('log', 100, 50, premake => 0);
  SELECT partheal_append('log', jsonb_build_object('body', 'row ' || g)) FROM generate_series(1, 30) g;
  CREATE TABLE t (at date NOT NULL) PARTITION BY RANGE (at);
  CREATE TABLE t_rest PARTITION OF t DEFAULT;
  INSERT INTO t VALUES ('2026-03-03'), ('2026-04-04');
});
is($old->safe_psql('postgres', q{SELECT outcome, rows_moved FROM partheal_attach_window('t', '2026-03-01', '2026-04-01')}),
  'attached|1', 'a window attached on 15');

my $new = PartHeal::new_node('new18');
like($new->safe_psql('postgres', 'SHOW server_version_num'), qr/^18/, 'the new server is 18');

# 15's own pg_dump: Debian's 15.20 keeps a reserved column option,
# pg_attver, that its pg_dump leaves out and 18.6's pg_dump does not know:
# 18.6's dump of it carries "SET (pg_attver=...)" lines that 18.6 refuses
# ("unrecognized parameter"). That is PostgreSQL's, not partheal's; the
# README says so.
my $file = "${PostgreSQL::Test::Utils::tmp_check}/dump_15.sql";
$old->command_ok(["$ENV{PARTHEAL_PG15}/bin/pg_dump", '-f', $file, '-d', $old->connstr('postgres')],
  "15's pg_dump dumps the database");
unlike(slurp_file($file), qr/pg_attver/, 'with no reserved column option in it');
$old->stop;
$new->safe_psql('postgres', 'CREATE DATABASE restored');
$new->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $file, '-d', $new->connstr('restored')],
  'the dump restores into 18');

my $sql = sub { $new->safe_psql('restored', $_[0]) };
my $current = PartHeal::current_version();
is($sql->(q{SELECT extversion FROM pg_extension WHERE extname = 'partheal'}), $current, 'the extension is there');
is($sql->('SELECT parent::text, partition_size, mark_percent, premake FROM partheal_config'), 'log|100|50|0',
  'the registration came across');
is($sql->('SELECT count(*), count(DISTINCT id), max(id) FROM log'), '30|30|30', 'every row came across once');
is($sql->(q{SELECT tableoid::regclass, at FROM t ORDER BY at}), "t_p20260301|2026-03-03\nt_rest|2026-04-04",
  'the attached window and the DEFAULT partition came across');

# Healing: the next id the sequence hands out continues where 15 left off.
$sql->(q{SELECT partheal_append('log', '{"id": 777, "body": "explicit, missing partition"}')});
is($sql->(q{SELECT tableoid::regclass FROM log WHERE id = 777}), 'log_p700', 'an append heals on 18');
$sql->(q{SELECT partheal_append('log', jsonb_build_object('body', 'more ' || g)) FROM generate_series(1, 60) g});
is($sql->('SELECT count(*), count(DISTINCT id), max(id) FILTER (WHERE id < 700) FROM log'), '91|91|90',
  'the sequence went on from 30');
# Create-ahead: ids passed the 50% mark of log_p0, so the worker makes log_p100.
ok($new->poll_query_until('restored', q{SELECT to_regclass('log_p100') IS NOT NULL}),
  'the worker creates the next partition ahead on 18');
is($sql->(q{SELECT outcome, rows_moved FROM partheal_attach_window('t', '2026-04-01', '2026-05-01')}),
  'attached|1', 'and the next window attaches, moving its row out of DEFAULT');

$new->stop;
done_testing();
