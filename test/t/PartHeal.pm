# A cluster with partheal preloaded, for the TAP tests.
package PartHeal;
use strict;
use warnings;
use PostgreSQL::Test::Cluster;

sub new_node {
  my ($name, %opts) = @_;
  my $node = PostgreSQL::Test::Cluster->new($name);
  $node->init;
  $node->append_conf('postgresql.conf', "shared_preload_libraries = 'partheal'")
    unless $opts{no_preload};
  $node->append_conf('postgresql.conf', "max_worker_processes = 16\nlc_messages = 'C'\n");
  $node->start;
  return $node;
}

1;
