"""The emulated OCS as a NETCONF datastore: state for <get>, the running configuration for
<get-config>, and <edit-config> applied with the fence, all or nothing, through
:meth:`ServedOcs.apply` (the same device model the native servicer serves)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from lxml import etree

from emulation.admission.fencing import EpochFence, StaleEpoch
from emulation.admission.idempotency import request_digest
from emulation.errors import ApplyAborted, DeviceRefusal, GenerationMismatch, MalformedRequest, NoPower
from emulation.ocs_device import ServedOcs
from emulation.standard.netconf.edit import Edit
from emulation.standard.netconf.replies import RpcFailure
from southbound.standard.netconf import encoding, rpc_errors
from southbound.standard.netconf.encoding import NS, RequestResult, q
from southbound.types import CrossConnect, OcsInfo, OcsPortStatus

log = logging.getLogger(__name__)

SECTIONS = ("system-info", "fence-state", "cross-connects", "ports")
MAX_RESULTS = 1024


class OcsDatastore:
    """One device's NETCONF view; thread-safe (edits are serialised across sessions)."""

    def __init__(self, device: ServedOcs, fence: EpochFence | None = None) -> None:
        self.device = device
        #: the device's highest epoch; pass the native servicer's to fence both protocols as one
        self.fence = fence or EpochFence(device.name)
        self._edit_lock = threading.Lock()
        self._results: OrderedDict[str, RequestResult] = OrderedDict()
        self._seen: OrderedDict[tuple[str, int], tuple[str, int]] = OrderedDict()

    def info(self) -> OcsInfo:
        d = self.device
        half, split = d.radix // 2, d.sides == "split"
        return OcsInfo(name=d.name, radix=d.radix, sides="north_south" if split else "any",
                       north_ports=tuple(range(half)) if split else (),
                       south_ports=tuple(range(half, d.radix)) if split else (),
                       generation=d.generation, switching_time_s=d.switching_time_s, powered=d.powered)

    # -- reading ----------------------------------------------------------------------------
    def fill(self, data: etree._Element, subtree: etree._Element | None, config_only: bool) -> None:
        """Fill <data> with what the subtree filter selects (everything without one)."""
        wanted: dict[str, etree._Element | None] = {}
        if subtree is None:
            wanted = dict.fromkeys(("cross-connects",) if config_only else SECTIONS)
        else:
            for element in subtree:
                if isinstance(element.tag, str) and etree.QName(element).namespace == NS:
                    name = etree.QName(element).localname
                    if name in SECTIONS and (not config_only or name == "cross-connects"):
                        wanted[name] = element
        generation, items = self.device.cross_connects()
        if "system-info" in wanted:
            encoding.info_to_xml(data, self.info())
        if "fence-state" in wanted:
            ids = _selected(wanted["fence-state"], "request", "request-id")
            with self._edit_lock:
                requests = [(i, r) for i, r in self._results.items() if ids is None or i in ids]
            encoding.fence_state_to_xml(data, generation, self.fence.highest, requests)
        if "cross-connects" in wanted:
            encoding.table_to_xml(data, items, with_status=not config_only)
        if "ports" in wanted:
            ids = _selected(wanted["ports"], "port", "port-id")
            ports = range(self.device.radix) if ids is None else sorted(
                int(p) for p in ids if p.isdigit() and int(p) < self.device.radix)
            statuses = self.device.port_status(list(ports)) if ports else []
            encoding.ports_to_xml(data, [OcsPortStatus(**s) for s in statuses])  # type: ignore[arg-type]

    # -- editing ----------------------------------------------------------------------------
    def edit(self, edit: Edit) -> RequestResult:
        fence = edit.fence
        with self._edit_lock:
            self._admit(fence.epoch)
            generation, items = self.device.cross_connects()
            expected = generation if fence.expected_generation is None else fence.expected_generation
            digest = request_digest({"pairs": edit.pairs, "clear": edit.clear})
            seen = self._seen.get((fence.request_id, expected)) if fence.request_id else None
            if seen is not None:
                if seen[0] != digest:
                    raise RpcFailure("invalid-value", f"request-id {fence.request_id[:64]!r} was used for a "
                                     "different edit; a replay must repeat the edit exactly",
                                     path="/hos:fence/hos:request-id")
                return self._record(fence.request_id, RequestResult(seen[1], True))
            present = {c for c, _ in items}
            remove, add = _changes(edit, present)
            try:
                generation, replayed = self.device.apply(
                    fence.request_id, expected, [(c.a, c.b) for c in remove], [(c.a, c.b) for c in add])
            except DeviceRefusal as refusal:
                raise _failure(refusal, edit, present) from refusal
            if fence.request_id:
                self._seen[(fence.request_id, expected)] = (digest, generation)
                while len(self._seen) > MAX_RESULTS:
                    self._seen.popitem(last=False)
            return self._record(fence.request_id, RequestResult(generation, replayed))

    def _admit(self, epoch: int) -> None:
        try:
            self.fence.admit(epoch)
        except StaleEpoch as refusal:
            raise RpcFailure("operation-failed", refusal.message, app_tag=rpc_errors.EPOCH_FENCED,
                             path="/hos:fence/hos:epoch",
                             info={"highest-epoch": refusal.highest_epoch}) from refusal

    def _record(self, request_id: str, result: RequestResult) -> RequestResult:
        if request_id:
            self._results[request_id] = result
            self._results.move_to_end(request_id)
            while len(self._results) > MAX_RESULTS:
                self._results.popitem(last=False)
        return result


