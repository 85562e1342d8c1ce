"""Table entries in plain Python, and their P4Runtime encoding under a :class:`Program`.

An :class:`Entry` names its table, match fields and action by their P4Info aliases and
holds values as text (SDN strings, ``a.b.c.d/len`` for an LPM field) or integers (bit
fields): both the driver and the emulated switch compare, diff and validate these, and
only this module knows the bytes (canonical, P4Runtime spec §8.4: no leading zero bytes).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from southbound.standard.p4rt.program import Field, Program, ProgramError, Table
from southbound.standard.pb import p4info_pb2, p4runtime_pb2

Value = str | int
Match = tuple[tuple[str, Value], ...]
#: (table, match): what identifies an entry
Key = tuple[str, Match]
#: (action alias, ((param, value), ...), weight) of a one-shot action set
Member = tuple[str, tuple[tuple[str, Value], ...], int]

LPM = p4info_pb2.MatchField.LPM
EXACT = p4info_pb2.MatchField.EXACT


class EncodingError(ValueError):
    """An entity that does not fit the program (unknown table, field, action, bad bytes)."""


@dataclass(frozen=True)
class Entry:
    table: str
    match: tuple[tuple[str, Value], ...]
    action: str = ""  # a single action ("" for a one-shot action set or none)
    params: tuple[tuple[str, Value], ...] = ()
    members: tuple[Member, ...] = ()  # a one-shot action set (action-selector tables)
    metadata: bytes = b""

    @property
    def key(self) -> Key:
        return self.table, self.match

    def field(self, name: str) -> Value | None:
        return dict(self.match).get(name)

    def param(self, name: str) -> Value | None:
        return dict(self.params).get(name)

    def same_key_and_action(self, other: Entry) -> bool:
        return (self.key, self.action, self.params, self.members, self.metadata) == (
            other.key, other.action, other.params, other.members, other.metadata)


def _bytes_of(value: Value, field: Field, where: str) -> bytes:
    if field.is_string:
        if not isinstance(value, str):
            raise EncodingError(f"{where}: expected a string")
        return value.encode("utf-8")
    if not isinstance(value, int) or value < 0 or value >= 1 << field.bitwidth:
        raise EncodingError(f"{where}: expected an integer of {field.bitwidth} bits, got {value!r}")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _value_of(data: bytes, field: Field, where: str) -> Value:
    if field.is_string:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise EncodingError(f"{where}: not a UTF-8 string") from None
    if not data:
        raise EncodingError(f"{where}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >= 1 << field.bitwidth:
        raise EncodingError(f"{where}: {value} does not fit {field.bitwidth} bits")
    return value


def _params_to_proto(program: Program, action: str, params: tuple[tuple[str, Value], ...],
                     out: p4runtime_pb2.Action) -> None:
    spec = program.action(action)
    out.action_id = spec.id
    given = dict(params)
    for p in spec.params:
        if p.name not in given:
            raise EncodingError(f"action {action}: parameter {p.name} missing")
        out.params.add(param_id=p.id, value=_bytes_of(given[p.name], p, f"{action}.{p.name}"))


def _params_from_proto(program: Program, table: Table, action: p4runtime_pb2.Action,
                       where: str) -> tuple[str, tuple[tuple[str, Value], ...]]:
    spec = program.action_by_id(action.action_id)
    if spec is None or action.action_id not in table.action_ids:
        raise EncodingError(f"{where}: action id {action.action_id} is not an action of {table.name}")
    by_id = {p.id: p for p in spec.params}
    params: dict[str, Value] = {}
    for p in action.params:
        param = by_id.get(p.param_id)
        if param is None or param.name in params:
            raise EncodingError(f"{where}: {spec.name} has no parameter id {p.param_id} (or it repeats)")
        params[param.name] = _value_of(p.value, param, f"{where}: {spec.name}.{param.name}")
    missing = [p.name for p in spec.params if p.name not in params]
    if missing:
        raise EncodingError(f"{where}: {spec.name} lacks parameter {missing[0]}")
    return spec.name, tuple(sorted(params.items()))


def to_proto(program: Program, entry: Entry) -> p4runtime_pb2.TableEntry:
    """The P4Runtime TableEntry of ``entry``."""
    table = program.table(entry.table)
    out = p4runtime_pb2.TableEntry(table_id=table.id, metadata=entry.metadata)
    given = dict(entry.match)
    for f in table.fields:
        if f.name not in given:
            continue  # a wildcard (only meaningful in a Read)
        value = given[f.name]
        where = f"{entry.table}.{f.name}"
        if f.match_type == LPM:
            net = ipaddress.IPv4Network(str(value))
            out.match.add(field_id=f.id, lpm=p4runtime_pb2.FieldMatch.LPM(
                value=_bytes_of(int(net.network_address), f, where), prefix_len=net.prefixlen))
        else:
            exact = p4runtime_pb2.FieldMatch.Exact(value=_bytes_of(value, f, where))
            out.match.add(field_id=f.id, exact=exact)
    if entry.members:
        for action, params, weight in entry.members:
            member = out.action.action_profile_action_set.action_profile_actions.add(weight=weight)
            _params_to_proto(program, action, params, member.action)
    elif entry.action:
        _params_to_proto(program, entry.action, entry.params, out.action.action)
    return out


def from_proto(program: Program, proto: p4runtime_pb2.TableEntry) -> Entry:
    """The Entry of a P4Runtime TableEntry; EncodingError names what does not fit."""
    table = program.table_by_id(proto.table_id)
    if table is None:
        raise EncodingError(f"unknown table id {proto.table_id}")
    by_id = {f.id: f for f in table.fields}
    match: dict[str, Value] = {}
    for m in proto.match:
        f = by_id.get(m.field_id)
        if f is None or f.name in match:
            raise EncodingError(f"{table.name}: unknown (or repeated) match field id {m.field_id}")
        where = f"{table.name}.{f.name}"
        kind = m.WhichOneof("field_match_type")
        if f.match_type == LPM and kind == "lpm":
            if not 0 <= m.lpm.prefix_len <= 32:
                raise EncodingError(f"{where}: prefix length {m.lpm.prefix_len} is not 0..32")
            address = _value_of(m.lpm.value, f, where)
            try:
                net = ipaddress.IPv4Network((address, m.lpm.prefix_len))
            except ValueError as exc:  # host bits set: spec §9.1.1 requires them zero
                raise EncodingError(f"{where}: {exc}") from None
            match[f.name] = str(net)
        elif f.match_type == EXACT and kind == "exact":
            match[f.name] = _value_of(m.exact.value, f, where)
        else:
            raise EncodingError(f"{where}: a {kind} match on a field matched otherwise")
    action: str = ""
    params: tuple[tuple[str, Value], ...] = ()
    members: list[Member] = []
    which = proto.action.WhichOneof("type") if proto.HasField("action") else None
    if which == "action":
        action, params = _params_from_proto(program, table, proto.action.action, table.name)
    elif which == "action_profile_action_set":
        if not table.selector_id:
            raise EncodingError(f"{table.name}: an action set on a table without an action selector")
        for m_ in proto.action.action_profile_action_set.action_profile_actions:
            name, member_params = _params_from_proto(program, table, m_.action, table.name)
            members.append((name, member_params, int(m_.weight)))
    elif which is not None:
        raise EncodingError(f"{table.name}: action type {which} is not supported")
    return Entry(table.name, tuple(sorted(match.items())), action, params, tuple(members),
                 bytes(proto.metadata))


def table_id(program: Program, name: str) -> int:
    try:
        return program.table(name).id
    except ProgramError as exc:
        raise EncodingError(str(exc)) from None


def entry(table: str, match: dict[str, Value], action: str = "", params: dict[str, Value] | None = None,
          members: tuple[Member, ...] = (), metadata: bytes = b"") -> Entry:
    """An Entry with its fields and parameters in canonical (sorted) order."""
    return Entry(table, tuple(sorted(match.items())), action, tuple(sorted((params or {}).items())),
                 members, metadata)
