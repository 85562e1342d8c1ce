"""OpenFlow 1.3 agents (os-ken) that serve the southbound gRPC device services for Open
vSwitch bridges: OCS bridges (cross-connects as flow pairs) and block switches (WCMP select
groups, source and transit tables, probe-based neighbour discovery)."""
