# A Citus cluster on loopback ports for the TAP tests of make test-citus: a
# coordinator and two workers, each preloading citus first and partheal.
package Citus;
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();

# Starts the three nodes, makes the citus extension in each node's postgres
# database, registers the coordinator and adds the workers. Extra settings
# for every node in $extra. Returns (coordinator, worker1, worker2).
sub new_cluster {
  my (%opts) = @_;
  my @nodes;
  for my $name ('coordinator', 'worker1', 'worker2') {
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init;
    # Citus connects between the nodes over TCP on localhost.
    $node->append_conf('pg_hba.conf', "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n");
    $node->append_conf('postgresql.conf', join("\n",
      "shared_preload_libraries = 'citus,partheal'",
      "listen_addresses = 'localhost'",
      "max_worker_processes = 32",
      "max_prepared_transactions = 50",
      "citus.node_conninfo = 'sslmode=prefer'",
      "lc_messages = 'C'",
      # The log carries each line's SQLSTATE, so a test can check the code
      # of an error partheal only logs (PHL03).
      "log_error_verbosity = verbose",
      $opts{extra} // '', ''));
    $node->start;
    $node->safe_psql('postgres', 'CREATE EXTENSION citus');
    push @nodes, $node;
  }
  my ($c, @workers) = @nodes;
  $c->safe_psql('postgres', "SELECT citus_set_coordinator_host('localhost', " . $c->port . ')');
  $c->safe_psql('postgres', "SELECT citus_add_node('localhost', " . $_->port . ')') for @workers;
  return @nodes;
}

# The ids of `table` grouped by how many times each is there: (rows,
# distinct ids), read on `node`.
sub counts {
  my ($node, $table) = @_;
  return split /\|/, $node->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM $table");
}

1;
