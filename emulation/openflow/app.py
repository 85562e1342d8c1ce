"""The os-ken application: a thin shim that hands OpenFlow events to the device objects
(OpenFlowOcs, OpenFlowBlockSwitch) that own the logic, and sends neighbour probes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

from emulation.errors import DeviceRefusal
from emulation.openflow.block import OpenFlowBlockSwitch
from emulation.openflow.channel import Channel, SwitchRejected, SwitchUnreachable
from emulation.openflow.ocs import OpenFlowOcs, ocs_base_flows

log = logging.getLogger(__name__)

Device = OpenFlowOcs | OpenFlowBlockSwitch


class FabricDevices:
    """The devices one agent serves, by datapath id, and their live channels."""

    def __init__(self, devices: dict[int, Device], probe_interval_s: float) -> None:
        self.by_dpid = devices
        self.probe_interval_s = probe_interval_s
        self.channels: dict[int, Channel] = {}
        #: called with (device name, attached?) when a bridge attaches or goes away
        self.listeners: list[Callable[[str, bool], None]] = []

    def notify(self, name: str, attached: bool) -> None:
        for listener in self.listeners:
            listener(name, attached)


class HeliostatOpenFlowApp(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, heliostat_devices: FabricDevices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.devices = heliostat_devices
        self._stop = threading.Event()
        self._prober = threading.Thread(target=self._probe_loop, name="probes", daemon=True)
        self._prober.start()

    def stop(self) -> None:
        self._stop.set()
        super().stop()

    # -- connection ---------------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPStateChange, MAIN_DISPATCHER)
    def _connected(self, ev: Any) -> None:
        datapath = ev.datapath
        device = self.devices.by_dpid.get(datapath.id)
        if device is None:
            log.warning("datapath %#x is not in the spec; ignoring it", datapath.id)
            return
        # Attach in a thread: attaching waits for replies that this handler's thread reads.
        threading.Thread(target=self._attach, args=(device, datapath), daemon=True,
                         name=f"attach-{device.name}").start()

    def _attach(self, device: Device, datapath: Any) -> None:
        channel = Channel(datapath)
        old = self.devices.channels.get(datapath.id)
        self.devices.channels[datapath.id] = channel
        if old is not None:
            old.close()
        try:
            if isinstance(device, OpenFlowOcs):
                channel.transact(ocs_base_flows(channel))
            device.attach(channel)
        except (SwitchUnreachable, SwitchRejected, DeviceRefusal) as exc:
            log.error("%s: setting up datapath %#x failed: %s", device.name, datapath.id, exc)
            return
        log.info("%s: datapath %#x attached", device.name, datapath.id)
        self.devices.notify(device.name, True)

    @set_ev_cls(ofp_event.EventOFPStateChange, DEAD_DISPATCHER)
    def _dead(self, ev: Any) -> None:
        datapath = ev.datapath
        if datapath.id is None:
            return
        channel = self.devices.channels.get(datapath.id)
        if channel is not None and channel.datapath is datapath:
            del self.devices.channels[datapath.id]
            channel.close()
            device = self.devices.by_dpid.get(datapath.id)
            if device is not None:
                device.detach(channel)
                self.devices.notify(device.name, False)
            log.warning("datapath %#x disconnected", datapath.id)

    # -- replies ------------------------------------------------------------------------
    def _channel(self, msg: Any) -> Channel | None:
        channel = self.devices.channels.get(msg.datapath.id)
        return channel if channel is not None and channel.datapath is msg.datapath else None

    @set_ev_cls([ofp_event.EventOFPBarrierReply, ofp_event.EventOFPPortStatsReply,
                 ofp_event.EventOFPFlowStatsReply, ofp_event.EventOFPGroupStatsReply,
                 ofp_event.EventOFPGroupDescStatsReply, ofp_event.EventOFPPortDescStatsReply],
                MAIN_DISPATCHER)
    def _reply(self, ev: Any) -> None:
        channel = self._channel(ev.msg)
        if channel is not None:
            channel.on_reply(ev.msg)

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def _error(self, ev: Any) -> None:
        channel = self._channel(ev.msg)
        if channel is not None:
            channel.on_error(ev.msg)

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def _port_status(self, ev: Any) -> None:
        device = self.devices.by_dpid.get(ev.msg.datapath.id)
        if device is not None:
            device.port_changed(ev.msg.desc.port_no, ev.msg.desc.state)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev: Any) -> None:
        device = self.devices.by_dpid.get(ev.msg.datapath.id)
        if isinstance(device, OpenFlowBlockSwitch):
            device.on_packet_in(ev.msg.match.get("in_port", 0), ev.msg.data)

    # -- probes -------------------------------------------------------------------------
    def _probe_loop(self) -> None:
        while not self._stop.wait(self.devices.probe_interval_s):
            for device in self.devices.by_dpid.values():
                if not isinstance(device, OpenFlowBlockSwitch) or device.channel is None:
                    continue
                try:
                    device.channel.send(device.probe_messages())
                except SwitchUnreachable:
                    continue
