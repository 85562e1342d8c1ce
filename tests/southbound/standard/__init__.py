"""Tests of the standard southbound transports (P4Runtime, gNMI, NETCONF) against the emulated devices."""
