# A cluster with partheal preloaded, for the TAP tests.
package PartHeal;
use strict;
use warnings;
use Cwd ();
use File::Basename ();
use IPC::Run;
use Time::HiRes ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();

# The version a fresh install gets: partheal.control's default_version.
# PostgreSQL 17's Cluster.pm and later copy $ENV{INITDB_TEMPLATE} for a
# node's init that gives initdb no options of its own, where 15's runs
# initdb every time (a second or more a node). The same for 15: its initdb
# call with Cluster.pm's own options only becomes a copy of the template
# (test/lib.sh's initdb_template makes it with the same initdb and options).
if (defined $ENV{INITDB_TEMPLATE}) {
  no warnings 'redefine';
  my $system_or_bail = \&PostgreSQL::Test::Utils::system_or_bail;
  *PostgreSQL::Test::Utils::system_or_bail = sub {
    return $system_or_bail->('cp', '-RPp', $ENV{INITDB_TEMPLATE}, $_[2])
      if @_ == 6 && $_[0] eq 'initdb' && $_[1] eq '-D' && join(' ', @_[3 .. 5]) eq '-A trust -N';
    return $system_or_bail->(@_);
  };
}

sub current_version {
  my $control = PostgreSQL::Test::Utils::slurp_file(
    File::Basename::dirname(Cwd::abs_path(__FILE__)) . '/../../partheal.control');
  my ($version) = $control =~ /^default_version = '([^']+)'/m;
  die "no default_version in partheal.control" unless defined $version;
  return $version;
}

sub new_node {
  my ($name, %opts) = @_;
  my $node = PostgreSQL::Test::Cluster->new($name);
  $node->init;
  $node->append_conf('postgresql.conf', "shared_preload_libraries = 'partheal'")
    unless $opts{no_preload};
  $node->append_conf('postgresql.conf', "max_worker_processes = 16\nlc_messages = 'C'\n");
  # A test's own settings, before the first start: no restart to take them.
  $node->append_conf('postgresql.conf', $opts{conf}) if defined $opts{conf};
  $node->start;
  return $node;
}

