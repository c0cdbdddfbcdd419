// topology_checks.hpp: checks of the machines a topology describes (topology_checks.cpp), run by
// Topology::build after the links are read. ConfigError naming the node.
#pragma once

#include "topologies/topology.hpp"

namespace gradsync {

// check_nvlink_domains: no NVLink domain spans two hosts (multi-node NVLink is not modelled).
void check_nvlink_domains(const Topology& t);
// check_nics: every NIC has a PCIe link into its host.
void check_nics(const Topology& t);
// check_fabrics: a network switch, or a NIC, has network links of one type (InfiniBand or Ethernet).
void check_fabrics(const Topology& t);
// check_gpus_connected: every GPU reaches the first one; hosts apart because one's NIC has no
// network link name that NIC.
void check_gpus_connected(const Topology& t);
// check_hosts_joined: every host's GPUs are joined inside it, not only through the network (run
// once every GPU is known to reach every other).
void check_hosts_joined(const Topology& t);

}  // namespace gradsync
