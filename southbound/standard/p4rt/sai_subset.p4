// The WCMP routing subset of PINS's SAI P4 program (sai_p4, fabric-switch build) that
// Heliostat programs over P4Runtime. It documents sai_subset.p4info.txtpb; it is not
// compiled (the emulated switch and the driver read the P4Info).
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("", string) type bit<10> vrf_id_t;
@p4runtime_translation("", string) type bit<12> wcmp_group_id_t;
@p4runtime_translation("", string) type bit<10> nexthop_id_t;
@p4runtime_translation("", string) type bit<10> neighbor_id_t;
@p4runtime_translation("", string) type bit<10> router_interface_id_t;
@p4runtime_translation("", string) type bit<9> port_id_t;

struct routing_metadata_t {
  vrf_id_t vrf_id;
  bit<32> ipv4_dst;
  bool nexthop_id_valid;
  nexthop_id_t nexthop_id;
  bool wcmp_group_id_valid;
  wcmp_group_id_t wcmp_group_id;
  router_interface_id_t router_interface_id;
  neighbor_id_t neighbor_id;
  port_id_t egress_port;
  bit<48> src_mac;
  bit<48> dst_mac;
  bit<16> wcmp_hash;
}

control routing(inout routing_metadata_t meta, inout standard_metadata_t std) {
  action drop() { mark_to_drop(std); }
  action set_nexthop_id(nexthop_id_t nexthop_id) {
    meta.nexthop_id_valid = true;
    meta.nexthop_id = nexthop_id;
  }
  action set_wcmp_group_id(wcmp_group_id_t wcmp_group_id) {
    meta.wcmp_group_id_valid = true;
    meta.wcmp_group_id = wcmp_group_id;
  }
  action set_ip_nexthop(router_interface_id_t router_interface_id, neighbor_id_t neighbor_id) {
    meta.router_interface_id = router_interface_id;
    meta.neighbor_id = neighbor_id;
  }
  action set_dst_mac(bit<48> dst_mac) { meta.dst_mac = dst_mac; }
  action set_port_and_src_mac(port_id_t port, bit<48> src_mac) {
    meta.egress_port = port;
    meta.src_mac = src_mac;
  }

  // Source groups live in VRF "heliostat-source", transit groups in "heliostat-transit";
  // Heliostat's generation marker is a vrf_table entry "heliostat-gen-<N>".
  table vrf_table {
    key = { meta.vrf_id : exact @name("vrf_id"); }
    actions = { @defaultonly NoAction; }
    const default_action = NoAction;
    size = 64;
  }

  // The per-destination-block byte counters are this table's direct counter.
  direct_counter(CounterType.bytes) ipv4_table_counter;
  table ipv4_table {
    key = {
      meta.vrf_id : exact @name("vrf_id");
      meta.ipv4_dst : lpm @name("ipv4_dst");
    }
    actions = { drop; set_nexthop_id; set_wcmp_group_id; }
    const default_action = drop;
    counters = ipv4_table_counter;
    size = 32768;
  }

  // A group's size is the sum of its members' weights: 256 per group, 49,152 per switch.
  @max_group_size(256)
  @selector_size_semantics(sum_of_weights)
  action_selector(HashAlgorithm.identity, 49152, 16) wcmp_group_selector;
  table wcmp_group_table {
    key = {
      meta.wcmp_group_id : exact @name("wcmp_group_id");
      meta.wcmp_hash : selector;
    }
    actions = { set_nexthop_id; }
    implementation = wcmp_group_selector;
    size = 3968;
  }

  table nexthop_table {
    key = { meta.nexthop_id : exact @name("nexthop_id"); }
    actions = { set_ip_nexthop; }
    size = 1024;
  }
  table neighbor_table {
    key = {
      meta.router_interface_id : exact @name("router_interface_id");
      meta.neighbor_id : exact @name("neighbor_id");
    }
    actions = { set_dst_mac; }
    size = 1024;
  }
  table router_interface_table {
    key = { meta.router_interface_id : exact @name("router_interface_id"); }
    actions = { set_port_and_src_mac; }
    size = 1024;
  }

  apply {
    vrf_table.apply();
    ipv4_table.apply();
    if (meta.wcmp_group_id_valid) { wcmp_group_table.apply(); }
    if (meta.nexthop_id_valid) {
      nexthop_table.apply();
      router_interface_table.apply();
      neighbor_table.apply();
    }
  }
}
