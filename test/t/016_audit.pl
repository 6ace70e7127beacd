# A permission hook (pgaudit's, sepgsql's) sees every statement's relations;
# partheal's direct single-row insert is no statement, so while such a hook
# is loaded every append runs its INSERT, and the audit log has it.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use PartHeal;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => "pgaudit is not installed for this server ($pkglibdir)"
  unless -e "$pkglibdir/pgaudit.so";

my $node = PostgreSQL::Test::Cluster->new('audit');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'partheal,pgaudit'
pgaudit.log = 'write'
lc_messages = 'C'
});
$node->start;
$node->safe_psql('postgres', q{
  CREATE EXTENSION partheal;
  CREATE EXTENSION pgaudit;
  CREATE TABLE audited (id bigserial, body text) PARTITION BY RANGE (id);
  SELECT partheal_manage('audited', 100, NULL);
  CREATE TABLE audited_t (at timestamptz NOT NULL DEFAULT now(), body text) PARTITION BY RANGE (at);
  SELECT partheal_manage('audited_t', interval '1 day', premake => 0);
});

my $from = -s $node->logfile;
$node->safe_psql('postgres', q{SELECT partheal_append('audited', '{"body": "one"}')});
$node->safe_psql('postgres', q{SELECT partheal_append('audited_t', '{"body": "two"}')});
my $log = slurp_file($node->logfile, $from);
like($log, qr/AUDIT: SESSION,\d+,\d+,WRITE,INSERT,,,"?INSERT INTO public\.audited \(id, body\) VALUES/,
  'the id-keyed append is audited as its INSERT');
like($log, qr/AUDIT: SESSION,\d+,\d+,WRITE,INSERT,,,"?INSERT INTO public\.audited_t \(at, body\) VALUES/,
  'the time-keyed append is audited as its INSERT');
is($node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM audited) + (SELECT count(*) FROM audited_t)'),
  '2', 'both rows landed, once');
$node->safe_psql('postgres', q{ALTER TABLE audited ADD CONSTRAINT no_bad CHECK (body <> 'bad')});
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT partheal_append('audited', '{"body": "bad"}')});
like($err, qr/violates check constraint "no_bad".*CONTEXT:  SQL statement "INSERT INTO public\.audited/s,
  'an error comes from the INSERT statement');

# The same appends without the hook go in directly: nothing to audit, and
# an error carries no CONTEXT line of an INSERT statement.
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'partheal'");
$node->restart;
$from = -s $node->logfile;
$node->safe_psql('postgres', q{SELECT partheal_append('audited', '{"body": "three"}')});
$log = slurp_file($node->logfile, $from);
unlike($log, qr/AUDIT:/, 'without pgaudit nothing is audited');
is($node->safe_psql('postgres', 'SELECT count(*) FROM audited'), '2', 'the row landed');
($ret, $out, $err) = $node->psql('postgres', q{SELECT partheal_append('audited', '{"body": "bad"}')});
like($err, qr/violates check constraint "no_bad"/, 'the same error without pgaudit');
unlike($err, qr/CONTEXT:  SQL statement/, 'from the direct insert: no INSERT statement ran');

$node->stop;
done_testing();