def _selected(element: etree._Element | None, item: str, key: str) -> set[str] | None:
    """The keys a filter's content-match nodes select in ``element``'s list (None: all)."""
    if element is None:
        return None
    keys = {(found.text or "").strip() for entry in element.iterfind(q(item))
            if (found := entry.find(q(key))) is not None}
    return keys or None


def _changes(edit: Edit, present: set[CrossConnect]) -> tuple[list[CrossConnect], list[CrossConnect]]:
    """(remove, add) of the edit's operations against the present circuits: create and delete
    go to the device as they are (it refuses an existing or absent pair); merge skips an
    existing pair, remove an absent one; replace swaps the circuit on the ingress port."""
    on_port = {p: c for c in present for p in (c.a, c.b)}
    remove: list[CrossConnect] = sorted(present) if edit.clear else []
    add: list[CrossConnect] = []
    for operation, ingress, egress in edit.pairs:
        pair = CrossConnect(ingress, egress) if egress is not None else on_port.get(ingress)
        if pair is None:  # delete or remove by ingress alone, no circuit there
            if operation == "delete":
                raise RpcFailure("data-missing", f"no cross-connect on port {ingress} to remove",
                                 path=f"/hos:cross-connects/hos:pair[hos:ingress='{ingress}']")
            continue
        if operation == "create" or (operation == "merge" and pair not in present):
            add.append(pair)
        elif operation == "delete" or (operation == "remove" and pair in present):
            remove.append(pair)
        elif operation == "replace":
            old = on_port.get(ingress)
            if old is not None and old != pair:
                remove.append(old)
            if pair not in present:
                add.append(pair)
    return remove, add


def _failure(refusal: DeviceRefusal, edit: Edit, present: set[CrossConnect]) -> RpcFailure:
    info = {} if refusal.generation is None else {"current-generation": refusal.generation}
    if isinstance(refusal, GenerationMismatch):
        return RpcFailure("operation-failed", refusal.message, app_tag=rpc_errors.GENERATION_MISMATCH,
                          path="/hos:fence/hos:expected-generation", info=info)
    if isinstance(refusal, MalformedRequest):
        created = [CrossConnect(i, e) for op, i, e in edit.pairs if op == "create" and e is not None]
        existing = next((c for c in created if c in present), None)
        if existing is not None:
            return RpcFailure("data-exists",
                              f"cross-connect {existing.a}-{existing.b} exists: {refusal.message}",
                              path=f"/hos:cross-connects/hos:pair[hos:ingress='{existing.a}']")
        if refusal.message.startswith("no cross-connect"):
            return RpcFailure("data-missing", refusal.message, path="/hos:cross-connects")
        return RpcFailure("invalid-value", refusal.message, app_tag=rpc_errors.INVALID_CROSS_CONNECT,
                          path="/hos:cross-connects")
    if isinstance(refusal, ApplyAborted):
        return RpcFailure("operation-failed", refusal.message, app_tag=rpc_errors.APPLY_ABORTED, info=info)
    if isinstance(refusal, NoPower):
        return RpcFailure("resource-denied", refusal.message, app_tag=rpc_errors.NO_POWER)
    log.warning("%s: edit failed: %s", edit.fence.request_id, refusal.message)
    return RpcFailure("operation-failed", refusal.message, info=info)
