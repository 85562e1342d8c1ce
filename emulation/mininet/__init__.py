"""The packet-level fabric: Open vSwitch bridges in Mininet, driven by the OpenFlow agent."""