# Plain INSERT writers: each a psql reading a stream of INSERTs with
# ON_ERROR_STOP off, so that each failed INSERT is one ERROR line on its
# stderr and the stream goes on. The generator writes for $seconds; the
# stream runs ahead of psql by what the pipe holds, so each chunk of rounds
# is guarded by the clock: the first chunk psql reaches after the end
# writes how many rounds ran before it and quits, and writers whose rounds
# wait (a pg_sleep) stop on time rather than minutes later. Chunks are one
# round for such writers, 5 for appends (slow statements), 50 otherwise.
# psql runs every round it is given before the end: a row is lost only with
# an ERROR.
my $writers = 0;
sub start_writers {
  my ($node, $clients, $seconds, @statements) = @_;
  my $tmp = $PostgreSQL::Test::Utils::tmp_check;
  my $every = (grep { /pg_sleep/ } @statements) ? 1 : (grep { /partheal_append/ } @statements) ? 5 : 50;
  my $gen = q{
    use Time::HiRes 'time';
    my ($seconds, $count, $every, @statements) = @ARGV;
    my ($end, $rounds) = (time + $seconds, 0);
    my $body = join('', map { "$_\n" } @statements) x $every;
    # A print fails once psql is gone (SIGPIPE is ignored here): stop then.
    while (time < $end) {
      print sprintf('SELECT extract(epoch FROM clock_timestamp()) < %.3f AS go \gset' . "\n", $end),
        '\if :go' . "\n", $body, '\else' . "\n", '\echo STOPPED ' . $rounds . "\n", '\q' . "\n",
        '\endif' . "\n"
        or last;
      $rounds += $every;
    }
    print '\echo STOPPED ' . $rounds . "\n";
    close STDOUT;
    open(my $f, '>', $count) or die "$count: $!";
    print $f $rounds;
    close $f;
  };
  my @w;
  for (1 .. $clients) {
    my $n = ++$writers;
    my %c = (count => "$tmp/writer$$.$n.count", out => "$tmp/writer$$.$n.out", err => "$tmp/writer$$.$n.err");
    $c{h} = IPC::Run::start(['perl', '-e', $gen, $seconds, $c{count}, $every, @statements], '|',
      ['psql', '-X', '-q', '-t', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres')],
      '>', $c{out}, '2>', $c{err});
    push @w, \%c;
  }
  return \@w;
}

# Waits for them; the rounds run, the failed statements (an ERROR or FATAL
# line each, or a lost connection), and the first few of those lines.
sub finish_writers {
  my ($w) = @_;
  my ($rounds, $failed, @lines) = (0, 0);
  for my $c (@$w) {
    eval { $c->{h}->finish; 1 };
    my ($ran) = PostgreSQL::Test::Utils::slurp_file($c->{out}) =~ /^STOPPED (\d+)$/m;
    $ran //= -e $c->{count} ? PostgreSQL::Test::Utils::slurp_file($c->{count}) : 0;
    $rounds += $ran;
    for (split /\n/, PostgreSQL::Test::Utils::slurp_file($c->{err})) {
      next unless /ERROR:|FATAL:|connection to server was lost|server closed the connection/;
      $failed++;
      push @lines, $_ if @lines < 5;
    }
  }
  return ($rounds, $failed, @lines);
}

# windows(parent): a table's partitions with their bounds, and the commit
# time and xid of the transaction that made each. pg_get_expr writes bounds
# in the session's TimeZone: pinned to UTC they read back as partheal wrote
# them (with +00), whatever the node's or the client's zone.
sub create_windows_function {
  my ($node) = @_;
  $node->safe_psql('postgres', q{
  CREATE FUNCTION windows(parent regclass)
    RETURNS TABLE (part regclass, lo timestamptz, hi timestamptz, made timestamptz, xid text)
    LANGUAGE sql SET TimeZone = 'UTC' AS $$
      SELECT c.oid::regclass,
             substring(b FROM $re$FROM \('([^']+)'\)$re$)::timestamptz,
             substring(b FROM $re$TO \('([^']+)'\)$re$)::timestamptz,
             pg_xact_commit_timestamp(c.xmin), c.xmin::text
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
             LATERAL pg_get_expr(c.relpartbound, c.oid) AS b
       WHERE i.inhparent = parent AND b <> 'DEFAULT'
    $$;
  });
}

# Polls $query until it returns 't', for at most $seconds; the seconds it
# took, or undef. Each try is an eval: the TAP modules' psql helpers feed
# the query on stdin and die with "Broken pipe" when psql exits before
# reading it, as it does while the server is still in recovery (seen on
# 18's, in 1 run of 3).
sub within {
  my ($node, $query, $seconds) = @_;
  my $t0 = Time::HiRes::time();
  while (Time::HiRes::time() - $t0 < $seconds) {
    my ($rc, $out) = eval { $node->psql('postgres', $query) };
    return Time::HiRes::time() - $t0 if defined $rc && $rc == 0 && $out eq 't';
    Time::HiRes::sleep(0.05);
  }
  return undef;
}

# Seconds until $node's log, from byte $offset on, matches $regexp, or
# undef after $seconds: a wait on what the worker says, never a fixed sleep.
sub logged_within {
  my ($node, $regexp, $offset, $seconds) = @_;
  my $t0 = Time::HiRes::time();
  while (Time::HiRes::time() - $t0 < $seconds) {
    return Time::HiRes::time() - $t0
      if substr(PostgreSQL::Test::Utils::slurp_file($node->logfile), $offset) =~ $regexp;
    Time::HiRes::sleep(0.05);
  }
  return undef;
}

# Waits until the worker of database $db (default postgres) has completed
# $n more poll rounds (partheal_workers().rounds) than when called, for at
# most $seconds (default the framework's timeout, 180 s); true if it did. Two rounds after a commit
# means one that began after it: "the worker has looked, and left it be",
# a wait on the worker rather than a fixed sleep.
sub rounds_pass {
  my ($node, $n, $db, $seconds) = @_;
  $db //= 'postgres';
  my $now = q{SELECT coalesce(max(w.rounds), 0) FROM partheal_workers() w WHERE w.datid =
                (SELECT oid FROM pg_database WHERE datname = current_database())};
  my $from = $node->safe_psql($db, $now);
  my $t0 = Time::HiRes::time();
  while (Time::HiRes::time() - $t0 < ($seconds // $PostgreSQL::Test::Utils::timeout_default)) {
    my ($rc, $out) = eval { $node->psql($db, $now) };
    return 1 if defined $rc && $rc == 0 && $out >= $from + $n;
    Time::HiRes::sleep(0.1);
  }
  return 0;
}

# Waits until $node is back from a crash restart that began after log
# offset $offset; true when it answers within $seconds (default 60).
sub back_after_crash {
  my ($node, $offset, $seconds) = @_;
  $node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
  return defined within($node, 'SELECT true', $seconds // 60);
}

1;
